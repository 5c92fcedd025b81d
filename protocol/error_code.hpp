#pragma once
#include <cstdint>
#include <string>

#include <caf/error.hpp>

namespace anchorage {

// Errors one actor answers another with (caf::error in category "anchorage").
enum class error_code : std::uint8_t {
  none = 0,
  admin_disabled,  // no admin token configured: 403
  unauthorized,    // wrong or missing admin token: 401
  unknown_tier,    // a tier name no cache has: 400
};

// The HTTP status an edge answers for the code.
inline int http_status(error_code c) {
  switch (c) {
    case error_code::admin_disabled: return 403;
    case error_code::unauthorized: return 401;
    case error_code::unknown_tier: return 400;
    case error_code::none: break;
  }
  return 500;
}

}  // namespace anchorage

CAF_ERROR_CODE_ENUM(anchorage::error_code, "anchorage")
