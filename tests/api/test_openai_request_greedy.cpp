// What the response cache needs from a request (docs/CACHES.md, "The response cache"): whether
// the temperature was sent, top_k (1 is greedy: the job's temperature is then 0), and
// response_format as sent; render_request marks the job greedy only for an explicit temperature
// 0 or top_k 1.
#include <catch2/catch.hpp>

#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "runtime/api/openai_request.hpp"
#include "runtime/text/template/prompt_render.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;
using nlohmann::json;

namespace {

completion_request accept(const std::string& body, request_kind kind) {
  auto r = parse_request(body, kind);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message);
  return std::get<completion_request>(r);
}

completion_request accept(const json& body, request_kind kind) {
  auto r = parse_request(body.dump(), kind);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message);
  return std::get<completion_request>(r);
}

api_error reject(const json& body, request_kind kind) {
  auto r = parse_request(body.dump(), kind);
  if (!std::holds_alternative<api_error>(r)) FAIL("accepted: " << body.dump());
  return std::get<api_error>(r);
}

json chat_with(const std::string& key, json value) {
  json b = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  if (!key.empty()) b[key] = std::move(value);
  return b;
}

board_job render(const completion_request& r) {
  render_limits lim;
  lim.ctx_size = 4096;
  auto out = render_request(r, lim, tokenizer(), 1);
  REQUIRE(std::holds_alternative<board_job>(out));
  return std::get<board_job>(out);
}

}  // namespace

TEST_CASE("the temperature is known to be sent or not", "[openai][response]") {
  const completion_request omitted = accept(chat_with("", nullptr), request_kind::chat);
  CHECK_FALSE(omitted.temperature_given);
  CHECK(omitted.temperature == 1.0);
  CHECK_FALSE(accept(chat_with("temperature", nullptr), request_kind::chat).temperature_given);
  const completion_request zero = accept(chat_with("temperature", 0), request_kind::chat);
  CHECK(zero.temperature_given);
  CHECK(zero.temperature == 0.0);
  CHECK(accept(chat_with("temperature", 0.7), request_kind::chat).temperature_given);
}

TEST_CASE("top_k is a non-negative integer", "[openai][response]") {
  CHECK_FALSE(accept(chat_with("", nullptr), request_kind::chat).top_k);
  CHECK(accept(chat_with("top_k", 1), request_kind::chat).top_k == 1L);
  CHECK(accept(chat_with("top_k", 0), request_kind::chat).top_k == 0L);
  CHECK(accept(chat_with("top_k", 40), request_kind::chat).top_k == 40L);
  CHECK(accept(chat_with("top_k", -1), request_kind::chat).top_k == 0L);  // vLLM's "no limit"
  CHECK(reject(chat_with("top_k", -2), request_kind::chat).param == "top_k");
  CHECK(reject(chat_with("top_k", 1.5), request_kind::chat).param == "top_k");
  CHECK(reject(chat_with("top_k", "1"), request_kind::chat).param == "top_k");
  json completion = {{"prompt", "x"}, {"top_k", 1}};
  CHECK(accept(completion, request_kind::completion).top_k == 1L);
}

TEST_CASE("response_format is kept as sent", "[openai][response]") {
  CHECK(accept(chat_with("", nullptr), request_kind::chat).response_format.is_null());
  // The client's key order is kept (a schema's text is what it is).
  const std::string rf = R"({"type":"json_schema","json_schema":{"schema":{"type":"object"},"name":"n"}})";
  const completion_request r = accept(
      R"({"messages":[{"role":"user","content":"hi"}],"response_format":)" + rf + "}", request_kind::chat);
  CHECK(r.response_format.dump() == rf);
  CHECK(reject(chat_with("response_format", "json"), request_kind::chat).param == "response_format");
  const board_job j = render(r);
  CHECK(j.client()->response_format == rf);
  CHECK(render(accept(chat_with("", nullptr), request_kind::chat)).client()->response_format.empty());
}

TEST_CASE("a job is greedy for an explicit temperature 0 or top_k 1 only", "[openai][response]") {
  const board_job omitted = render(accept(chat_with("", nullptr), request_kind::chat));
  CHECK_FALSE(omitted.client()->greedy);
  CHECK(omitted.sampling.temperature == 1.0);
  const board_job zero = render(accept(chat_with("temperature", 0), request_kind::chat));
  CHECK(zero.client()->greedy);
  CHECK(zero.sampling.temperature == 0.0);
  CHECK_FALSE(render(accept(chat_with("temperature", 0.5), request_kind::chat)).client()->greedy);
  // top_k 1 is the argmax: the sampler gets temperature 0 whatever was sent.
  json k1 = chat_with("top_k", 1);
  k1["temperature"] = 0.9;
  const board_job top1 = render(accept(k1, request_kind::chat));
  CHECK(top1.client()->greedy);
  CHECK(top1.sampling.temperature == 0.0);
  const board_job top5 = render(accept(chat_with("top_k", 5), request_kind::chat));
  CHECK_FALSE(top5.client()->greedy);
  CHECK(top5.sampling.temperature == 1.0);
  CHECK(render(accept(chat_with("tool_choice", "none"), request_kind::chat)).client()->tool_choice == "none");
  CHECK(render(accept(chat_with("", nullptr), request_kind::chat)).client()->tool_choice == "auto");
}
