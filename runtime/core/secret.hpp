#pragma once
// Comparing a secret (the admin token) with what a client sent, in a time that does not depend
// on where the two first differ: a client timing its guesses learns nothing of the secret's
// bytes. The time depends on the length of what was sent, which the client knows.
#include <cstddef>
#include <string_view>

namespace anchorage {

// True when `given` is exactly `secret`. Every byte of `given` is compared (against the
// secret's bytes, repeated), and the lengths are folded in, with no early exit. An empty secret
// matches only an empty `given`; callers refuse an empty secret before asking.
inline bool same_secret(std::string_view given, std::string_view secret) {
  unsigned diff = given.size() == secret.size() ? 0u : 1u;
  const std::size_t n = secret.size();
  for (std::size_t i = 0; i < given.size(); ++i) {
    const unsigned char s = n == 0 ? 0 : static_cast<unsigned char>(secret[i % n]);
    diff |= static_cast<unsigned char>(given[i]) ^ s;
  }
  return diff == 0;
}

}  // namespace anchorage
