#include "actors/board.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include "runtime/clock.hpp"

namespace anchorage {
namespace {

generation_job to_generation_job(const board_job& j) {
  generation_job g;
  g.prompt.assign(j.prompt.begin(), j.prompt.end());
  g.gen.sampling.temperature = static_cast<float>(j.temperature);
  g.gen.sampling.top_p = static_cast<float>(j.top_p);
  g.gen.sampling.seed = j.seed;
  g.gen.max_tokens = static_cast<int>(j.max_tokens);
  g.gen.stop_tokens.assign(j.stop_tokens.begin(), j.stop_tokens.end());
  g.stop_strings = j.stop_strings;
  g.parse_reasoning = j.parse_reasoning;
  g.parse_tool_calls = j.parse_tool_calls;
  return g;
}

void fail(board_actor::stateful_pointer<board_state> self, const board_job& j, int status, const std::string& msg) {
  stream_event ev;
  ev.what = stream_event::kind::failed;
  ev.id = j.id;
  ev.error = api_error{status, status >= 500 ? "server_error" : "invalid_request_error", msg, ""};
  self->send(j.sink, std::move(ev));
  ledger_entry e;
  e.id = j.id;
  e.route = j.route;
  e.session_key = j.session_key;
  e.prompt_tokens = static_cast<long>(j.prompt.size());
  e.finish_reason = "error";
  self->send(self->state.conductor, done_atom::value, std::move(e));
}

void finish(board_actor::stateful_pointer<board_state> self) {
  auto& st = self->state;
  const auto& s = *st.session;
  const auto now = steady_ns();
  stream_event ev;
  ev.what = stream_event::kind::finished;
  ev.id = st.job.id;
  ev.finish_reason = s.finish_reason();
  ev.output = s.output();
  ev.prompt_tokens = s.prompt_tokens();
  ev.cache = st.job.cache;
  ev.cache.prefilled_tokens = s.prefilled_tokens();
  const std::int64_t first = st.first_token_ns ? st.first_token_ns : now;
  ev.cache.ttft_ms = static_cast<double>(first - st.job.received_ns) / 1e6;
  ev.usage = usage_info{s.prompt_tokens(), s.output_tokens(), s.prompt_tokens() - s.prefilled_tokens()};
  auto& l = ev.ledger;
  l.id = st.job.id;
  l.session_key = st.job.session_key;
  l.route = st.job.route;
  l.prompt_tokens = s.prompt_tokens();
  l.source = ev.cache.source;
  l.resumed_at = ev.cache.resumed_at;
  l.prefilled = s.prefilled_tokens();
  l.restore_ms = ev.cache.restore_ms;
  l.ttft_ms = ev.cache.ttft_ms;
  l.total_ms = static_cast<double>(now - st.job.received_ns) / 1e6;
  l.output_tokens = s.output_tokens();
  l.finish_reason = s.finish_reason();
  l.seed = st.job.seed;
  self->send(st.conductor, done_atom::value, l);
  self->send(st.job.sink, std::move(ev));
  st.session.reset();
  st.job = board_job{};
}

}  // namespace

board_actor::behavior_type board(board_actor::stateful_pointer<board_state> self,
                                 std::shared_ptr<engine> eng, int decode_block, done_receiver conductor) {
  self->state.eng = std::move(eng);
  self->state.decode_block = decode_block;
  self->state.conductor = std::move(conductor);
  return {
      [=](run_atom, board_job& j) {
        auto& st = self->state;
        if (st.session) return fail(self, j, 503, "the board is busy");
        // No tier restores anything yet: every request starts cold.
        st.eng->reset();
        try {
          st.session = std::make_unique<generation_session>(*st.eng, to_generation_job(j));
        } catch (const std::exception& e) {
          return fail(self, j, 400, e.what());
        }
        st.job = std::move(j);
        st.first_token_ns = 0;
        auto early = std::find(st.early_cancels.begin(), st.early_cancels.end(), st.job.id);
        if (early != st.early_cancels.end()) {
          st.early_cancels.erase(early);
          st.session->cancel();
        }
        self->send(self, step_atom::value);
      },
      [=](step_atom) {
        auto& st = self->state;
        if (!st.session) return;
        ++st.steps;
        auto r = st.session->step(st.decode_block);
        if (st.session->prefilling() || r.prefill_finished) {
          stream_event ev;
          ev.what = stream_event::kind::progress;
          ev.id = st.job.id;
          ev.prompt_tokens = st.session->prompt_tokens();
          ev.done_tokens = static_cast<long>(st.eng->length());
          self->send(st.job.sink, std::move(ev));
        }
        if (r.tokens > 0 && st.first_token_ns == 0) st.first_token_ns = steady_ns();
        if (!r.deltas.empty()) {
          stream_event ev;
          ev.what = stream_event::kind::delta;
          ev.id = st.job.id;
          ev.deltas = std::move(r.deltas);
          self->send(st.job.sink, std::move(ev));
        }
        if (st.session->done()) return finish(self);
        self->send(self, step_atom::value);
      },
      [=](cancel_atom, const std::string& id) {
        auto& st = self->state;
        if (st.session && st.job.id == id) return st.session->cancel();
        st.early_cancels.push_back(id);
        if (st.early_cancels.size() > 16) st.early_cancels.pop_front();
      },
  };
}

}  // namespace anchorage
