// `--model PATH` end to end: a checkpoint written by the tests (a GGUF file llama.cpp also loads,
// and a Hugging Face directory of the same weights) served over HTTP, the two answering alike;
// a checkpoint that cannot be loaded stops the server at start with a message naming it.
#include <catch2/catch.hpp>

#include <fstream>

#include "actors/server.hpp"
#include "runtime/engine/model_weights.hpp"
#include "runtime/engine/qwen35_gguf.hpp"
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
