#include "runtime/board/compaction_prewrites.hpp"

#include <algorithm>

namespace anchorage {

void compaction_prewrites::put(prewritten_summary s) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const prewritten_summary& e) { return e.session_key == s.session_key; }),
                 entries_.end());
  entries_.push_back(std::move(s));
  while (entries_.size() > capacity_) entries_.erase(entries_.begin());
}

const prewritten_summary* compaction_prewrites::find(const std::string& session_key,
                                                     const std::vector<token_id>& end_rows,
                                                     const std::vector<token_id>& turn) const {
  for (const auto& e : entries_)
    if (e.session_key == session_key && e.end_rows == end_rows && e.turn == turn) return &e;
  return nullptr;
}

bool compaction_prewrites::answers(const prewritten_summary& s, const board_job& job) {
  if (job.sampling.temperature != s.temperature || job.sampling.top_p != s.top_p) return false;
  if (job.sampling.seed_explicit && job.sampling.seed != s.seed) return false;
  if (!job.sampling.logit_bias.empty() || !job.rules.stop_strings.empty()) return false;
  const auto n = static_cast<long>(s.output.size());
  if (s.finish_reason == run_finish::stop) return n <= job.sampling.max_tokens;
  return job.sampling.max_tokens <= n;
}

}  // namespace anchorage
