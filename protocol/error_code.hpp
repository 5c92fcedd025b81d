#pragma once
#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/message.hpp>

namespace anchorage {

// Errors one actor answers another with (caf::error in category "anchorage").
enum class error_code : std::uint8_t {
  none = 0,
  admin_disabled,  // no admin token configured
  unauthorized,    // wrong or missing admin token
  unknown_tier,    // a tier name no cache has
  bad_setting,     // a live setting unknown, not a number, out of range, or of a tier this server lacks
  setting_pinned,  // a live setting a flag given at start fixes
};

// What a client is told for a code: the HTTP status and OpenAI's error fields (the fields of
// api_error in protocol/openai_types.hpp; `param` empty when none).
struct error_code_text {
  int status;
  const char* type;
  const char* message;
  const char* param;
};

// Every code's answer, in one place: the edge sends it as {"error":{...}} with the status.
inline error_code_text describe(error_code c) {
  switch (c) {
    case error_code::admin_disabled:
      return {403, "permission_error",
              "admin routes are off: start the server with --admin-token or ANCHORAGE_ADMIN_TOKEN", ""};
    case error_code::unauthorized:
      return {401, "authentication_error", "this route needs the admin token (Authorization: Bearer TOKEN)",
              ""};
    case error_code::unknown_tier:
      // the names cache_tier_from_string() accepts (protocol/cache_source.hpp)
      return {400, "invalid_request_error",
              "unknown tier (all, resident, store, disk, spill, response, suffix)", "tier"};
    case error_code::bad_setting:
      return {400, "invalid_request_error",
              "a setting is unknown or out of range (GET /v1/cache/settings lists them)", ""};
    case error_code::setting_pinned:
      return {409, "invalid_request_error", "a flag given at start fixes this setting", ""};
    case error_code::none:
      break;
  }
  return {500, "server_error", "internal error (an empty error code)", ""};
}

// The HTTP status an edge answers for the code.
inline int http_status(error_code c) { return describe(c).status; }

}  // namespace anchorage

CAF_ERROR_CODE_ENUM(anchorage::error_code, "anchorage")
