// Speculative decoding through the server (docs/SPECULATIVE.md): --speculative changes how many
// tokens a forward reads, never which tokens come out; the caches around the verify rounds'
// rows; the stats and metrics; the flags.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "tests/support/chat_turns.hpp"
#include "tests/support/http_helpers.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// Text that repeats: a lookup drafter finds what followed, and a greedy random model soon loops.
std::string repeating(int copies) {
  std::string s;
  for (int i = 0; i < copies; ++i) s += "for (int i = 0; i < n; ++i) sum += a[i] * b[i];\n";
  return s;
}

json greedy_completion(const std::string& prompt, long max_tokens) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

std::string completion_text(const http_server& s, const json& body) {
  const http_reply r = s.post_json("/v1/completions", body);
  INFO(r.body.substr(0, 300));
  REQUIRE(r.status == 200);
  return r.body_json()["choices"][0]["text"];
}

json speculative_json(const http_server& s) {
  return s.get("/v1/cache/stats").body_json()["tiers"]["speculative"];
}

}  // namespace

TEST_CASE("http: greedy completions are the same with speculation off, lookup and mtp",
          "[http][speculative]") {
  const std::vector<std::string> prompts = {
      repeating(6), "The quick brown fox jumps over the lazy dog. " + repeating(2), "zq"};
  for (const std::string preset : {"tiny", "tiny-mtp"}) {
    DYNAMIC_SECTION(preset) {
      http_server off({"--preset", preset});
      std::vector<std::string> modes = {"lookup"};
      if (preset == "tiny-mtp") modes = {"lookup", "mtp", "mtp+lookup"};
      for (const auto& mode : modes) {
        http_server on({"--preset", preset, "--speculative", mode, "--draft-max", "6"});
        for (const auto& p : prompts) {
          INFO(mode << ": " << p.substr(0, 30));
          CHECK(completion_text(on, greedy_completion(p, 48)) ==
                completion_text(off, greedy_completion(p, 48)));
        }
        const json st = speculative_json(on);
        CHECK(st["mode"] == mode);
        CHECK(st["draft_max"] == 6);
        CHECK(st["rounds"].get<long>() > 0);
        long drafted = 0;
        for (const auto& [name, d] : st["drafters"].items()) {
          CHECK(d["accepted"].get<long>() <= d["drafted"].get<long>());
          drafted += d["drafted"].get<long>();
        }
        CHECK(drafted > 0);
      }
    }
  }
}

TEST_CASE("http: two slots in verify rounds at once answer what each answers alone",
          "[http][speculative][slots]") {
  http_server alone({"--preset", "tiny-mtp", "--speculative", "off"});
  http_server both({"--preset", "tiny-mtp", "--speculative", "mtp+lookup", "--parallel", "2"});
  const json a = greedy_completion(repeating(5), 64);
  const json b = greedy_completion("int main() { return 0; }\n" + repeating(4), 64);
  const std::string want_a = completion_text(alone, a), want_b = completion_text(alone, b);
  for (int round = 0; round < 2; ++round) {
    http_reply rb;
    std::thread other([&] { rb = both.post_json("/v1/completions", b); });
    const std::string got_a = completion_text(both, a);
    other.join();
    REQUIRE(rb.status == 200);
    CHECK(got_a == want_a);
    CHECK(rb.body_json()["choices"][0]["text"] == want_b);
  }
  CHECK(speculative_json(both)["rounds"].get<long>() > 0);
}

TEST_CASE("http: after a speculative answer the next turn resumes at the end anchor with the same tokens",
          "[http][speculative][cache]") {
  http_server plain({"--speculative", "off"});
  http_server spec({"--speculative", "lookup", "--draft-max", "8"});
  json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 1500)}},
                               {{"role", "user"}, {"content", repeating(3)}}});
  auto body = [&](std::uint64_t seed) {
    json b = chat_body(messages, seed, 40);
    b["temperature"] = 0;
    return b;
  };
  const turn_reply p1 = post_turn(plain, body(1));
  const turn_reply s1 = post_turn(spec, body(1));
  CHECK(s1.message == p1.message);
  const json resident = spec.get("/v1/cache/stats").body_json()["tiers"]["resident"];
  const json plain_resident = plain.get("/v1/cache/stats").body_json()["tiers"]["resident"];
  // The same anchors as the plain server's: grid anchors from the prefill only, none from a
  // round's rows.
  CHECK(resident["anchors"] == plain_resident["anchors"]);
  CHECK(resident["entries"] == plain_resident["entries"]);
  CHECK(resident["end_anchor"] == plain_resident["end_anchor"]);
  // The end anchor sits at the last forwarded row (the prompt and the answer but its last token);
  // no grid anchor is above the prompt (verify rounds' rows are decode rows, above the taint).
  const long prompt_tokens = s1.usage["prompt_tokens"], output_tokens = s1.usage["completion_tokens"];
  REQUIRE(resident["end_anchor"].is_number());
  CHECK(resident["end_anchor"].get<long>() == prompt_tokens + output_tokens - 1);
  messages.push_back({{"role", "assistant"}, {"content", s1.message["content"]}});
  messages.push_back({{"role", "user"}, {"content", "Again: " + repeating(2)}});
  const turn_reply p2 = post_turn(plain, body(2));
  const turn_reply s2 = post_turn(spec, body(2));
  CHECK(s2.x_cache["source"] == p2.x_cache["source"]);
  CHECK(s2.x_cache["source"] == "end");
  CHECK(s2.message == p2.message);
  CHECK(speculative_json(spec)["rounds"].get<long>() > 0);
}

TEST_CASE("http: the speculative counters reach /metrics", "[http][speculative][metrics]") {
  http_server s({"--speculative", "lookup"});
  completion_text(s, greedy_completion(repeating(6), 40));
  const std::string m = s.get("/metrics").body;
  CHECK(m.find("anchorage_speculative_rounds_total ") != std::string::npos);
  CHECK(m.find("anchorage_draft_tokens_total{drafter=\"lookup\",outcome=\"accepted\"}") != std::string::npos);
}

TEST_CASE("the flags --speculative and --draft-max are parsed and refused when wrong",
          "[config][speculative]") {
  const server_config c = parse_server_args({"--speculative", "mtp+lookup", "--draft-max", "12"});
  CHECK(c.speculative.mode == speculative_mode::mtp_lookup);
  CHECK(c.speculative.draft_max == 12);
  CHECK(parse_server_args({}).speculative.mode == speculative_mode::off);
  CHECK_THROWS_WITH(parse_server_args({"--speculative", "eagle"}),
                    Catch::Contains("off, mtp, lookup or mtp+lookup"));
  CHECK_THROWS(parse_server_args({"--draft-max", "0"}));
  CHECK_THROWS(parse_server_args({"--draft-max", "65"}));
  // A draft layer is needed for mtp: the server refuses to start without one.
  CHECK_THROWS_WITH(http_server({"--preset", "tiny", "--speculative", "mtp"}),
                    Catch::Contains("no draft layer"));
}

TEST_CASE("http: an identical request's answer is drafted from the suffix store and accepted",
          "[http][speculative][suffix]") {
  temp_dir dir("anchorage-http-spec-store");
  http_server s(
      {"--cache-dir", dir.str(), "--suffix-store", "on", "--speculative", "lookup", "--draft-max", "8"});
  http_server plain({"--speculative", "off"});
  const json body = greedy_completion("Summarise the change to parse_args in one line: ", 64);
  const std::string first = completion_text(s, body);
  // The writer adds the first request's ids and hands the board the delta; then the second
  // request's lookups can find its answer there.
  REQUIRE(s.quiesce());
  REQUIRE(s.get("/v1/cache/stats").body_json()["tiers"]["suffix"].value("ids", 0L) > 0);
  const std::string second = completion_text(s, body);
  CHECK(second == first);
  CHECK(second == completion_text(plain, body));
  const json st = speculative_json(s);
  INFO(st.dump());
  CHECK(st["drafters"]["store"]["accepted"].get<long>() > 0);
  CHECK(s.get("/v1/cache/stats").body_json()["tiers"]["suffix"]["hits"].get<long>() > 0);
}
