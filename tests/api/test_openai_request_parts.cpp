// parse_request keeps what the chat templates render from the body as the client wrote it:
// content parts one by one (images and videos included) and the key order of tools and of
// tool-call arguments.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "runtime/api/openai_request.hpp"
#include "tests/support/test_images.hpp"

using namespace anchorage;

namespace {

completion_request accept(const std::string& body, request_kind kind) {
  auto r = parse_request(body, kind);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message);
  return std::get<completion_request>(r);
}

}  // namespace

TEST_CASE("content parts are kept part by part, images and videos included", "[openai]") {
  const std::string png = std::string("data:image/png;base64,") + test::png_2x2_base64;
  const completion_request r = accept(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
        {"type": "image_url", "image_url": {"url": ")" +
          png + R"("}}, {"type": "input_image", "image_url": ")" + png +
          R"("}, {"type": "image", "image": ")" + png + R"("},
        {"type": "video_url", "video_url": {"url": "http://v"}}, {"type": "video"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": "plain"}]})",
      request_kind::chat);
  const std::vector<content_part>& p = r.messages[0].parts;
  REQUIRE(p.size() == 7);
  using k = content_part::kind;
  CHECK(p[0].what == k::text);
  CHECK(p[0].text == "a");
  for (int i : {1, 2, 3}) {
    const content_part& image = p[static_cast<std::size_t>(i)];
    CHECK(image.what == k::image);
    REQUIRE(image.image);
    CHECK(image.image->width == 2);
    CHECK(image.image->height == 2);
    CHECK(image.image->rgb == std::vector<std::uint8_t>{255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255});
  }
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

TEST_CASE("image parts that are not an inline image get a 400 naming the part", "[openai][images]") {
  struct bad {
    std::string part;
    std::string param;
    std::string says;
  };
  const std::string png = test::png_2x2_base64;
  const std::vector<bad> cases = {
      {R"({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}})",
       "messages[0].content[1].image_url.url", "fetches no image URLs"},
      {R"({"type": "image_url", "image_url": "http://x/y.png"})", "messages[0].content[1].image_url",
       "fetches no image URLs"},
      {R"({"type": "image_url", "image_url": {"url": "data:image/png,plainbytes"}})",
       "messages[0].content[1].image_url.url", "base64"},
      {R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@@"}})",
       "messages[0].content[1].image_url.url", "base64"},
      {R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,R0lGODlh"}})",
       "messages[0].content[1].image_url.url", "GIF"},
      {R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,)" + png.substr(0, 40) + R"("}})",
       "messages[0].content[1].image_url.url", "PNG"},
      {R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAAAAAA"}})",
       "messages[0].content[1].image_url.url", "not a PNG, JPEG, GIF or WebP"},
      {R"({"type": "image_url", "image_url": {}})", "messages[0].content[1].image_url.url", "required"},
      {R"({"type": "image_url"})", "messages[0].content[1].image_url", "required"},
      {R"({"type": "image_url", "image_url": {"url": 5}})", "messages[0].content[1].image_url.url", "string"},
  };
  for (const bad& c : cases) {
    INFO(c.part);
    const auto r = parse_request(
        R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "see"}, )" + c.part + "]}]}",
        request_kind::chat);
    REQUIRE(std::holds_alternative<api_error>(r));
    const api_error& e = std::get<api_error>(r);
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK_THAT(e.message, Catch::Contains(c.says));
  }
}
