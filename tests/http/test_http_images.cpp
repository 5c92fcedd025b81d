// Images end to end (docs/IMAGES.md): a qwen35 model with a random vision tower (--vision-preset
// tiny) served over HTTP. Every restore after an image answers as a server without a cache; two
// images one pixel apart never share a state, the same pixels in another file format do; a
// conversation that resends its image encodes it once and resumes at its end anchor; a bad image
// is a 400 naming the part.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/chat_turns.hpp"
#include "tests/support/http_fixture.hpp"
#include "tests/support/http_helpers.hpp"
#include "tests/support/image_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using nlohmann::json;

namespace {

std::string base64(const test::bytes& b) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < b.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t{b[i]} << 16) | (std::uint32_t{b[i + 1]} << 8) | b[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += abc[(v >> s) & 63];
  }
  if (i < b.size()) {
    std::uint32_t v = std::uint32_t{b[i]} << 16;
    if (i + 1 < b.size()) v |= std::uint32_t{b[i + 1]} << 8;
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += i + 1 < b.size() ? abc[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// 48 x 40 RGB pixels (the processor makes 8 x 8 rows of them: min_pixels 65,536), with pixel
// (x, y) changed by one level when `nudge`.
test::bytes pixels(bool nudge = false, int x = 17, int y = 9) {
  test::bytes p = test::pattern_pixels(48, 40, 3);
  if (nudge) p[(static_cast<std::size_t>(y) * 48 + static_cast<std::size_t>(x)) * 3] ^= 1;
  return p;
}

std::string png_uri(const test::bytes& rgb) {
  test::png_spec spec(48, 40);
  spec.samples = rgb;
  return "data:image/png;base64," + base64(test::encode_png(spec));
}

std::string webp_uri(const test::bytes& rgb) {
  return "data:image/webp;base64," + base64(test::encode_webp(rgb, 48, 40, 3, test::webp_kind::lossless));
}

json image_message(const std::string& text, const std::string& uri) {
  return {{"role", "user"},
          {"content", json::array({{{"type", "text"}, {"text", text}},
                                   {{"type", "image_url"}, {"image_url", {{"url", uri}}}}})}};
}

json conversation(const std::string& who, const std::string& uri, std::size_t chars = 700) {
  return json::array({{{"role", "system"}, {"content", filler(who + " " + system_prompt, chars)}},
                      image_message("What does this screenshot show?", uri)});
}

std::vector<std::string> vision_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--preset", "qwen35-tiny",     "--vision-preset",
                                "tiny",     "--chat-template", "qwen3.5"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

json vision_of(const http_server& s) { return s.get("/v1/cache/stats").body_json()["tiers"]["vision"]; }

}  // namespace

TEST_CASE("http images: a conversation that resends its image encodes it once and resumes at its end anchor",
          "[http][images]") {
  http_server s(vision_args());
  // The end anchor is a session resume (docs/CACHES.md: the rows above the prompt's last line
  // differ from a cold prefill's in the last bits); with it off every follow-up resumes from an
  // exact anchor (a line, or right after an image) and answers as a server without a cache.
  http_server exact(vision_args({"--end-anchor=off"}));
  http_server ref(vision_args({"--no-cache"}));
  const std::string uri = png_uri(pixels());
  json messages = conversation("A", uri);
  long previous = 0;
  for (int turn = 0; turn < 5; ++turn) {
    INFO("turn " << turn);
    const json body = greedy_turn(messages, 8);
    const turn_reply t = post_turn(s, body);
    const turn_reply e = post_turn(exact, body);
    const turn_reply r = post_turn(ref, body);
    INFO(t.x_cache.dump() << " / " << e.x_cache.dump());
    CHECK(e.message == r.message);
    if (turn == 0) {
      CHECK(t.x_cache["source"] == "cold");
      CHECK(t.message == r.message);
    } else {
      // at the end of the previous turn: its prompt and its answer (the pending token aside)
      CHECK(t.x_cache["source"] == "end");
      CHECK(t.x_cache["resumed_at"].get<long>() >= previous);
      CHECK(e.x_cache["source"] == "resident");
      CHECK(e.x_cache["resumed_at"].get<long>() > 0);
    }
    previous = t.usage["prompt_tokens"];
    messages.push_back({{"role", "assistant"}, {"content", t.message.value("content", "")}});
    // the client sends the image again with every new question
    messages.push_back(image_message("And now, turn " + std::to_string(turn) + "?", uri));
  }
  const json v = vision_of(s);
  CHECK(v["enabled"] == true);
  // Every copy of the image in every turn is the same pixels: one digest, encoded once.
  CHECK(v["encodes"] == 1);
  CHECK(v["hits"].get<long>() >= 4);
}

TEST_CASE("http images: the vision cache takes a live budget at once, and a clear of all empties it",
          "[http][images][settings]") {
  const httplib::Headers token = {{"X-Admin-Token", "secret"}};
  http_server s(vision_args({"--admin-token", "secret"}));
  const std::string uri_a = png_uri(pixels()), uri_b = png_uri(pixels(true));
  // Each request its own conversation (another head), so its prefill forwards the image's rows
  // and asks the tower for them: no tier holds any of it.
  auto ask = [&](const std::string& who, const std::string& uri) {
    post_turn(s, greedy_turn(conversation(who, uri), 2));
    return vision_of(s);
  };
  ask("A", uri_a);
  json v = ask("B", uri_b);
  REQUIRE(v["entries"] == 2);
  const std::uint64_t one = v["bytes"].get<std::uint64_t>() / 2;  // the two images' rows are as large
  REQUIRE(one > 0);
  CHECK(v["limit_bytes"] == 512ULL << 20);

  // A budget for one image: the least recently used (A's) goes at once.
  const double one_and_a_half = static_cast<double>(one + one / 2) / 1048576.0;
  REQUIRE(s.post_json("/v1/cache/settings", {{"image_cache_mb", one_and_a_half}}, token).status == 200);
  v = vision_of(s);
  CHECK(v["entries"] == 1);
  CHECK(v["bytes"] == one);
  CHECK(v["limit_bytes"].get<std::uint64_t>() < 2 * one);
  const long hits = v["hits"];
  v = ask("C", uri_b);  // B's rows are still there
  CHECK(v["hits"] == hits + 1);
  CHECK(v["encodes"] == 2);
  v = ask("D", uri_a);  // A's are encoded again, and B's go for them
  CHECK(v["encodes"] == 3);
  CHECK(v["entries"] == 1);

  // 0: nothing is kept from now on; every image is encoded for its request.
  REQUIRE(s.post_json("/v1/cache/settings", {{"image_cache_mb", 0}}, token).status == 200);
  v = vision_of(s);
  CHECK(v["entries"] == 0);
  CHECK(v["bytes"] == 0);
  v = ask("E", uri_a);
  CHECK(v["encodes"] == 4);
  CHECK(v["entries"] == 0);

  // Back to 512: kept again, until a clear of every cache.
  REQUIRE(s.post_json("/v1/cache/settings", {{"image_cache_mb", 512}}, token).status == 200);
  CHECK(ask("F", uri_a)["entries"] == 1);
  REQUIRE(s.post("/v1/cache/clear?tier=all", "", token).status == 200);
  v = vision_of(s);
  CHECK(v["entries"] == 0);
  CHECK(v["bytes"] == 0);
}

TEST_CASE("http images: one pixel apart never shares a state, the same pixels as WebP do", "[http][images]") {
  http_server s(vision_args());
  http_server ref(vision_args({"--no-cache"}));
  const json a = conversation("A", png_uri(pixels()));
  const turn_reply first = post_turn(s, greedy_turn(a, 8));
  CHECK(first.x_cache["source"] == "cold");

  // One pixel changed: the prompt parts inside the image, and no restore reaches into it.
  const json b = conversation("A", png_uri(pixels(true)));
  const turn_reply nudged = post_turn(s, greedy_turn(b, 8));
  const long prompt = nudged.usage["prompt_tokens"];
  INFO(nudged.x_cache.dump());
  // the image's 64 rows and what follows them (<|vision_end|>, the end of the turn and the
  // generation prompt) were forwarded again
  CHECK(nudged.x_cache["resumed_at"].get<long>() <= prompt - 64);
  CHECK(nudged.message == post_turn(ref, greedy_turn(b, 8)).message);
  CHECK(vision_of(s)["encodes"] == 2);

  // The first image's pixels as a lossless WebP: the same digest, the same rows; A's state
  // comes back (from the park or the end anchor) past the image.
  const json c = conversation("A", webp_uri(pixels()));
  const turn_reply same = post_turn(s, greedy_turn(c, 8));
  INFO(same.x_cache.dump());
  CHECK(same.x_cache["resumed_at"].get<long>() > prompt - 30);
  CHECK(same.message == first.message);
  CHECK(vision_of(s)["encodes"] == 2);
}

TEST_CASE("http images: a prompt that parts right after an image resumes after it", "[http][images]") {
  http_server s(vision_args());
  http_server ref(vision_args({"--no-cache"}));
  const std::string uri = png_uri(pixels());
  auto asking = [&](const std::string& question) {
    return json::array({{{"role", "system"}, {"content", filler("A " + std::string(system_prompt), 700)}},
                        {{"role", "user"},
                         {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", uri}}}},
                                                  {{"type", "text"}, {"text", question}}})}}});
  };
  const turn_reply first = post_turn(s, greedy_turn(asking("What is this?"), 4));
  CHECK(first.x_cache["source"] == "cold");
  const std::string second = "Which colours does it use?";
  const json body = greedy_turn(asking(second), 4);
  const turn_reply t = post_turn(s, body);
  const long after_image = static_cast<long>(
      count_tokens("<|vision_end|>" + second + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  INFO(t.x_cache.dump());
  CHECK(t.x_cache["source"] == "resident");
  CHECK(t.x_cache["resumed_at"].get<long>() == t.usage["prompt_tokens"].get<long>() - after_image);
  CHECK(t.message == post_turn(ref, body).message);
}

TEST_CASE("http images: every tier's restore after an image answers as a server without a cache",
          "[http][images]") {
  temp_dir d("anchorage-http-images");
  // The end anchor off: its resume is a session resume, not a cold prefill's bits (above).
  auto with = [&](std::vector<std::string> extra) {
    extra.push_back("--end-anchor=off");
    return vision_args(std::move(extra));
  };
  http_server ref(with({"--no-cache"}));
  auto check_cold_answer = [&](const turn_reply& t, const json& body, const char* source) {
    INFO("restored from " << source << ": " << t.x_cache.dump());
    CHECK(t.x_cache["source"] == source);
    CHECK(t.x_cache["resumed_at"].get<long>() > 0);
    const turn_reply r = post_turn(ref, body);
    CHECK(r.x_cache["source"] == "cold");
    CHECK(t.message == r.message);
  };
  // 710 characters of system prompt: the state store's snapshot of A's first prompt (its last
  // line) then lies below the generation prompt its next turns render otherwise.
  json a = conversation("A", png_uri(pixels()), 710);
  json b = conversation("B", png_uri(pixels(true, 3, 3)), 710);
  {
    // The end anchor, then the state store: B replaces A on the one slot (no park), A's next
    // turn comes back from the snapshot the store took of it.
    http_server s(
        with({"--cache-dir", d.file("cache"), "--disk-min-tokens", "256", "--resident-park-gb", "0"}));
    const turn_reply a1 = post_turn(s, greedy_turn(a, 8));
    CHECK(a1.x_cache["source"] == "cold");
    echo_turn(a, a1, "Now read main.cpp.");
    check_cold_answer(post_turn(s, greedy_turn(a, 8)), greedy_turn(a, 8), "resident");
    const turn_reply b1 = post_turn(s, greedy_turn(b, 8));
    echo_turn(b, b1, "Run the tests.");
    const turn_reply a3 = post_turn(s, greedy_turn(a, 8));
    check_cold_answer(a3, greedy_turn(a, 8), "store");
    echo_turn(a, a3, "And the tests?");
    REQUIRE(s.quiesce());
    REQUIRE(s.srv().drain(std::chrono::seconds(30)));
  }
  {
    // After a restart through the drain: A's conversation from the spill.
    http_server s(with({"--cache-dir", d.file("cache"), "--disk-min-tokens", "256"}));
    REQUIRE(s.quiesce());
    check_cold_answer(post_turn(s, greedy_turn(a, 8)), greedy_turn(a, 8), "spill");
  }
  {
    // Without the spill: a new session with B's head (its image included) from the disk tier.
    http_server s(
        with({"--cache-dir", d.file("cache"), "--disk-min-tokens", "256", "--session-spill", "off"}));
    REQUIRE(s.quiesce());
    json c2 = conversation("B", png_uri(pixels(true, 3, 3)), 710);
    c2.push_back({{"role", "assistant"}, {"content", "It shows a gradient."}});
    c2.push_back({{"role", "user"}, {"content", "Read the README."}});
    check_cold_answer(post_turn(s, greedy_turn(c2, 8)), greedy_turn(c2, 8), "disk");
  }
  // The server without a cache encoded each of its images for its request and kept none.
  const json v = vision_of(ref);
  CHECK(v["encodes"].get<long>() >= 4);
  CHECK(v["hits"].get<long>() == 0);
  CHECK(v["entries"].get<long>() == 0);
  CHECK(v["limit_bytes"].get<long>() == 0);
}

TEST_CASE("http images: a bad image is a 400 naming the part, a model without a tower keeps placeholders",
          "[http][images]") {
  http_server s(vision_args());
  json messages = conversation("A", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA");
  const http_reply r = s.post_json("/v1/chat/completions", greedy_turn(messages, 4));
  CHECK(r.status == 400);
  const json e = r.body_json()["error"];
  CHECK(e["param"] == "messages[1].content[1].image_url.url");
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("PNG"));
  const http_reply remote =
      s.post_json("/v1/chat/completions", greedy_turn(conversation("A", "https://example.com/cat.png"), 4));
  CHECK(remote.status == 400);

  // Without a vision tower the template's placeholder is all the model reads: two images one
  // pixel apart give one prompt.
  http_server text({"--preset", "qwen35-tiny", "--chat-template", "qwen3.5"});
  const turn_reply t1 = post_turn(text, greedy_turn(conversation("A", png_uri(pixels())), 4));
  const turn_reply t2 = post_turn(text, greedy_turn(conversation("A", png_uri(pixels(true))), 4));
  CHECK(t1.usage["prompt_tokens"] == t2.usage["prompt_tokens"]);
  CHECK(vision_of(text)["enabled"] == false);
}
