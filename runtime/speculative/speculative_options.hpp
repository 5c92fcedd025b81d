#pragma once
// --speculative and --draft-max (docs/SPECULATIVE.md).
#include <optional>
#include <string>
#include <string_view>

namespace anchorage {

enum class speculative_mode { off, mtp, lookup, mtp_lookup };

struct speculative_options {
  speculative_mode mode = speculative_mode::off;
  int draft_max = 8;  // drafted tokens a verify round forwards at most (the pending one besides)
  // The lookup drafter reads the generation's own tokens before the suffix store (off: the store
  // only, which the tests script to draft exactly what they want).
  bool lookup_own = true;

  bool uses_mtp() const { return mode == speculative_mode::mtp || mode == speculative_mode::mtp_lookup; }
  bool uses_lookup() const {
    return mode == speculative_mode::lookup || mode == speculative_mode::mtp_lookup;
  }
  bool on() const { return mode != speculative_mode::off; }
};

// "off", "mtp", "lookup", "mtp+lookup"; nullopt for anything else.
std::optional<speculative_mode> parse_speculative_mode(std::string_view s);
const char* to_string(speculative_mode m);

}  // namespace anchorage
