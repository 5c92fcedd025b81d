#pragma once
// Small readers of a request body's JSON members that answer what a client got wrong as a 400
// api_error ("invalid_request_error", the message saying what is wrong, param naming the
// field). The chat/completions, Anthropic Messages and Responses parsers share them.
//
// Every reader takes `obj` (a JSON object), the member `key` and the `param` to name in errors;
// a member that is absent or JSON null counts as absent and leaves `out` alone. None throws.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/openai_types.hpp"

namespace anchorage::request_fields {

// ordered_json: objects keep the client's key order (tool schemas and tool-call arguments are
// rendered by the templates in the order given).
using json = nlohmann::ordered_json;
// The outcome of one validation step: nullopt when it passed.
using failure = std::optional<api_error>;

api_error invalid(std::string param, std::string message);
// "<param> must be <expected>, got <what v is>".
api_error wrong_type(const std::string& param, const char* expected, const json& v);

// The member `key` of object `obj`, or null when it is absent or JSON null.
const json* field(const json& obj, const char* key);
// Compact JSON text; invalid UTF-8 becomes U+FFFD.
std::string dump_compact(const json& v);

failure opt_string(const json& obj, const char* key, const std::string& param, std::string& out);
failure opt_string(const json& obj, const char* key, const std::string& param,
                   std::optional<std::string>& out);
// A string that must be present and non-empty.
failure need_string(const json& obj, const char* key, const std::string& param, std::string& out);
failure opt_bool(const json& obj, const char* key, const std::string& param, bool& out);
// An integer >= lo (values beyond LONG_MAX are clamped to it).
failure read_integer(const json& v, const std::string& param, long lo, long& out);
// A number in [lo, hi], or in (lo, hi] when lo_open; param is the key.
failure opt_ranged(const json& obj, const char* key, double lo, double hi, bool lo_open, double& out);

// `body` parsed; a 400 when it is not JSON, not an object, or nested deeper than 512 levels.
std::optional<json> parse_object(std::string_view body, api_error& error);

}  // namespace anchorage::request_fields
