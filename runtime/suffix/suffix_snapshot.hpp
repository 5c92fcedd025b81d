#pragma once
// What the suffix store's writer hands its readers (docs/SUFFIX_STORE.md, "In the server"): an
// immutable snapshot of the whole log made after each rebuild or rewrite, and small deltas (the
// ids one add appended) between two snapshots. The writer never touches either once sent; a
// reader (suffix_view) keeps the latest snapshot and the deltas since as a tail it scans
// linearly, so no state is shared mutably between the writer and its readers.
//
// Memory: a snapshot's ids are a copy of the log made once per rebuild (rebuilds come in batches,
// so the copy is amortized over the ids appended since); its index is the store's own, shared.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/suffix/suffix_index.hpp"
#include "runtime/suffix/suffix_match.hpp"

namespace anchorage {

struct suffix_snapshot {
  std::uint64_t generation = 0;  // the writer's count of snapshots: deltas name the one they extend
  std::shared_ptr<const std::vector<token_id>> ids = std::make_shared<const std::vector<token_id>>();
  std::vector<std::size_t> seg_starts;  // of those ids (ascending, the first 0)
  // The suffix array over a prefix of those ids (index->end() <= ids->size()); the ids past it
  // are scanned linearly like a delta's.
  std::shared_ptr<const suffix_index> index = std::make_shared<const suffix_index>();
  suffix_query_options query;
};

// The ids one add appended after `generation`'s snapshot and the deltas before it.
struct suffix_delta {
  std::uint64_t generation = 0;
  std::size_t at = 0;      // the first id's position in the log
  bool continues = false;  // the first id joins the log's last segment (else it starts one)
  std::vector<token_id> ids;
  // Where in `ids` (ascending, each > 0) a further segment starts: an add cut at an image's rows
  // appends one segment per run of text between them (suffix_store::add).
  std::vector<std::size_t> starts;
};

}  // namespace anchorage
