#include "runtime/suffix/suffix_view.hpp"

#include <utility>

namespace anchorage {

suffix_view::suffix_view() : base_(std::make_shared<const suffix_snapshot>()) {}

void suffix_view::install(std::shared_ptr<const suffix_snapshot> snapshot) {
  base_ = snapshot ? std::move(snapshot) : std::make_shared<const suffix_snapshot>();
  tail_.clear();
  seg_starts_ = base_->seg_starts;
}

bool suffix_view::extend(const suffix_delta& delta) {
  if (delta.generation != base_->generation || delta.at != ids() || delta.ids.empty()) return false;
  if (!delta.continues || ids() == 0) seg_starts_.push_back(ids());
  for (std::size_t s : delta.starts)
    if (s > 0 && s < delta.ids.size() && (seg_starts_.empty() || ids() + s > seg_starts_.back()))
      seg_starts_.push_back(ids() + s);
  tail_.insert(tail_.end(), delta.ids.begin(), delta.ids.end());
  return true;
}

suffix_corpus suffix_view::corpus() const {
  suffix_corpus c;
  c.ids = base_->ids->data();
  c.split = base_->ids->size();
  c.tail = tail_.data();
  c.n = ids();
  c.seg_starts = &seg_starts_;
  c.index = base_->index.get();
  return c;
}

suffix_match suffix_view::longest_match(const token_id* recent, std::size_t n, std::size_t min_len) {
  ++lookups_;
  suffix_match m = anchorage::longest_match(corpus(), recent, n, min_len, base_->query);
  if (m.length > 0) ++hits_;
  return m;
}

std::vector<token_id> suffix_view::propose(const token_id* recent, std::size_t n, std::size_t max_draft) {
  ++lookups_;
  std::vector<token_id> draft = anchorage::propose(corpus(), recent, n, max_draft, base_->query);
  if (!draft.empty()) ++hits_;
  return draft;
}

}  // namespace anchorage
