#pragma once
#include <cstddef>

namespace anchorage {

// The device tiers' knobs, with the served defaults (docs/SERVER.md lists the flags).
struct cache_options {
  bool enabled = true;                            // false: --no-cache, the cold path only
  std::size_t resident_bytes = 2560ULL << 20;     // --resident-gb 2.5
  std::size_t store_bytes = 2048ULL << 20;        // --cache-budget-gb 2
  std::size_t store_entry_bytes = 1024ULL << 20;  // --store-entry-gb 1
  bool end_anchor = true;                         // --end-anchor
  bool end_align = true;                          // --end-align
  bool session_cache = true;                      // snapshot a conversation when its turn ends
  bool prefix_cache = true;                       // snapshot the longest line of a cold prefill that fits
  std::size_t guest_max = 8192;                   // --resident-guest-max: a guest's longest prompt
  std::size_t stash_bytes = 1024ULL << 20;        // --resident-stash-gb 1
  std::size_t pin_bytes = 4096ULL << 20;          // --resident-pin-gb 4
  std::size_t park_bytes = 4096ULL << 20;         // --resident-park-gb 4
  int parallel = 2;                               // --parallel N: slots serving requests at once
  std::size_t response_cache_bytes = 0;           // --response-cache-mb 0: the response cache off
  std::size_t image_cache_bytes = 512ULL << 20;   // --image-cache-mb 512: the vision encoder's output
};

}  // namespace anchorage
