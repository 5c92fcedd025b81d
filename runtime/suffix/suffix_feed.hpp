#pragma once
// The suffix store's writer side as the writer actor runs it (actors/suffix_writer): it owns the
// store, adds each finished request's ids, clears it, and says what the readers need after each
// call: a new snapshot when the index was rebuilt or the log rewritten (positions shift after a
// forget or a clear), else a delta of the ids appended, else nothing. Not thread-safe: one owner.
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/suffix/suffix_snapshot.hpp"
#include "runtime/suffix/suffix_store.hpp"

namespace anchorage {

// What the readers get after one call (both null: nothing for them).
struct suffix_feed_out {
  std::shared_ptr<const suffix_snapshot> snapshot;
  std::shared_ptr<const suffix_delta> delta;
  suffix_add_report report;
};

class suffix_feed {
 public:
  // Opens the store (suffix_store's contract: a failure leaves it refused, and every call then
  // hands out the empty snapshot once and nothing after).
  explicit suffix_feed(suffix_store_options options);

  const suffix_store& store() const { return store_; }

  // The whole log now, as a new generation (the readers' first, and after a rebuild).
  std::shared_ptr<const suffix_snapshot> snapshot();

  suffix_feed_out add(const std::vector<token_id>& tokens);

  // Empties the store; the readers get an empty snapshot (also when the write failed: the store
  // then stays as it was and the snapshot is of it). `ok`: the log was emptied.
  suffix_feed_out clear(bool* ok = nullptr);

 private:
  suffix_store store_;
  suffix_query_options query_;
  std::uint64_t generation_ = 0;
  std::uint64_t rebuilds_seen_ = 0;
};

}  // namespace anchorage
