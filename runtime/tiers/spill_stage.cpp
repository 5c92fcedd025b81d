// The spill keeper's staging (docs/SPILL.md, "Staging"): a conversation in a slot becomes a
// spill_image. Every block and anchor is named by sums computed where its bytes live (the
// engine's buffers, a parked copy), and only what the store does not hold is copied to host
// memory, after the staging budget was checked.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "kernels/device.hpp"
#include "runtime/core/log.hpp"
#include "runtime/core/token_prefix.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/spill/spill_codec.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

namespace {

spill_anchor_ref anchor_ref(const state_copy& c, const std::vector<token_id>& tokens, std::size_t at,
                            bool end, std::size_t sections) {
  spill_anchor_ref a;
  a.at = at;
  a.end = end;
  for (std::size_t i = 0; i < sections; ++i) {
    std::uint64_t o[2];
    c.checksum_section(i, o);
    a.sums.push_back({o[0], o[1]});
  }
  a.name = spill_anchor_name(spill_prefix_hash(tokens.data(), at), at, end, a.sums);
  return a;
}

}  // namespace

// Where a conversation's rows and anchors are: rows below `copy->first()` (all of them without
// a copy) in the engine, the rest in the parked copy.
struct spill_keeper::conversation {
  const state_adapter* state = nullptr;
  const row_copy* copy = nullptr;
  kernels::backend where = kernels::backend::cpu;
  const std::vector<token_id>* tokens = nullptr;
  std::size_t taint = 0;
  const std::vector<token_span>*reasoning = nullptr, *hidden = nullptr, *answers = nullptr;
  token_id think_close = no_token;
  std::vector<std::pair<std::size_t, const state_copy*>> anchors;  // grid anchors, ascending
  const end_record* end = nullptr;
  const state_copy* end_copy = nullptr;
  std::string session;
  int slot = 0;
  bool resident = false;

  std::size_t split() const { return copy ? copy->first() : tokens->size(); }

  spill_sum sum(std::size_t v, std::size_t a, std::size_t b) const {
    std::uint64_t o[2] = {0, 0};
    const std::size_t from = split();
    if (b <= from) {
      state->checksum_rows(v, a, b, o);
      return {o[0], o[1]};
    }
    const state_layout& l = state->layout();
    if (a >= from) {
      copy->checksum(l, v, a, b, o);
      return {o[0], o[1]};
    }
    state->checksum_rows(v, a, from, o);
    const spill_sum first{o[0], o[1]};
    copy->checksum(l, v, from, b, o);
    return combine_sums(first, {o[0], o[1]}, (from - a) * l.views[v].bytes_per_token / 8);
  }

  void copy_out(std::size_t v, std::size_t a, std::size_t b, unsigned char* dst) const {
    const std::size_t from = split();
    const state_layout& l = state->layout();
    const std::size_t row = l.views[v].bytes_per_token;
    const std::size_t low = std::min(b, from);
    if (a < low) state->copy_rows_out(v, a, low, dst);
    if (b > from) {
      const std::size_t lo = std::max(a, from);
      kernels::device_sync(where);
      std::memcpy(dst + (lo - a) * row, copy->view_rows(l, v) + (lo - from) * row, (b - lo) * row);
    }
  }

  // The manifest: what the conversation is, and every block and anchor named by the sums of its
  // bytes where they live (nothing is copied).
  spill_manifest manifest(const state_layout& l) const {
    const std::size_t n = tokens->size();
    const auto grid = static_cast<std::size_t>(l.grid);
    spill_manifest m;
    m.id = spill_conversation_id(session, *tokens, grid);
    m.session_key = session;
    m.tokens = *tokens;
    m.taint = std::min(taint, n);
    m.reasoning = *reasoning;
    m.hidden = *hidden;
    m.answers = *answers;
    m.think_close = think_close;
    m.resident = resident;
    m.slot = slot;
    m.sequence = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
    for (std::size_t a = 0; a < n; a += grid) {
      spill_block_ref b;
      b.a = a;
      b.b = std::min(n, a + grid);
      for (std::size_t v = 0; v < l.views.size(); ++v) b.sums.push_back(sum(v, b.a, b.b));
      b.name = spill_block_name(spill_prefix_hash(tokens->data(), b.b), b.a, b.b, b.sums);
      m.blocks.push_back(std::move(b));
    }
    for (const auto& [at, c] : anchors)
      m.anchors.push_back(anchor_ref(*c, *tokens, at, false, l.sections.size()));
    if (holds_end()) {
      spill_end e;
      e.at = end->rows.size();
      e.prompt_len = end->prompt_len;
      e.pending = end->pending;
      e.reasoning = end->reasoning;
      e.hidden = end->hidden;
      e.answers = end->answers;
      m.end = std::move(e);
      m.anchors.push_back(anchor_ref(*end_copy, *tokens, m.end->at, true, l.sections.size()));
    }
    return m;
  }

  // The end anchor is kept: its copy is there and its rows are the conversation's head.
  bool holds_end() const {
    return end && end_copy && !end_copy->empty() && end->rows.size() <= tokens->size() &&
           std::equal(end->rows.begin(), end->rows.end(), tokens->begin());
  }

  // The copies behind manifest()'s anchors, in its order.
  std::vector<const state_copy*> anchor_copies() const {
    std::vector<const state_copy*> out;
    for (const auto& [at, c] : anchors) out.push_back(c);
    if (holds_end()) out.push_back(end_copy);
    return out;
  }

  // Block `i` of the manifest (`b`) copied to host memory.
  spill_staged_block staged_block(const state_layout& l, std::size_t i, const spill_block_ref& b) const {
    spill_staged_block s;
    s.index = i;
    for (std::size_t v = 0; v < l.views.size(); ++v) {
      s.rows.emplace_back((b.b - b.a) * l.views[v].bytes_per_token);
      copy_out(v, b.a, b.b, s.rows.back().data());
    }
    return s;
  }
};

spill_job_ptr spill_keeper::stage(const conversation& c, const std::string& why) {
  const state_layout& l = layout_;
  const std::size_t n = c.tokens->size();
  if (n == 0 || l.grid <= 0) return nullptr;
  spill_image img;
  img.manifest = c.manifest(l);  // names first (sums where the bytes are)
  spill_manifest& m = img.manifest;
  // Then the bytes of what the store lacks.
  std::uint64_t need = 0;
  std::vector<std::size_t> new_blocks, new_anchors;
  for (std::size_t i = 0; i < m.blocks.size(); ++i)
    if (!store_.has_block(m.blocks[i].name)) {
      new_blocks.push_back(i);
      need += (m.blocks[i].b - m.blocks[i].a) * l.row_bytes();
    }
  const std::vector<const state_copy*> anchor_copies = c.anchor_copies();
  for (std::size_t i = 0; i < m.anchors.size(); ++i)
    if (!store_.has_anchor(m.anchors[i].name)) {
      new_anchors.push_back(i);
      need += l.section_bytes();
    }
  // Budgets before copying (invariant 6): the host staging and the spill's own.
  if (staged_ + need > opts_.stage_bytes || need > store_.max_bytes()) {
    ++counts_.stage_refusals;
    log_warn() << "the session spill refused " << n << " tokens (" << need << " bytes to stage, " << staged_
               << " staged, staging limit " << opts_.stage_bytes << ", spill budget " << store_.max_bytes()
               << ")";
    return nullptr;
  }
  for (std::size_t i : new_blocks) img.blocks.push_back(c.staged_block(l, i, m.blocks[i]));
  if (!new_anchors.empty()) kernels::device_sync(c.where);
  for (std::size_t i : new_anchors) {
    spill_staged_anchor s;
    s.index = i;
    for (std::size_t k = 0; k < l.sections.size(); ++k) {
      const unsigned char* p = anchor_copies[i]->section_data(k);
      s.sections.emplace_back(p, p + l.sections[k].bytes);
    }
    img.anchors.push_back(std::move(s));
  }
  // A conversation that did not change since its last spill keeps that spill's time, so its
  // manifest is the same bytes and nothing at all is written.
  if (const spill_manifest* old = store_.find(m.id); old && new_blocks.empty() && new_anchors.empty()) {
    spill_manifest same = m;
    same.sequence = old->sequence;
    if (encode_spill_manifest(l, same) == encode_spill_manifest(l, *old)) m.sequence = old->sequence;
  }
  counts_.blocks_staged += static_cast<long>(new_blocks.size());
  counts_.blocks_skipped_on_device += static_cast<long>(m.blocks.size() - new_blocks.size());
  auto job = std::make_shared<spill_job>();
  job->image = std::move(img);
  job->why = why;
  job->staged_ns = steady_ns();
  job->plan = store_.prepare(job->image);
  if (job->plan.refused) {
    ++counts_.spill_refusals;
    log_warn() << "the session spill refused a conversation of " << n << " tokens (" << job->plan.error
               << ")";
    store_.commit(job->image, job->plan, {});
    return nullptr;
  }
  staged_ += job->image.staged_bytes();
  ++counts_.spills;
  in_flight_.push_back(job);
  return job;
}

spill_job_ptr spill_keeper::stage_resident(const resident_prefix& r, const state_adapter& state,
                                           kernels::backend where, const std::string& session, int slot,
                                           bool resident, const std::string& why) {
  conversation c;
  c.state = &state;
  c.where = where;
  c.tokens = &r.tokens();
  c.taint = r.taint();
  c.reasoning = &r.reasoning();
  c.hidden = &r.hidden();
  c.answers = &r.answers();
  c.think_close = r.think_close();
  // The newest 4 grid anchors (the next turn resumes near the end). The anchors right after an
  // image stay behind: the spill's format keeps anchors on lines (docs/SPILL_FORMAT.md).
  const std::size_t grid = static_cast<std::size_t>(std::max(1, state.layout().grid));
  std::vector<std::pair<std::uint64_t, std::size_t>> by_age;
  for (const auto& [pos, stamp] : r.anchors().positions())
    if (pos <= r.taint() && pos <= r.tokens().size() && pos % grid == 0) by_age.emplace_back(stamp, pos);
  std::sort(by_age.begin(), by_age.end(), std::greater<>());
  if (by_age.size() > 4) by_age.resize(4);
  std::vector<std::size_t> chosen;
  for (const auto& [stamp, pos] : by_age) chosen.push_back(pos);
  std::sort(chosen.begin(), chosen.end());
  for (std::size_t pos : chosen)
    if (const state_copy* cp = r.anchors().at(pos)) c.anchors.emplace_back(pos, cp);
  c.end = r.end();
  c.end_copy = &r.end_copy();
  c.session = session;
  c.slot = slot;
  c.resident = resident;
  if (r.tokens().size() > state.layout().views.front().capacity) return nullptr;
  return stage(c, why);
}

spill_job_ptr spill_keeper::stage_parked(const resident_prefix& r, const state_adapter& state,
                                         kernels::backend where, const std::string& session, int slot,
                                         const std::string& why) {
  const saved_prompt* s = r.saved(cache_via::park);
  if (!s || s->rows.empty()) return nullptr;
  const std::size_t from = s->rows.first();
  // Its rows below `from` are the ones in place: they must still hold its tokens, a cold
  // prefill's bits.
  if (from > r.taint() || common_prefix(r.tokens(), s->tokens) < from || s->rows.last() != s->tokens.size())
    return nullptr;
  conversation c;
  c.state = &state;
  c.copy = &s->rows;
  c.where = where;
  c.tokens = &s->tokens;
  c.taint = s->taint;
  c.reasoning = &s->reasoning;
  c.hidden = &s->hidden;
  c.answers = &s->answers;
  c.think_close = r.think_close();
  const std::size_t grid = static_cast<std::size_t>(std::max(1, state.layout().grid));
  for (const auto& [pos, copy] : s->anchors)
    if (pos % grid == 0) c.anchors.emplace_back(pos, &copy);  // lines only, as stage_resident
  c.end = s->end ? &*s->end : nullptr;
  c.end_copy = &s->end_copy;
  c.session = session;
  c.slot = slot;
  return stage(c, why);
}

}  // namespace anchorage
