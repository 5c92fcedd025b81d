#include "runtime/suffix/suffix_feed.hpp"

#include <utility>

namespace anchorage {

suffix_feed::suffix_feed(suffix_store_options options)
    : store_(options), query_(options.query), rebuilds_seen_(store_.stats().rebuilds) {}

std::shared_ptr<const suffix_snapshot> suffix_feed::snapshot() {
  auto s = std::make_shared<suffix_snapshot>();
  s->generation = ++generation_;
  s->ids = std::make_shared<const std::vector<token_id>>(store_.ids());
  s->seg_starts = store_.segment_starts();
  s->index = store_.index();
  s->query = query_;
  rebuilds_seen_ = store_.stats().rebuilds;
  return s;
}

suffix_feed_out suffix_feed::add(const std::vector<token_id>& tokens) {
  suffix_feed_out out;
  const std::size_t before = store_.ids().size();
  out.report = store_.add(tokens);
  // A rebuild (in batches, or after a forget) makes the readers' snapshot stale.
  if (store_.stats().rebuilds != rebuilds_seen_) {
    out.snapshot = snapshot();
    return out;
  }
  if (out.report.appended == 0) return out;
  auto d = std::make_shared<suffix_delta>();
  d->generation = generation_;
  d->at = before;
  d->continues = out.report.continued;
  const auto& ids = store_.ids();
  d->ids.assign(ids.end() - static_cast<std::ptrdiff_t>(out.report.appended), ids.end());
  // The segments the add started past its first id (it cut the request at an image's rows).
  const auto& starts = store_.segment_starts();
  auto first = starts.end();
  while (first != starts.begin() && *(first - 1) > before) --first;
  for (auto it = first; it != starts.end(); ++it) d->starts.push_back(*it - before);
  out.delta = std::move(d);
  return out;
}

suffix_feed_out suffix_feed::clear(bool* ok) {
  const status s = store_.clear();
  if (ok) *ok = static_cast<bool>(s);
  suffix_feed_out out;
  out.snapshot = snapshot();
  return out;
}

}  // namespace anchorage
