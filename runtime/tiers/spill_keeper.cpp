#include "runtime/tiers/spill_keeper.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "runtime/core/log.hpp"
#include "runtime/core/token_prefix.hpp"
#include "runtime/disk/rate_average.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/text/output/end_alignment.hpp"

namespace anchorage {
namespace {

spill_store_options store_options(const spill_options& o) {
  spill_store_options s;
  s.dir = o.dir;
  s.budget_bytes = o.budget_bytes;
  return s;
}

end_record record_of(const spill_manifest& m, const tokenizer& tok) {
  end_record r;
  r.rows.assign(m.tokens.begin(), m.tokens.begin() + static_cast<long>(m.end->at));
  r.prompt_len = m.end->prompt_len;
  r.reasoning = m.end->reasoning;
  r.hidden = m.end->hidden;
  r.answers = m.end->answers;
  r.pending = m.end->pending;
  r.tok = tok;
  return r;
}

}  // namespace

spill_keeper::spill_keeper(std::unique_ptr<file_env> env, const state_layout& layout, spill_options opts,
                           tokenizer tok)
    : env_(std::move(env)),
      layout_(layout),
      opts_(std::move(opts)),
      tok_(std::move(tok)),
      store_(*env_, layout_, store_options(opts_)) {}

spill_write_report spill_keeper::committed(spill_job& job) {
  in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                  [&job](const std::weak_ptr<const spill_job>& w) {
                                    auto p = w.lock();
                                    return !p || p.get() == &job;
                                  }),
                   in_flight_.end());
  const std::uint64_t held = job.image.staged_bytes();
  staged_ -= std::min(staged_, held);
  spill_write_report r = store_.commit(job.image, job.plan, job.results);
  if (!r.failed && !r.refused && r.bytes_written > 0 && job.write_s > 0) {
    write_bps_ = blend_rate(write_bps_, static_cast<double>(r.bytes_written) / job.write_s);
    counts_.last_write.seconds = job.write_s;
    counts_.last_write.bytes = r.bytes_written;
  }
  if (r.failed) log_warn() << "a session spill failed (" << r.error << "); the previous spill stays";
  // The staged bytes are no longer needed.
  job.image.blocks.clear();
  job.image.anchors.clear();
  return r;
}

std::optional<spill_offer> spill_keeper::offer(const std::vector<token_id>& prompt, std::size_t floor,
                                               double prefill_tokens_per_s, bool end_anchor, bool end_align,
                                               std::size_t* declined_at) const {
  if (prompt.empty()) return std::nullopt;
  std::optional<spill_offer> best;
  for (const spill_manifest* m : store_.manifests()) {
    const std::size_t shared = common_prefix(m->tokens, prompt);
    if (shared == 0) continue;
    const std::size_t limit = std::min({shared, prompt.size() - 1, m->taint});
    std::optional<resume_offer> o;
    for (const spill_anchor_ref& a : m->anchors)
      if (!a.end && a.at > 0 && a.at <= limit && (!o || a.at > o->at)) {
        resume_offer g;
        g.source = cache_source::spill;
        g.at = a.at;
        g.served = prompt;
        g.exact_to = a.at;
        o = std::move(g);
      }
    if (m->end && end_anchor && (!o || m->end->at > o->at)) {
      if (auto al = align_to_end(record_of(*m, tok_), prompt, end_align)) {
        resume_offer e;
        e.source = cache_source::spill;
        e.at = m->end->at;
        e.served = std::move(al->served);
        e.exact = false;
        e.exact_to = std::min(m->taint, m->end->at);
        e.aligned = al->used_hidden || al->used_reasoning || al->used_whitespace || al->used_text;
        e.dropped = std::move(al->dropped);
        o = std::move(e);
      }
    }
    if (!o || o->at <= floor || (best && o->at <= best->offer.at)) continue;
    spill_offer s;
    s.id = m->id;
    s.read_bytes = store_.read_bytes(m->id);
    s.read_s = static_cast<double>(s.read_bytes) / read_rate();
    // Reading must cost less than the prefill it saves (an unmeasured prefill rate reads).
    const double prefill_s = prefill_tokens_per_s > 0
                                 ? static_cast<double>(o->at - floor) / prefill_tokens_per_s
                                 : std::numeric_limits<double>::infinity();
    if (s.read_s >= prefill_s) {
      if (declined_at) *declined_at = std::max(*declined_at, o->at);
      continue;
    }
    s.offer = std::move(*o);
    best = std::move(s);
  }
  return best;
}

bool spill_keeper::adopt(const fetched_spill& f) {
  std::string why;
  if (store_.adopt(f.id, f.manifest, f.written, why)) {
    log_info() << "session spill: a conversation fetched from the remote cache (" << f.written.size()
               << " files) is indexed";
    return true;
  }
  log_info() << "session spill: a conversation fetched from the remote cache was not taken (" << why << ")";
  return false;
}

expected<spill_read> spill_keeper::read(std::uint64_t id) {
  spill_fetch_ptr f = plan_fetch(id);
  if (!f) {
    ++counts_.read_failures;
    return status::failure("no spilled conversation is indexed under that id");
  }
  execute_spill_read(*env_, *f);
  return fetched(*f);
}

expected<spill_read> spill_keeper::fetched(spill_fetch& f) {
  const double read_s = f.read_s;
  auto got = store_.finish_read(f);
  if (!got) {
    ++counts_.read_failures;
    log_warn() << "a session spill read failed (" << got.error().error() << ")";
    return got;
  }
  counts_.last_read.seconds = read_s;
  counts_.last_read.bytes = got->bytes_read;
  if (counts_.last_read.seconds > 0)
    read_bps_ = blend_rate(read_bps_, static_cast<double>(got->bytes_read) / counts_.last_read.seconds);
  return got;
}

void spill_keeper::apply(const spill_read& got, state_adapter& into, kernels::backend where,
                         resident_prefix& r) {
  const spill_manifest& m = got.manifest;
  const state_layout& l = into.layout();
  const std::size_t n = m.tokens.size();
  if (got.row_bytes.size() != l.views.size() || got.blocks.size() != m.blocks.size() ||
      got.anchors.size() != m.anchors.size() || n > l.views.front().capacity)
    throw std::invalid_argument("the spilled conversation does not fit this engine");
  adopted_prompt p;
  // Everything that can throw (an allocation) before the first row is written.
  for (std::size_t i = 0; i < m.anchors.size(); ++i) {
    state_copy c = state_copy::from_sections(l, where, got.anchors[i]);
    if (m.anchors[i].end) {
      p.end_copy = std::move(c);
    } else {
      p.anchors.emplace(m.anchors[i].at, std::move(c));
    }
  }
  // Each block's rows straight from its read buffer (the manifest's blocks cover [0, n)).
  for (const auto& b : got.blocks)
    for (std::size_t v = 0; v < l.views.size(); ++v) into.copy_rows_in(v, b.a, b.b, b.rows[v]);
  into.set_valid_length(n);
  p.tokens = m.tokens;
  p.taint = m.taint;
  p.reasoning = m.reasoning;
  p.hidden = m.hidden;
  p.answers = m.answers;
  p.think_close = m.think_close;
  if (m.end) p.end = record_of(m, tok_);
  r.adopt(std::move(p));
}

std::size_t spill_keeper::in_flight_share(const std::vector<token_id>& prompt) const {
  std::size_t best = 0;
  for (const auto& w : in_flight_)
    if (auto j = w.lock()) best = std::max(best, common_prefix(j->image.manifest.tokens, prompt));
  return best;
}

bool spill_keeper::in_flight_session(const std::string& session) const {
  if (session.empty()) return false;
  for (const auto& w : in_flight_)
    if (auto j = w.lock(); j && j->image.manifest.session_key == session) return true;
  return false;
}

std::size_t spill_keeper::in_flight() const {
  std::size_t n = 0;
  for (const auto& w : in_flight_) n += w.expired() ? 0 : 1;
  return n;
}

std::vector<const spill_manifest*> spill_keeper::resident_manifests() const {
  std::vector<const spill_manifest*> out;
  for (const spill_manifest* m : store_.manifests())
    if (m->resident) out.push_back(m);
  std::sort(out.begin(), out.end(),
            [](const spill_manifest* a, const spill_manifest* b) { return a->sequence > b->sequence; });
  return out;
}

std::size_t spill_keeper::clear() { return store_.clear(); }

spill_tier_stats spill_keeper::stats() const {
  spill_tier_stats s = counts_;
  s.store = store_.stats();
  s.entries = store_.manifest_count();
  s.staged_bytes = staged_;
  s.in_flight = in_flight();
  s.stage_limit_bytes = opts_.stage_bytes;
  s.min_tokens = opts_.min_tokens;
  s.read_bytes_per_s = read_bps_;
  s.write_bytes_per_s = write_bps_;
  return s;
}

}  // namespace anchorage
