// parse_request keeps what the chat templates render from the body as the client wrote it:
// content parts one by one (images and videos included) and the key order of tools and of
// tool-call arguments.
#include <catch2/catch.hpp>

#include <string>
#include <variant>
#include <vector>

#include "runtime/api/openai_request.hpp"

using namespace anchorage;

namespace {

completion_request accept(const std::string& body, request_kind kind) {
  auto r = parse_request(body, kind);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message);
  return std::get<completion_request>(r);
}

}  // namespace

TEST_CASE("content parts are kept part by part, images and videos included", "[openai]") {
  const completion_request r =
      accept(std::string(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
        {"type": "image_url", "image_url": {"url": "http://x"}}, {"type": "input_image"}, {"type": "image"},
        {"type": "video_url", "video_url": {"url": "http://v"}}, {"type": "video"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": "plain"}]})"),
             request_kind::chat);
  const std::vector<content_part>& p = r.messages[0].parts;
  REQUIRE(p.size() == 7);
  using k = content_part::kind;
  CHECK(p[0].what == k::text);
  CHECK(p[0].text == "a");
  for (int i : {1, 2, 3}) CHECK(p[static_cast<std::size_t>(i)].what == k::image);
  for (int i : {4, 5}) CHECK(p[static_cast<std::size_t>(i)].what == k::video);
  CHECK(p[6].text == "b");
  CHECK(r.messages[0].content == "a\nb");  // the text parts, as the built-in template reads them
  CHECK(r.messages[1].parts.empty());
  CHECK(r.messages[1].content == "plain");
}

TEST_CASE("tools and tool-call arguments keep the client's key order", "[openai]") {
  const std::string tools =
      R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","required":["z","a"],)"
      R"("properties":{"z":{"type":"string"},"a":{"type":"integer"}}},"description":"d"}}])";
  const completion_request r = accept(
      R"({"tools":)" + tools + R"(,"messages":[{"role":"user","content":"q"},{"role":"assistant",)" +
          R"("tool_calls":[{"type":"function","function":{"name":"f","arguments":{"z":"1","a":2}}}]}]})",
      request_kind::chat);
  CHECK(r.tools.dump() == tools);
  CHECK(r.messages[1].tool_calls[0].arguments == R"({"z":"1","a":2})");
}
