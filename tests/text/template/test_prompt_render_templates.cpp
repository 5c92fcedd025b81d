// render_request with each chat renderer the server can choose (builtin, qwen3.5, qwen3): the
// prompt is the tokenized text of that template (checked against jinja2 rendering the real
// templates in tests/support/templates/ where python3 has jinja2), the reasoning flags follow each
// template's generation prompt, user_start points at the last "<|im_start|>user", the client's key
// order reaches `tojson`, and content parts render as each template renders them.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/api/openai_request.hpp"
#include "runtime/text/template/chat_template.hpp"
#include "runtime/text/template/prompt_render.hpp"
#include "runtime/text/template/qwen35_template.hpp"
#include "runtime/text/template/template_conversation.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_images.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using anchorage::testing::temp_dir;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

const fs::path source_dir = ANCHORAGE_SOURCE_DIR;

const chat_renderer all_renderers[] = {chat_renderer::builtin, chat_renderer::qwen35, chat_renderer::qwen3};

completion_request parse_chat(const std::string& body) {
  auto r = parse_request(body, request_kind::chat);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message);
  return std::get<completion_request>(r);
}

std::variant<board_job, api_error> render(const completion_request& r, chat_renderer renderer,
                                          const tokenizer& tok) {
  render_limits lim;
  lim.ctx_size = 1 << 20;
  lim.reasoning_budget = 32;
  lim.renderer = renderer;
  return render_request(r, lim, tok, 1);
}

board_job rendered(const completion_request& r, chat_renderer renderer, const tokenizer& tok) {
  auto out = render(r, renderer, tok);
  if (const auto* e = std::get_if<api_error>(&out)) FAIL("refused: " << e->message);
  return std::get<board_job>(out);
}

std::vector<token_id> ids_of(const board_job& j) { return {j.prompt.begin(), j.prompt.end()}; }

std::string text_of(const board_job& j) { return tokenizer().decode(ids_of(j)); }

const char* template_dir(chat_renderer r) { return r == chat_renderer::qwen35 ? "qwen3.5" : "qwen3"; }

bool have_jinja2() { return std::system("python3 -c 'import jinja2' >/dev/null 2>&1") == 0; }

// jinja2's rendering (tests/support/render_jinja.py) of one request body's messages and tools
// with the real template of `r`, the generation prompt added: {"text": ...} or {"error": ...}.
ojson jinja_render(chat_renderer r, const ojson& body, bool enable_thinking) {
  temp_dir d("anchorage-render-jinja");
  fs::create_directories(d.path / "corpus");
  ojson c = {{"messages", body["messages"]},
             {"options", {{"add_generation_prompt", true}, {"enable_thinking", enable_thinking}}}};
  if (body.contains("tools")) c["tools"] = body["tools"];
  std::ofstream(d.path / "corpus" / "case.json") << c.dump();
  const std::string command =
      "python3 '" + (source_dir / "tests/support/render_jinja.py").string() + "' '" +
      (source_dir / "tests/support/templates" / template_dir(r) / "chat_template.jinja").string() + "' '" +
      (d.path / "corpus").string() + "' '" + d.file("out.json") + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(d.file("out.json"));
  return ojson::parse(in)["case"];
}

// A body whose keys are in no sorted order anywhere (tools, their schemas, tool-call arguments).
const std::string agent_body = R"({
  "tools": [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object",
     "required": ["path", "content"], "properties": {"path": {"type": "string", "description": "where"},
     "content": {"type": "string"}}}, "description": "Writes a file"}}],
  "model": "m",
  "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "write it"},
    {"role": "assistant", "content": "", "reasoning_content": "A file, then.",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "write_file",
       "arguments": {"path": "a.txt", "content": "x", "mode": {"z": 1, "a": [2, 1]}}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    {"role": "assistant", "content": "Done."},
    {"role": "user", "content": "thanks"}
  ]})";

}  // namespace

TEST_CASE("render_request: each renderer's prompt is its template's text, tokenized", "[render][template]") {
  const tokenizer bpe = tokenizer::from_json_file(anchorage::testing::bpe_fixture("tiny_qwen3.json"));
  for (bool thinking : {true, false}) {
    ojson body = ojson::parse(agent_body);
    body["chat_template_kwargs"] = {{"enable_thinking", thinking}};
    const completion_request r = parse_chat(body.dump());
    for (chat_renderer renderer : all_renderers) {
      INFO("renderer " << chat_renderer_name(renderer) << ", thinking " << thinking);
      const std::string text = render_prompt_text(renderer, r.messages, r.tools, thinking);
      for (const tokenizer* tok : {&bpe, static_cast<const tokenizer*>(nullptr)}) {
        const tokenizer byte;
        const tokenizer& t = tok ? *tok : byte;
        const board_job j = rendered(r, renderer, t);
        CHECK(ids_of(j) == t.encode(text, true));
        // user_start: the tokens before the last "<|im_start|>user" of the text.
        const std::size_t at = text.rfind("<|im_start|>user");
        REQUIRE(at != std::string::npos);
        CHECK(j.client()->user_start == static_cast<long>(t.encode(text.substr(0, at), true).size()));
        CHECK(j.rules.parse_tool_calls);
        CHECK(j.rules.parse_reasoning == thinking);
        CHECK(j.rules.reasoning_budget == (thinking ? 32 : -1));
      }
    }
    // The three texts differ (a renderer that fell back to another would pass the checks above).
    const std::string builtin = render_prompt_text(chat_renderer::builtin, r.messages, r.tools, thinking);
    const std::string q35 = render_prompt_text(chat_renderer::qwen35, r.messages, r.tools, thinking);
    const std::string q3 = render_prompt_text(chat_renderer::qwen3, r.messages, r.tools, thinking);
    CHECK(builtin != q35);
    CHECK(builtin != q3);
    CHECK(q35 != q3);
    CHECK(builtin == render_chat(r.messages, [&] {
            template_options o;
            o.enable_thinking = thinking;
            o.tools = nlohmann::json::parse(r.tools.dump());
            return o;
          }()));
  }
}

TEST_CASE("render_request: the native renderers equal jinja2 on a body with unsorted keys",
          "[render][template]") {
  if (!have_jinja2()) {
    WARN("skipped: python3 with jinja2 is not available to render the reference");
    return;
  }
  for (bool thinking : {true, false}) {
    ojson body = ojson::parse(agent_body);
    body["chat_template_kwargs"] = {{"enable_thinking", thinking}};
    const completion_request r = parse_chat(body.dump());
    for (chat_renderer renderer : {chat_renderer::qwen35, chat_renderer::qwen3}) {
      INFO("renderer " << chat_renderer_name(renderer) << ", thinking " << thinking);
      const ojson expected = jinja_render(renderer, body, thinking);
      REQUIRE(expected.contains("text"));
      CHECK(text_of(rendered(r, renderer, tokenizer())) == expected["text"].get<std::string>());
    }
  }
}

TEST_CASE("render_request: tools and arguments keep the client's key order", "[render][template]") {
  const completion_request r = parse_chat(agent_body);
  const std::string tool =
      R"({"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", )"
      R"("required": ["path", "content"], "properties": {"path": {"type": "string", "description": "where"}, )"
      R"("content": {"type": "string"}}}, "description": "Writes a file"}})";
  const std::string q35 = text_of(rendered(r, chat_renderer::qwen35, tokenizer()));
  CHECK_THAT(q35, Catch::Contains("<tools>\n" + tool + "\n</tools>"));
  CHECK_THAT(q35,
             Catch::Contains("<parameter=path>\na.txt\n</parameter>\n<parameter=content>\nx\n</parameter>\n"
                             "<parameter=mode>\n{\"z\": 1, \"a\": [2, 1]}\n</parameter>"));
  const std::string q3 = text_of(rendered(r, chat_renderer::qwen3, tokenizer()));
  CHECK_THAT(q3, Catch::Contains("<tools>\n" + tool + "\n</tools>"));
  CHECK_THAT(
      q3,
      Catch::Contains(
          R"({"name": "write_file", "arguments": {"path": "a.txt", "content": "x", "mode": {"z": 1, "a": [2, 1]}}})"));
  // The same as render_qwen35 on the body's own JSON, read in order.
  const ojson body = ojson::parse(agent_body);
  chat_render_options o;
  o.tools = body["tools"];
  CHECK(q35 == render_qwen35(body["messages"], o));
}

TEST_CASE("render_request: the reasoning flags follow each template's generation prompt",
          "[render][template]") {
  const std::string body = R"({"messages": [{"role": "user", "content": "hi"}]})";
  for (bool thinking : {true, false}) {
    ojson b = ojson::parse(body);
    b["chat_template_kwargs"] = {{"enable_thinking", thinking}};
    const completion_request r = parse_chat(b.dump());
    for (chat_renderer renderer : all_renderers) {
      INFO("renderer " << chat_renderer_name(renderer) << ", thinking " << thinking);
      const board_job j = rendered(r, renderer, tokenizer());
      const std::string text = text_of(j);
      const std::string gen = text.substr(text.rfind("<|im_start|>assistant\n"));
      CHECK(j.rules.parse_reasoning == thinking);
      if (!thinking) {
        CHECK(gen == "<|im_start|>assistant\n<think>\n\n</think>\n\n");
        CHECK_FALSE(j.rules.starts_in_reasoning);
      } else if (renderer == chat_renderer::qwen3) {
        CHECK(gen == "<|im_start|>assistant\n");  // the model opens <think> itself
        CHECK_FALSE(j.rules.starts_in_reasoning);
      } else {
        CHECK(gen == "<|im_start|>assistant\n<think>\n");
        CHECK(j.rules.starts_in_reasoning);
      }
      // The real template's generation prompt, as jinja2 renders it.
      if (renderer != chat_renderer::builtin && have_jinja2()) {
        const ojson expected = jinja_render(renderer, b, thinking);
        REQUIRE(expected.contains("text"));
        const std::string t = expected["text"];
        const std::string jgen = t.substr(t.rfind("<|im_start|>assistant\n"));
        CHECK(gen == jgen);
        const bool opens =
            jgen.find("<think>") != std::string::npos && jgen.find("</think>") == std::string::npos;
        CHECK(j.rules.starts_in_reasoning == opens);
      }
    }
  }
}

TEST_CASE("render_request: content parts as each template renders them", "[render][template]") {
  const std::string text_parts = R"({"messages": [{"role": "user", "content": [
      {"type": "text", "text": "look "}, {"type": "text", "text": " here"}]}]})";
  const completion_request t = parse_chat(text_parts);
  // Qwen3.5 concatenates text parts; the built-in and Qwen3's read content as text, joined with "\n".
  CHECK_THAT(text_of(rendered(t, chat_renderer::qwen35, tokenizer())),
             Catch::StartsWith("<|im_start|>user\nlook  here<|im_end|>"));
  CHECK_THAT(text_of(rendered(t, chat_renderer::qwen3, tokenizer())),
             Catch::StartsWith("<|im_start|>user\nlook \n here<|im_end|>"));
  CHECK_THAT(text_of(rendered(t, chat_renderer::builtin, tokenizer())),
             Catch::StartsWith("<|im_start|>user\nlook \n here<|im_end|>"));

  const std::string media = R"({"messages": [{"role": "user", "content": [
      {"type": "text", "text": "look "}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,)" +
                            std::string(test::png_2x2_base64) + R"("}},
      {"type": "text", "text": " and "}, {"type": "video_url", "video_url": {"url": "http://v"}}]}]})";
  const completion_request m = parse_chat(media);
  CHECK_THAT(text_of(rendered(m, chat_renderer::qwen35, tokenizer())),
             Catch::StartsWith("<|im_start|>user\nlook <|vision_start|><|image_pad|><|vision_end|> and "
                               "<|vision_start|><|video_pad|><|vision_end|><|im_end|>"));
  for (chat_renderer renderer : {chat_renderer::builtin, chat_renderer::qwen3}) {
    const auto out = render(m, renderer, tokenizer());
    REQUIRE(std::holds_alternative<api_error>(out));
    const api_error& e = std::get<api_error>(out);
    CHECK(e.status == 400);
    CHECK(e.param == "messages[0].content[1]");
    CHECK_THAT(e.message,
               Catch::Contains("image input") && Catch::Contains(std::string(chat_renderer_name(renderer))));
  }
  // jinja2 on the same parts; the real template knows a video part by its "video" key or type
  // (servers such as vLLM turn "video_url" parts into those before rendering, as the parser does).
  if (have_jinja2()) {
    ojson body = ojson::parse(media);
    body["messages"][0]["content"][3] = {{"type", "video"}, {"video", "http://v"}};
    CHECK(text_of(rendered(parse_chat(body.dump()), chat_renderer::qwen35, tokenizer())) ==
          text_of(rendered(m, chat_renderer::qwen35, tokenizer())));
    const ojson expected = jinja_render(chat_renderer::qwen35, body, true);
    REQUIRE(expected.contains("text"));
    CHECK(text_of(rendered(m, chat_renderer::qwen35, tokenizer())) == expected["text"].get<std::string>());
  }
}

TEST_CASE("render_request: a conversation the template refuses is a 400 with its message",
          "[render][template]") {
  const completion_request r = parse_chat(R"({"messages": [{"role": "system", "content": "alone"}]})");
  const auto out = render(r, chat_renderer::qwen35, tokenizer());
  REQUIRE(std::holds_alternative<api_error>(out));
  CHECK(std::get<api_error>(out).status == 400);
  CHECK(std::get<api_error>(out).message == "No user query found in messages.");
  CHECK(std::get<api_error>(out).param == "messages");
}
