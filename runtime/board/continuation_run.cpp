#include "runtime/board/continuation_run.hpp"

#include <algorithm>

#include "runtime/compaction/compaction_plan.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {
namespace {

// The held conversation when it is not the one in place: the parked one, else the newest spilled
// one of this session, else of any session, whose record passes the guard; its tokens up to its
// end anchor.
std::optional<std::vector<token_id>> held_elsewhere(const slot_state& slot, const board_job& job,
                                                    const tokenizer& tok) {
  const compaction_plan& plan = *job.compaction();
  const resident_prefix& r = slot.tiers->resident();
  if (const saved_prompt* pk = r.saved(cache_via::park); pk && pk->end && !pk->end->rows.empty()) {
    if (compaction_guard_holds(plan, tok, pk->end->rows)) return pk->end->rows;
  }
  if (!slot.spill || !slot.tiers->spill()) return std::nullopt;
  const spill_manifest* best = nullptr;
  std::vector<token_id> best_rows;
  for (const spill_manifest* m : slot.spill->store().manifests()) {
    if (!m->end || m->end->at == 0 || m->end->at > m->tokens.size()) continue;
    if (!compaction_session_fits(job.session_key, m->session_key)) continue;
    const bool mine = m->session_key == job.session_key;
    if (best && (best->session_key == job.session_key) > mine) continue;
    if (best && (best->session_key == job.session_key) == mine && best->sequence >= m->sequence) continue;
    std::vector<token_id> rows(m->tokens.begin(), m->tokens.begin() + static_cast<long>(m->end->at));
    if (!compaction_guard_holds(plan, tok, rows)) continue;
    best = m;
    best_rows = std::move(rows);
  }
  if (!best) return std::nullopt;
  return best_rows;
}

}  // namespace

std::optional<continuation_choice> choose_continuation(const slot_state& slot, const board_job& job) {
  const compaction_plan& plan = *job.compaction();
  const resident_prefix& r = slot.tiers->resident();
  const end_record* e = r.end();
  const tokenizer tok = job.tok ? *job.tok : tokenizer();
  const bool held = e && !e->rows.empty() && r.tokens().size() >= e->rows.size() &&
                    std::equal(e->rows.begin(), e->rows.end(), r.tokens().begin());
  continuation_choice c;
  // The turn appended: plan.turn, or the client's unanswered last message and then plan.turn.
  std::optional<std::vector<token_id>> turn;
  if (held && compaction_session_fits(job.session_key, slot.end_session))
    turn = compaction_continuation(plan, tok, e->rows);
  c.in_place = turn.has_value();
  if (c.in_place) {
    c.end_rows = e->rows;
  } else if (auto elsewhere = held_elsewhere(slot, job, tok)) {
    turn = compaction_continuation(plan, tok, *elsewhere);
    c.end_rows = std::move(*elsewhere);
  }
  if (!turn || c.end_rows.size() + turn->size() + 1 >= slot.capacity()) return std::nullopt;
  c.turn = std::move(*turn);
  return c;
}

board_job continuation_job(board_job job, const std::vector<token_id>& end_rows, std::size_t capacity) {
  const compaction_plan& plan = *job.compaction();
  std::vector<token_id> p = end_rows;
  p.insert(p.end(), plan.turn.begin(), plan.turn.end());
  job.prompt.assign(p.begin(), p.end());
  job.rules.starts_in_reasoning = plan.starts_in_reasoning;
  job.rules.reasoning_budget = -1;
  job.sampling.max_tokens = std::min<long>(job.sampling.max_tokens, static_cast<long>(capacity - p.size()));
  return job;
}

continuation_run::continuation_run(slot_state& slot, board_job job, std::int64_t start_ns, bool in_place)
    : generation_run(slot, std::move(job), start_ns, std::nullopt), in_place_(in_place) {}

}  // namespace anchorage
