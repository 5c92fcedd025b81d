#include "runtime/api/request_fields.hpp"

#include <climits>
#include <cstdint>
#include <utility>

namespace anchorage::request_fields {

namespace {
constexpr int max_json_depth = 512;
}  // namespace

api_error invalid(std::string param, std::string message) {
  return api_error{400, "invalid_request_error", std::move(message), std::move(param)};
}

api_error wrong_type(const std::string& param, const char* expected, const json& v) {
  const std::string got = v.is_number_float() ? "a non-integer number"
                          : v.is_number()     ? "an integer"
                                              : std::string(v.type_name());
  return invalid(param, param + " must be " + expected + ", got " + got);
}

const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string dump_compact(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

failure opt_string(const json& obj, const char* key, const std::string& param, std::string& out) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) return wrong_type(param, "a string", *v);
  out = v->get<std::string>();
  return std::nullopt;
}

failure opt_string(const json& obj, const char* key, const std::string& param,
                   std::optional<std::string>& out) {
  std::string s;
  if (!field(obj, key)) return std::nullopt;
  if (auto e = opt_string(obj, key, param, s)) return e;
  out = std::move(s);
  return std::nullopt;
}

failure need_string(const json& obj, const char* key, const std::string& param, std::string& out) {
  const json* v = field(obj, key);
  if (!v || !v->is_string() || v->get_ref<const std::string&>().empty())
    return invalid(param, param + " must be a non-empty string");
  out = v->get<std::string>();
  return std::nullopt;
}

failure opt_bool(const json& obj, const char* key, const std::string& param, bool& out) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return wrong_type(param, "a boolean", *v);
  out = v->get<bool>();
  return std::nullopt;
}

failure read_integer(const json& v, const std::string& param, long lo, long& out) {
  if (!v.is_number_integer()) return wrong_type(param, "an integer", v);
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    out = u > static_cast<std::uint64_t>(LONG_MAX) ? LONG_MAX : static_cast<long>(u);
  } else {
    out = static_cast<long>(v.get<std::int64_t>());
  }
  if (out < lo)
    return invalid(param, param + " must be an integer >= " + std::to_string(lo) + ", got " + v.dump());
  return std::nullopt;
}

failure opt_ranged(const json& obj, const char* key, double lo, double hi, bool lo_open, double& out) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return wrong_type(key, "a number", *v);
  const double x = v->get<double>();
  if ((lo_open ? x <= lo : x < lo) || x > hi) {
    return invalid(key, std::string(key) + " must be in " + (lo_open ? "(" : "[") + json(lo).dump() + ", " +
                            json(hi).dump() + "], got " + v->dump());
  }
  out = x;
  return std::nullopt;
}

std::optional<json> parse_object(std::string_view body, api_error& error) {
  bool too_deep = false;
  const json::parser_callback_t limit_depth = [&too_deep](int depth, json::parse_event_t, json&) {
    if (depth > max_json_depth) too_deep = true;
    return !too_deep;  // once too deep, keep nothing: the result is rejected anyway
  };
  json parsed = json::parse(body.begin(), body.end(), limit_depth, /*allow_exceptions=*/false);
  if (too_deep) {
    error =
        invalid("", "the request body is nested deeper than " + std::to_string(max_json_depth) + " levels");
    return std::nullopt;
  }
  if (parsed.is_discarded()) {
    error = invalid("", "the request body is not valid JSON");
    return std::nullopt;
  }
  if (!parsed.is_object()) {
    error = invalid("", "the request body must be a JSON object");
    return std::nullopt;
  }
  return parsed;
}

}  // namespace anchorage::request_fields
