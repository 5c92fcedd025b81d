#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "protocol/cache_source.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

// Where a request can resume and what it is then served: the lookup's currency between the
// tiers and their coordinator (runtime/tiers/cache_tiers). Each tier answers in its own terms
// (the resident prefix and the store with this; the disk with a disk_offer, which the
// coordinator turns into one), and the board restores what the coordinator chose.
struct resume_offer {
  cache_source source = cache_source::cold;  // cold | resident | end | store | disk | checkpoint
  std::size_t at = 0;                        // the restored state covers served[0, at)
  std::vector<token_id> served;              // the prompt to run: the client's, or the end alignment's
  bool exact = true;                         // a grid state (a cold prefill's bits), not a session resume
  std::size_t exact_to = 0;                  // rows [0, exact_to) of the restored state are a cold prefill's
  bool rows_replaced = false;                // the restore wrote rows (a snapshot), not only sections
  bool aligned = false;                      // the end alignment changed the prompt (reasoning, hidden spans)
  cache_via via = cache_via::none;           // what else served it: stash | side | pin | park
  // Spans of served[0, at) the client's prompt does not hold: reasoning blocks the end alignment
  // skipped whole (alignment::dropped). They become hidden spans of the rows.
  std::vector<std::pair<std::size_t, std::size_t>> dropped;
};

}  // namespace anchorage
