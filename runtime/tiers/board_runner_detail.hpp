#pragma once
// What the board runner's files share (board_runner.cpp, board_runner_response.cpp).
#include "protocol/board_job.hpp"
#include "runtime/generation/generation_session.hpp"

namespace anchorage {

// The session's job for a board job: its tokenizer, prompt, sampling, limits and what is parsed.
generation_job to_generation_job(const board_job& j);

}  // namespace anchorage
