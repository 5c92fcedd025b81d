#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/device.hpp"
#include "protocol/cache_source.hpp"
#include "protocol/cache_stats.hpp"
#include "protocol/disk_types.hpp"
#include "protocol/spill_messages.hpp"
#include "runtime/cache/resume_offer.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/text/output/end_record_builder.hpp"

namespace anchorage {

// What the lookup needs to know of a request besides its prompt.
struct request_info {
  std::string session_key;         // a request of another session parks the resident one
  std::size_t max_tokens = 0;      // a guest's stash holds its output too
  std::size_t hidden_reserve = 0;  // rows the server may add unseen (the reasoning budget's phrase)
  // A guest whatever its length (a compaction's continuation, docs/COMPACTION.md): it reads the
  // resident rows and leaves them, their anchors and their end anchor as they were.
  bool force_guest = false;
  std::optional<std::size_t> user_start;  // where the last user message starts (disk admission)
};

// One request as the tiers see it while the coordinator asks them in order.
struct tier_lookup {
  const std::vector<token_id>* prompt = nullptr;
  request_info info;
  // A guest (guest_stash::is_guest): the coordinator's first guess; the first tier may revoke it
  // (a short prompt that continues the resident conversation is no guest). The tiers after it
  // see the final answer.
  bool guest = false;
  bool stashed() const { return guest; }  // a guest runs on the rows in place, stashed
  // The deepest start a tier declined because reading it costs more than the prefill it saves
  // (0: none); the miss reasons' cost rule.
  std::size_t declined_at = 0;
  // The deepest line only another engine's disk folder holds for the prompt (0: none); the miss
  // reasons' other_fingerprint.
  std::size_t foreign_at = 0;
  // The slot's measured prefill rate (0: unmeasured): a tier offers a read only when it costs
  // less than prefilling the tokens it saves at this rate (an unmeasured rate reads).
  double prefill_tokens_per_s = 0;
};

struct verified_read;

// What restore() of a taken offer needs read first, off the board's thread, and so who reads
// it: nothing (the device tiers restore from memory), the spill reader's fetch of a spilled
// conversation, or the disk actor's read of the disk's offer. The board sends it and hands the
// reply back (cache_tiers::take_fetched) before it restores.
using tier_fetch = std::variant<std::monostate, spill_fetch_ptr, disk_offer>;
// The disk actor's answer to a disk_offer fetch: the verified bytes (nullptr: nothing read) and
// whether the offer's files were there but failed their checks.
struct disk_fetched {
  std::shared_ptr<const verified_read> read;
  bool damaged = false;
};
// A fetch's reply, as every tier is handed it (each takes only its own).
using tier_fetched = std::variant<spill_fetch*, disk_fetched>;

// How a tier's restore() went: restored, or not with the engine untouched because its offer was
// gone by then (stale: nothing read, cleared, moved) or its bytes failed their checks.
enum class restore_result { restored, stale, failed_checks };

// One cache tier as its coordinator (cache_tiers) drives it, in lookup order. For every request:
// offer() (each tier in order, with the best start so far as the floor) -> fetch() of the offer
// taken, by the tier whose source it is, and take_fetched() of its reply (every tier) when it
// needs a read -> restore() of the offer taken, by the tier whose source it is -> begin() (every tier) ->
// after_prefill_step() per chunk -> end_generation() once decoding ends -> finish() always, last. A tier
// whose offer was not taken still sees begin() and the rest: the rows it may keep are the request's. Not
// thread-safe: the board owns the coordinator and its tiers.
class tier {
 public:
  virtual ~tier() = default;

  // Whether offers of `source` are this tier's (it restores them and counts their hits).
  virtual bool serves(cache_source source) const = 0;
  // The tier names (clear, stats) this tier answers for.
  virtual std::vector<cache_tier> names() const = 0;

  // Its best offer for the lookup that starts later than `floor`; nullopt when none. The
  // coordinator takes it when it starts later than every tier above.
  virtual std::optional<resume_offer> offer(tier_lookup& l, std::size_t floor) = 0;
  // Restores its own offer into `into` (valid length = offer.at). Not restored when the read
  // failed and `into` is untouched (the coordinator then falls back to the offer above); an
  // exception when `into` may be half written (the caller's cold path).
  virtual restore_result restore(state_adapter& into, const resume_offer& offer) = 0;
  // What restore() of its own `offer` needs read first (nothing by default), and that read's
  // reply (every tier sees every reply; a tier takes only the one of its own fetch).
  virtual tier_fetch fetch(const resume_offer& /*offer*/) const { return {}; }
  virtual void take_fetched(tier_fetched& /*reply*/) {}

  // The engine holds offer.served's first offer.at rows; the prefill of the rest begins.
  // `guest`: the request is a guest (stashed) and must leave the tier's rows alone.
  virtual void begin(const resume_offer& offer, const state_adapter& state, const tier_lookup& l,
                     bool guest) = 0;
  virtual void after_prefill_step(const state_adapter& state, kernels::backend where) = 0;
  virtual void end_generation(const state_adapter& state, kernels::backend where, end_record record) = 0;
  virtual void finish(state_adapter& state) = 0;

  // Empties the tier named `name` (one of names()).
  virtual void clear(cache_tier name) = 0;
  // Fills its part of the stats (one per name).
  virtual void stats(cache_stats& into) const = 0;
};

}  // namespace anchorage
