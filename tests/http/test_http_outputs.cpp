// End-to-end: outputs over HTTP equal the engine's own; seeded sampling is reproducible.
#include "tests/support/http_helpers.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using namespace std::chrono_literals;

TEST_CASE("http: greedy output over HTTP equals the engine's own", "[http]") {
  http_server s;
  const server_config& cfg = s.config();

  std::vector<token_id> prompt;
  for (const char* p = "In the beginning "; *p; ++p) prompt.push_back(static_cast<unsigned char>(*p));
  prompt.push_back(special_tokens::im_start);
  for (int i = 0; i < 24; ++i) prompt.push_back(static_cast<token_id>((i * 37 + 11) % 256));

  SECTION("/v1/completions with token ids") {
    const http_reply r =
        s.post_json("/v1/completions", {{"prompt", prompt}, {"max_tokens", 20}, {"temperature", 0}});
    REQUIRE(r.status == 200);
    const json j = r.body_json();
    check_usage_and_cache(j);

    const engine_run want = run_engine(cfg, prompt, 20);
    const assistant_output out = parse_tokens(want.tokens, false, false);
    INFO("engine: " << want.tokens.size() << " tokens, " << finish_name(want.reason));
    CHECK(j["choices"][0]["text"] == out.content);
    CHECK(j["usage"]["completion_tokens"] == want.tokens.size());
    CHECK(j["usage"]["prompt_tokens"] == prompt.size());
    CHECK(j["choices"][0]["finish_reason"] == finish_name(want.reason));
  }

  SECTION("a stop string cuts the text where it first appears, streamed or not") {
    const engine_run want = run_engine(cfg, prompt, 60);
    const std::string text = parse_tokens(want.tokens, false, false).content;
    // two printable ASCII characters from the middle of the engine's text
    std::string stop;
    for (std::size_t i = 4; i + 2 <= text.size() && stop.empty(); ++i)
      if (text[i] >= 0x21 && text[i] < 0x7f && text[i + 1] >= 0x21 && text[i + 1] < 0x7f)
        stop = text.substr(i, 2);
    INFO("engine text: " << json(text).dump() << ", stop " << json(stop).dump());
    REQUIRE_FALSE(stop.empty());
    const std::string expected = text.substr(0, text.find(stop));
    const json body = {{"prompt", prompt},
                       {"max_tokens", 60},
                       {"temperature", 0},
                       {"stop", json::array({stop, "\u00ff never"})}};
    const json j = s.post_json("/v1/completions", body).body_json();
    CHECK(j["choices"][0]["text"] == expected);
    CHECK(j["choices"][0]["finish_reason"] == "stop");
    check_usage_and_cache(j);

    json sbody = body;
    sbody["stream"] = true;
    const sse_stream st = s.stream("/v1/completions", sbody);
    REQUIRE(st.status == 200);
    REQUIRE(st.done());
    std::string joined;
    for (const json& c : st.chunks()) joined += c["choices"][0]["text"].get<std::string>();
    CHECK(joined == expected);  // the stop string never reaches the client
  }

  SECTION("/v1/chat/completions, against the engine fed the rendered chat") {
    const json messages = json::array({{{"role", "system"}, {"content", "You are terse."}},
                                       {{"role", "user"}, {"content", "Name three colours."}}});
    const http_reply r =
        s.post_json("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 20}, {"temperature", 0}});
    REQUIRE(r.status == 200);
    const json j = r.body_json();
    check_usage_and_cache(j);

    const auto rendered = tok.encode(render_chat(to_messages(messages), template_options{}), true);
    const engine_run want = run_engine(cfg, rendered, 20);
    const assistant_output out = parse_tokens(want.tokens, /*reasoning=*/true, /*tools=*/false,
                                              /*starts_in_reasoning=*/true);
    INFO("engine: " << want.tokens.size() << " tokens, " << finish_name(want.reason));
    const json& msg = j["choices"][0]["message"];
    CHECK(msg["content"] == out.content);
    CHECK(msg.value("reasoning_content", "") == out.reasoning);
    CHECK(j["usage"]["prompt_tokens"] == rendered.size());
    CHECK(j["usage"]["completion_tokens"] == want.tokens.size());
    CHECK(j["choices"][0]["finish_reason"] == finish_name(want.reason));
  }
}

// ---- 6. seeded sampling -------------------------------------------------------------------------

TEST_CASE("http: seeded sampling is reproducible", "[http]") {
  http_server s;
  const json req = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 1.0}, {"seed", 42}};
  const json a = s.post_json("/v1/completions", req).body_json();
  const json b = s.post_json("/v1/completions", req).body_json();
  check_usage_and_cache(a);
  CHECK(a["choices"][0]["text"] == b["choices"][0]["text"]);
  CHECK(a["usage"] == b["usage"]);
  CHECK(a["choices"][0]["finish_reason"] == b["choices"][0]["finish_reason"]);

  // and it is the engine's own sampling with that seed
  sampling_params sp;
  sp.temperature = 1.0f;
  sp.seed = 42;
  const engine_run want = run_engine(s.config(), tok.encode("Once upon a time", true), 24, sp);
  CHECK(a["choices"][0]["text"] == parse_tokens(want.tokens, false, false).content);
  CHECK(a["usage"]["completion_tokens"] == want.tokens.size());

  // the chat route too, streamed and not
  json chat = user_chat("Pick a number.", 24, 1.0);
  chat["seed"] = 42;
  const json c1 = s.post_json("/v1/chat/completions", chat).body_json();
  const json c2 = s.post_json("/v1/chat/completions", chat).body_json();
  CHECK(c1["choices"][0]["message"] == c2["choices"][0]["message"]);
  chat["stream"] = true;
  const chat_stream_summary st = check_chat_stream(s.stream("/v1/chat/completions", chat), false);
  CHECK(st.content == c1["choices"][0]["message"]["content"].get<std::string>());
  CHECK(st.reasoning == c1["choices"][0]["message"].value("reasoning_content", ""));
}

// ---- 7. a client that goes away ------------------------------------------------------------------
