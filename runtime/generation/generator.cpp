#include "runtime/generation/generator.hpp"

#include <algorithm>
#include <stdexcept>

namespace anchorage {

generator::generator(engine& e, generation_request r)
    : engine_(e),
      req_(std::move(r)),
      step_(req_.first_step),
      pending_(req_.pending),
      forced_(req_.forced.begin(), req_.forced.end()) {
  if (req_.max_tokens <= 0) reason_ = run_finish::length;
}

void generator::force(const std::vector<token_id>& tokens) {
  if (done()) return;
  forced_.insert(forced_.end(), tokens.begin(), tokens.end());
}

std::optional<token_id> generator::step() {
  if (done()) return std::nullopt;
  if (pending_) {
    if (engine_.length() >= static_cast<std::size_t>(engine_.config().ctx_size)) {
      reason_ = run_finish::length;  // no room to forward it
      return std::nullopt;
    }
    engine_.decode(*pending_);
  }
  return emit(engine_.last_logits());
}

std::optional<token_id> generator::to_forward() const {
  if (done() || !pending_) return std::nullopt;
  if (engine_.length() >= static_cast<std::size_t>(engine_.config().ctx_size)) return std::nullopt;
  return pending_;
}

std::optional<token_id> generator::step_forwarded() { return step_forwarded(engine_.last_logits()); }

std::optional<token_id> generator::step_forwarded(const std::vector<float>& logits) {
  if (done()) return std::nullopt;
  return emit(logits);
}

// The step's second half: the next token made pending and emitted.
std::optional<token_id> generator::emit(const std::vector<float>& logits) {
  token_id t = 0;
  last_forced_ = !forced_.empty();
  if (last_forced_) {
    t = forced_.front();
    forced_.pop_front();
    pending_ = t;
  } else {
    if (logits.empty()) throw std::logic_error("generate before any forward");
    t = sample_token(logits, req_.sampling, step_);
    ++step_;
    pending_ = t;
    if (std::find(req_.stop_tokens.begin(), req_.stop_tokens.end(), t) != req_.stop_tokens.end()) {
      reason_ = run_finish::stop;
      return std::nullopt;
    }
  }
  if (++emitted_ >= req_.max_tokens) reason_ = run_finish::length;
  return t;
}

std::vector<token_id> generator::run() {
  std::vector<token_id> out;
  while (!done())
    if (auto t = step()) out.push_back(*t);
  return out;
}

}  // namespace anchorage
