#include "runtime/speculative/suffix_lookup.hpp"

namespace anchorage {

std::vector<token_id> suffix_lookup::propose(const token_id* recent, std::size_t n, std::size_t max_draft) {
  return view_.propose(recent, n, max_draft);
}

}  // namespace anchorage
