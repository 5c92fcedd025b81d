#include "runtime/speculative/drafter.hpp"

#include <algorithm>

#include "runtime/suffix/suffix_match.hpp"

namespace anchorage {

const char* to_string(draft_kind k) {
  switch (k) {
    case draft_kind::none:
      return "none";
    case draft_kind::forced:
      return "forced";
    case draft_kind::lookup:
      return "lookup";
    case draft_kind::store:
      return "store";
    case draft_kind::mtp:
      return "mtp";
  }
  return "none";
}

drafter_counters& speculative_counters::of(draft_kind k) {
  switch (k) {
    case draft_kind::forced:
      return forced;
    case draft_kind::store:
      return store;
    case draft_kind::mtp:
      return mtp;
    default:
      return lookup;
  }
}

namespace {

// A lookup draft stops before its first id outside the vocabulary [0, vocab): an image's row
// (its negative key id, runtime/core/token.hpp), which a request's own prompt holds, is never a
// draft (the verify round would refuse the whole round).
void cut_at_foreign_id(std::vector<token_id>& ids, int vocab) {
  const auto bad = std::find_if(ids.begin(), ids.end(), [vocab](token_id t) { return t < 0 || t >= vocab; });
  ids.erase(bad, ids.end());
}

}  // namespace

drafter::drafter(const speculative_options& options, lookup_source* store)
    : options_(options),
      store_(options.uses_lookup() ? store : nullptr),
      lookup_len_(options.uses_lookup() ? options.draft_max : 0),
      mtp_len_(options.uses_mtp() ? options.draft_max : 0) {}

// prompt + output in one array, appended to as the output grows (a new prompt starts it again).
const std::vector<token_id>& drafter::context(const std::vector<token_id>& prompt,
                                              const std::vector<token_id>& output) {
  if (context_prompt_ != prompt.size() || context_output_ > output.size()) {
    context_.assign(prompt.begin(), prompt.end());
    context_prompt_ = prompt.size();
    context_output_ = 0;
  }
  context_.insert(context_.end(), output.begin() + static_cast<long>(context_output_), output.end());
  context_output_ = output.size();
  return context_;
}

draft_proposal drafter::propose(engine& e, const std::vector<token_id>& prompt,
                                const std::vector<token_id>& output, const std::vector<token_id>& forced,
                                const std::vector<bool>* allowed, std::size_t room) {
  draft_proposal p;
  if (!options_.on() || room == 0 || output.empty()) return p;
  room = std::min(room, static_cast<std::size_t>(std::max(options_.draft_max, 0)));
  if (!forced.empty()) {
    p.from = draft_kind::forced;
    p.ids.assign(forced.begin(), forced.begin() + static_cast<long>(std::min(room, forced.size())));
    return p;
  }
  if (options_.uses_lookup()) {
    const int k = lookup_len_.next();
    if (k > 0) {
      const auto& ctx = context(prompt, output);
      const std::size_t want = std::min(room, static_cast<std::size_t>(k));
      const std::size_t recent = std::min<std::size_t>(ctx.size(), 64);
      const token_id* tail = ctx.data() + (ctx.size() - recent);
      static const suffix_index no_index;
      static const std::vector<std::size_t> one_segment = {0};
      suffix_corpus own;
      own.ids = ctx.data();
      own.n = ctx.size();
      own.seg_starts = &one_segment;
      own.index = &no_index;
      if (options_.lookup_own) p.ids = anchorage::propose(own, tail, recent, want, suffix_query_options{});
      p.from = draft_kind::lookup;
      cut_at_foreign_id(p.ids, e.config().vocab);
      if (p.ids.empty() && store_ != nullptr) {
        p.ids = store_->propose(tail, recent, want);
        p.from = draft_kind::store;
        cut_at_foreign_id(p.ids, e.config().vocab);
      }
      if (!p.ids.empty()) return p;
    }
  }
  if (options_.uses_mtp()) {
    const int k = mtp_len_.next();
    if (k > 0) {
      p.ids = e.draft(output.back(), static_cast<int>(std::min(room, static_cast<std::size_t>(k))), allowed);
      p.from = draft_kind::mtp;
      if (!p.ids.empty()) return p;
    }
  }
  return draft_proposal{};
}

void drafter::settle(const draft_proposal& p, std::size_t accepted) {
  if (p.ids.empty()) {
    ++counters_.plain_steps;
    return;
  }
  ++counters_.rounds;
  drafter_counters& c = counters_.of(p.from);
  ++c.rounds;
  c.drafted += p.ids.size();
  c.accepted += accepted;
  const int drafted = static_cast<int>(p.ids.size()), ok = static_cast<int>(accepted);
  const long before = lookup_len_.pauses() + mtp_len_.pauses();
  if (p.from == draft_kind::lookup || p.from == draft_kind::store) lookup_len_.settle(drafted, ok);
  if (p.from == draft_kind::mtp) mtp_len_.settle(drafted, ok);
  counters_.pauses += static_cast<std::uint64_t>(lookup_len_.pauses() + mtp_len_.pauses() - before);
}

}  // namespace anchorage
