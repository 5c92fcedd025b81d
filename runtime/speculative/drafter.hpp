#pragma once
// The drafts of one generation's verify rounds (docs/SPECULATIVE.md). Each round asks for the
// tokens to forward after the pending one:
//   - forced tokens first: what the generation will emit anyway (the reasoning budget's close
//     phrase), drafts that cannot be rejected;
//   - with lookup: what followed the longest match of the recent tokens in the generation's own
//     tokens (the prompt and the output so far), else in the persistent suffix store, weighted by
//     how often it did (runtime/suffix/suffix_match.hpp's propose);
//   - with mtp: the draft layer's proposal (engine::draft), when lookup drafted nothing.
// Zero drafts is a normal answer: the round is then a plain decode step. Each drafter's length
// adapts to the acceptance it has seen and pauses where it does not pay (draft_length.hpp).
//
// Not thread-safe: the board's thread.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/probe.hpp"
#include "runtime/core/token.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/speculative/draft_length.hpp"
#include "runtime/speculative/lookup_source.hpp"
#include "runtime/speculative/speculative_options.hpp"

namespace anchorage {

enum class draft_kind { none, forced, lookup, store, mtp };
const char* to_string(draft_kind k);

struct drafter_counters {
  std::uint64_t rounds = 0;    // verify rounds with at least one of its drafts
  std::uint64_t drafted = 0;   // drafts forwarded
  std::uint64_t accepted = 0;  // drafts the target agreed with

  static constexpr auto fields() {
    using s = drafter_counters;
    return std::make_tuple(probe::sum("rounds", &s::rounds), probe::sum("drafted", &s::drafted),
                           probe::sum("accepted", &s::accepted));
  }
};

struct speculative_counters {
  std::uint64_t rounds = 0;       // verify rounds (at least one draft)
  std::uint64_t plain_steps = 0;  // decode steps with no draft
  std::uint64_t pauses = 0;       // times a drafter paused itself
  drafter_counters forced, lookup, store, mtp;
  void add(const speculative_counters& o) { probe::merge_into(*this, o); }
  drafter_counters& of(draft_kind k);

  static constexpr auto fields() {
    using s = speculative_counters;
    return std::make_tuple(probe::sum("rounds", &s::rounds), probe::sum("plain_steps", &s::plain_steps),
                           probe::sum("pauses", &s::pauses), probe::sum("forced", &s::forced),
                           probe::sum("lookup", &s::lookup), probe::sum("store", &s::store),
                           probe::sum("mtp", &s::mtp));
  }
};

struct draft_proposal {
  std::vector<token_id> ids;
  draft_kind from = draft_kind::none;
};

class drafter {
 public:
  // `store`: the suffix store's read side (null: the generation's own tokens only).
  drafter(const speculative_options& options, lookup_source* store);

  // The drafts to follow `pending` (the generation's last emitted token, not yet forwarded):
  // `prompt`, then `output` (every emitted id, pending last), the forced ids still queued, the
  // ids the sampler may choose (null: all) and at most `room` drafts. `prompt` may hold an
  // image's rows (negative key ids): a match may run through them, but every draft is a
  // vocabulary id of `e` (a lookup draft stops before the first id that is not).
  draft_proposal propose(engine& e, const std::vector<token_id>& prompt, const std::vector<token_id>& output,
                         const std::vector<token_id>& forced, const std::vector<bool>* allowed,
                         std::size_t room);
  // What the round did with a proposal: `accepted` of its drafts were the target's tokens.
  void settle(const draft_proposal& p, std::size_t accepted);

  const speculative_counters& counters() const { return counters_; }

 private:
  const std::vector<token_id>& context(const std::vector<token_id>& prompt,
                                       const std::vector<token_id>& output);

  speculative_options options_;
  lookup_source* store_;
  draft_length lookup_len_, mtp_len_;
  std::vector<token_id> context_;  // prompt + output, grown as the output grows
  std::size_t context_prompt_ = 0, context_output_ = 0;
  speculative_counters counters_;
};

}  // namespace anchorage
