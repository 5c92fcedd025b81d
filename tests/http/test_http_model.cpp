// `--model PATH` end to end: a checkpoint written by the tests (a GGUF file llama.cpp also loads,
// and a Hugging Face directory of the same weights) served over HTTP, the two answering alike;
// a checkpoint that cannot be loaded stops the server at start with a message naming it; on a
// quantized GGUF kept as stored, every tier's restore answers as a server without a cache.
#include <catch2/catch.hpp>

#include <fstream>

#include "actors/server.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_gguf.hpp"
#include "tests/support/chat_turns.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/http_fixture.hpp"
#include "tests/support/http_helpers.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using nlohmann::json;

namespace {

// The same greedy completion to both servers: the answers must be the same.
json answer(http_server& s) {
  const http_reply r = s.post_json(
      "/v1/completions", {{"prompt", "Which layout is this?"}, {"max_tokens", 12}, {"temperature", 0}});
  REQUIRE(r.status == 200);
  const json j = r.body_json();
  return {{"text", j["choices"][0]["text"]}, {"completion_tokens", j["usage"]["completion_tokens"]}};
}

}  // namespace

TEST_CASE("http: --model serves a GGUF checkpoint and a Hugging Face directory of the same weights",
          "[http][model]") {
  temp_dir d("anchorage-http-model");
  const model_config c = preset_config("qwen35-tiny");
  const tensor_map w = random_weights(c, 3);
  save_qwen35_gguf(d.file("tiny.gguf"), c, w, nullptr, "", gguf_dtype::f32);
  checkpoint_options o;
  o.dtype = safetensors_dtype::f32;
  write_checkpoint(d.file("hf"), c, w, o);

  // A checkpoint's config takes the loaders' sub-chunk (64), so the grid must be a multiple of it.
  http_server from_gguf({"--model", d.file("tiny.gguf"), "--prefix-chunk", "64"});
  http_server from_dir({"--model", d.file("hf"), "--prefix-chunk", "64"});
  const json expect = answer(from_gguf);
  CHECK(expect["completion_tokens"] == 12);
  CHECK(answer(from_dir) == expect);
  const json stats = from_dir.get("/v1/cache/stats").body_json();
  CHECK(stats["requests"]["requests"] == 1);
}

TEST_CASE("http: a --model that cannot be loaded stops the server at start, naming it", "[http][model]") {
  temp_dir d("anchorage-http-model");
  const std::string bad = d.file("broken.gguf");
  std::ofstream(bad) << "GGUF\3\0\0\0truncated";
  server_config cfg = parse_server_args({"--model", bad, "--port", "0"});
  try {
    server s(cfg);
    FAIL("a broken checkpoint was served");
  } catch (const model_load_error& e) {
    CHECK_THAT(e.what(), Catch::Contains(bad));
  }
  cfg = parse_server_args({"--model", d.file("nothing-here"), "--port", "0"});
  CHECK_THROWS_AS(server(cfg), model_load_error);
}

namespace {

// `first`, then `extra`: a server's arguments.
std::vector<std::string> args_then(std::vector<std::string> first, const std::vector<std::string>& extra) {
  first.insert(first.end(), extra.begin(), extra.end());
  return first;
}

// The arguments of a server on the GGUF at `path` on a grid of 64, then `extra`.
std::vector<std::string> model_args(const std::string& path, const std::vector<std::string>& extra) {
  return args_then({"--model", path, "--prefix-chunk", "64"}, extra);
}

json tier_conversation(const std::string& who) {
  return json::array({{{"role", "system"}, {"content", filler(who + " " + system_prompt, 900)}},
                      {{"role", "user"}, {"content", "List the files in src."}}});
}

}  // namespace

TEST_CASE("http: on a Q8_0 GGUF kept as stored, every tier's restore answers as a server without a cache",
          "[http][model][stored]") {
  // Weights kept as stored change the arithmetic, not the caches' contract: a turn restored from
  // the end anchor, the state store, the session spill after a restart through the drain and the
  // disk tier after a restart each gives the tokens a --no-cache server on the same file gives.
  // The dense layout and the MoE one (qwen35moe).
  const std::string preset = GENERATE(as<std::string>{}, "qwen35-tiny", "qwen35moe-tiny");
  INFO(preset);
  temp_dir d("anchorage-http-stored");
  const model_config c = preset_config(preset);
  const std::string path = d.file("tiny-q8.gguf");
  save_qwen35_gguf(path, c, random_weights(c, 5), nullptr, "", gguf_dtype::q8_0);
  auto with = [&](std::vector<std::string> extra) { return model_args(path, std::move(extra)); };
  http_server ref(with({"--no-cache"}));
  auto check_cold_answer = [&](const turn_reply& t, const json& body, const char* source) {
    INFO("restored from " << source << ": " << t.x_cache.dump());
    CHECK(t.x_cache["source"] == source);
    CHECK(t.x_cache["resumed_at"].get<long>() > 0);
    const turn_reply r = post_turn(ref, body);
    CHECK(r.x_cache["source"] == "cold");
    CHECK(t.message == r.message);
    CHECK(t.usage["completion_tokens"] == r.usage["completion_tokens"]);
  };

  json a = tier_conversation("A");
  json b = tier_conversation("B");
  {
    // The end anchor, then the state store: B replaces A on the one slot (no park), A's next
    // turn comes back from the snapshot the store took of it.
    http_server s(
        with({"--cache-dir", d.file("cache"), "--disk-min-tokens", "256", "--resident-park-gb", "0"}));
    const turn_reply a1 = post_turn(s, greedy_turn(a, 10));
    CHECK(a1.x_cache["source"] == "cold");
    echo_turn(a, a1, "Now read main.cpp.");
    check_cold_answer(post_turn(s, greedy_turn(a, 10)), greedy_turn(a, 10), "end");
    const turn_reply b1 = post_turn(s, greedy_turn(b, 10));
    echo_turn(b, b1, "Run the tests.");
    const turn_reply a3 = post_turn(s, greedy_turn(a, 10));
    check_cold_answer(a3, greedy_turn(a, 10), "store");
    echo_turn(a, a3, "And the tests?");
    REQUIRE(s.quiesce());
    REQUIRE(s.srv().drain(std::chrono::seconds(30)));
  }
  {
    // After a restart through the drain: A's conversation from the spill.
    http_server s(with({"--cache-dir", d.file("cache"), "--disk-min-tokens", "256"}));
    REQUIRE(s.quiesce());
    check_cold_answer(post_turn(s, greedy_turn(a, 10)), greedy_turn(a, 10), "spill");
  }
  {
    // Without the spill: a new session with B's head comes back from the disk tier.
    http_server s(
        with({"--cache-dir", d.file("cache"), "--disk-min-tokens", "256", "--session-spill", "off"}));
    REQUIRE(s.quiesce());
    json c2 = tier_conversation("B");
    c2[1]["content"] = "Read the README.";
    check_cold_answer(post_turn(s, greedy_turn(c2, 10)), greedy_turn(c2, 10), "disk");
  }
}

TEST_CASE(
    "http: with --activations q8 a restore from the disk tier answers as a q8 server without a "
    "cache, and a cache written under q8 is foreign to f32",
    "[http][model][stored][int8]") {
  // Rounding the activations to 8 bits changes every product by a Q8_0 matrix, not the caches'
  // contract: a restore at a line is a cold prefill's bits. The setting is in the fingerprint, so
  // a server under the other setting sweeps what this one wrote instead of restoring it.
  temp_dir d("anchorage-http-q8");
  const model_config c = preset_config("qwen35-tiny");
  const std::string path = d.file("tiny-q8.gguf");
  save_qwen35_gguf(path, c, random_weights(c, 5), nullptr, "", gguf_dtype::q8_0);
  auto with = [&](std::vector<std::string> extra) { return model_args(path, std::move(extra)); };
  auto with_disk = [&](std::vector<std::string> extra) {
    return with(
        args_then({"--cache-dir", d.file("cache"), "--disk-min-tokens", "256", "--session-spill", "off"},
                  std::move(extra)));
  };
  http_server ref(with({"--no-cache", "--activations", "q8"}));
  http_server ref_f32(with({"--no-cache"}));
  json a = tier_conversation("A");
  {
    http_server s(with_disk({"--activations", "q8"}));
    const turn_reply a1 = post_turn(s, greedy_turn(a, 10));
    CHECK(a1.x_cache["source"] == "cold");
    const turn_reply r1 = post_turn(ref, greedy_turn(a, 10));
    CHECK(a1.message == r1.message);
    REQUIRE(s.quiesce());
  }
  json b = tier_conversation("A");
  b[1]["content"] = "Read the README.";
  std::string q8_folder;
  {
    http_server s(with_disk({"--activations", "q8"}));
    REQUIRE(s.quiesce());
    q8_folder = s.get("/v1/cache/stats").body_json()["tiers"]["disk"]["folder"].get<std::string>();
    const turn_reply t = post_turn(s, greedy_turn(b, 10));
    INFO("restored: " << t.x_cache.dump());
    CHECK(t.x_cache["source"] == "disk");
    CHECK(t.x_cache["resumed_at"].get<long>() >= 256);
    const turn_reply r = post_turn(ref, greedy_turn(b, 10));
    CHECK(r.x_cache["source"] == "cold");
    CHECK(t.message == r.message);
    CHECK(t.usage["completion_tokens"] == r.usage["completion_tokens"]);
  }
  {
    http_server s(with_disk({}));  // f32: q8's files are another engine's, in another folder
    REQUIRE(s.quiesce());
    const json disk_stats = s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
    INFO(disk_stats.dump());
    CHECK(disk_stats["folder"].get<std::string>() != q8_folder);
    CHECK(disk_stats["sweep"]["indexed"] == 0);
    const turn_reply t = post_turn(s, greedy_turn(b, 10));
    CHECK(t.x_cache["source"] == "cold");
    CHECK(t.message == post_turn(ref_f32, greedy_turn(b, 10)).message);
  }
}
