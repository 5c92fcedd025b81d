#include "runtime/speculative/speculative_options.hpp"

namespace anchorage {

std::optional<speculative_mode> parse_speculative_mode(std::string_view s) {
  if (s == "off") return speculative_mode::off;
  if (s == "mtp") return speculative_mode::mtp;
  if (s == "lookup") return speculative_mode::lookup;
  if (s == "mtp+lookup") return speculative_mode::mtp_lookup;
  return std::nullopt;
}

const char* to_string(speculative_mode m) {
  switch (m) {
    case speculative_mode::off:
      return "off";
    case speculative_mode::mtp:
      return "mtp";
    case speculative_mode::lookup:
      return "lookup";
    case speculative_mode::mtp_lookup:
      return "mtp+lookup";
  }
  return "off";
}

}  // namespace anchorage
