#pragma once
// SA-IS (Nong, Zhang and Chan, "Two Efficient Algorithms for Linear Time Suffix Array
// Construction", 2009) over an integer alphabet: linear time, about 5 bytes of working memory per
// symbol beyond the output. Written here because no Debian package builds a suffix array over
// integers (docs/SUFFIX_STORE.md says why not libdivsufsort).
#include <cstdint>
#include <vector>

namespace anchorage {

// The suffix array of `text`: the start positions of its suffixes in lexicographic order.
// Contract: text is non-empty, its last symbol is 0 and no other symbol is 0 (the sentinel),
// every symbol is in [0, alphabet), and text.size() < 2^31. A text breaking it is a programmer
// error (asserted). Thread-safe (no shared state).
std::vector<std::int32_t> build_suffix_array(const std::vector<std::int32_t>& text, std::int32_t alphabet);

}  // namespace anchorage
