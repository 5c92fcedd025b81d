#pragma once
// What the board runner's files share (board_runner.cpp, board_runner_checkpoint.cpp,
// board_runner_compaction.cpp, board_runner_response.cpp).
#include <algorithm>

#include "protocol/board_job.hpp"
#include "runtime/core/log.hpp"
#include "runtime/tiers/board_runner.hpp"
#include "runtime/generation/generation_session.hpp"

namespace anchorage {

// The session's job for a board job: its tokenizer, prompt, sampling, limits and what is parsed.
generation_job to_generation_job(const board_job& j);

// What the tiers are told of a request before it runs.
inline request_info info_of(const board_job& j) {
  request_info info;
  info.session_key = j.session_key;
  info.max_tokens = static_cast<std::size_t>(std::max(0L, j.max_tokens));
  if (j.reasoning_budget >= 0) info.hidden_reserve = reasoning_close_length(j.tok ? *j.tok : tokenizer());
  if (j.user_start >= 0) info.user_start = static_cast<std::size_t>(j.user_start);
  return info;
}

// A tier call that throws is a refusal: the request goes on (see board_runner.hpp).
template <class F>
void board_runner::guarded(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    log_warn() << "a cache tier failed (" << e.what() << "); the resident prefix is dropped";
    tiers_->clear(cache_tier::resident);
  }
}

}  // namespace anchorage
