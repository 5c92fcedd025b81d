#include "runtime/disk/disk_tier.hpp"

#include <algorithm>

#include "runtime/io/clock.hpp"
#include "runtime/disk/disk_codec.hpp"

namespace anchorage {
namespace {

// An exponential average that takes its first sample whole.
double blend(double old, double sample) { return old == 0 ? sample : 0.7 * old + 0.3 * sample; }

// Sessions remembered for rule 2 (a session's first request); forgotten all at once past this.
constexpr std::size_t sessions_kept = 65536;

}  // namespace

disk_tier::disk_tier(file_env& env, const state_layout& layout, const eviction_clock& clock,
                     disk_tier_options options)
    : env_(env),
      layout_(layout),
      options_(std::move(options)),
      store_(env, layout_, clock, options_.store),
      admission_(options_.admission),
      grid_(static_cast<std::size_t>(layout.grid)) {}

disk_scan_report disk_tier::start() {
  disk_scan_report r = store_.scan();
  store_.evict_to_cap();  // a smaller budget or entries past their lifetime since the last run
  return r;
}

std::optional<disk_tier_offer> disk_tier::offer(const std::vector<token_id>& prompt, std::size_t floor) {
  const auto hit = store_.find(prompt);
  if (!hit) {
    ++misses_;
    return std::nullopt;
  }
  if (hit->line <= floor) return std::nullopt;  // the tiers above start as late
  // Read only when it is faster than the prefill it saves (an unmeasured prefill: read).
  const double bps = read_bps_ > 0 ? read_bps_ : options_.assumed_read_bytes_per_s;
  const double read_s = static_cast<double>(hit->read_bytes) / bps;
  const double prefill_s = prefill_tps_ > 0 ? static_cast<double>(hit->line - floor) / prefill_tps_ : 1e300;
  if (read_s >= prefill_s) {
    ++declined_;
    return std::nullopt;
  }
  disk_tier_offer o;
  o.line = hit->line;
  o.read_bytes = hit->read_bytes;
  o.hit = *hit;
  return o;
}

bool disk_tier::restore(const disk_tier_offer& o, const std::vector<token_id>& prompt, state_adapter& into,
                        std::string& error) {
  // The anchor the offer found; the store checks it is still indexed.
  const std::int64_t t0 = steady_ns();
  const auto r = store_.restore(o.hit, prompt, into);
  const double s = static_cast<double>(steady_ns() - t0) / 1e9;
  if (!r) {
    error = r.error().error();
    ++restore_failures_;
    return false;
  }
  if (s > 0 && r->bytes_read > 0) read_bps_ = blend(read_bps_, static_cast<double>(r->bytes_read) / s);
  ++hits_;
  tokens_saved_ += static_cast<long long>(o.line);
  return true;
}

void disk_tier::begin(const disk_request& req) {
  drop_staging();
  plan_ = admission_plan{};
  passed_ = 0;
  last_step_ns_ = steady_ns();
  last_step_len_ = req.at;
  admission_request a;
  a.grid = grid_;
  a.resume = req.at;
  if (!req.exact) a.taint = req.at;  // a session resume's prefill writes nothing
  a.first_request = !req.session_key.empty() && sessions_seen_.count(req.session_key) == 0 &&
                    req.served.size() >= options_.admission.min_tokens;
  a.user_start = req.user_start;
  plan_ = admission_.plan(req.served, a);
  if (a.first_request) {
    if (sessions_seen_.size() >= sessions_kept) sessions_seen_.clear();
    sessions_seen_.insert(req.session_key);
  }
  if (plan_.writes_nothing()) return;
  anchors_planned_ += static_cast<long>(plan_.anchors.size());
  staging_ = std::make_unique<disk_job>();
  staging_->write.tokens.assign(req.served.begin(),
                                req.served.begin() + static_cast<long>(plan_.chunks.back()));
  staging_->write.chunks = plan_.chunks;
}

void disk_tier::after_prefill_step(const state_adapter& state) {
  const std::size_t len = state.valid_length();
  // The prefill rate, from the chunks this prefill ran.
  const std::int64_t now = steady_ns();
  if (len > last_step_len_ && now > last_step_ns_)
    prefill_tps_ = blend(prefill_tps_, static_cast<double>(len - last_step_len_) * 1e9 /
                                           static_cast<double>(now - last_step_ns_));
  last_step_ns_ = now;
  last_step_len_ = len;
  if (!staging_ || len % grid_ != 0) return;
  passed_ = std::max(passed_, len);
  if (std::binary_search(plan_.anchors.begin(), plan_.anchors.end(), len)) {
    const std::uint64_t need = staged_section_bytes(layout_);
    if (staged_bytes_ + staging_->staged_bytes + need > options_.stage_bytes) {
      ++stage_refusals_;  // this anchor is not written; the chunks still are
    } else {
      staging_->write.anchors.push_back(stage_sections(state, len));
      staging_->staged_bytes += need;
    }
  }
  if (len >= plan_.chunks.back()) stage_rows_and_queue(state, plan_.chunks.back());
}

void disk_tier::finish(const state_adapter& state) {
  if (!staging_) return;
  // A prefill cut short: the lines it passed (their rows are still the engine's).
  std::size_t top = 0;
  for (std::size_t b : plan_.chunks)
    if (b <= passed_ && b <= state.valid_length()) top = b;
  if (top == 0) return drop_staging();
  stage_rows_and_queue(state, top);
}

void disk_tier::stage_rows_and_queue(const state_adapter& state, std::size_t top) {
  staged_write& w = staging_->write;
  w.chunks.erase(std::remove_if(w.chunks.begin(), w.chunks.end(), [top](std::size_t b) { return b > top; }),
                 w.chunks.end());
  w.anchors.erase(std::remove_if(w.anchors.begin(), w.anchors.end(),
                                 [top](const staged_anchor& a) { return a.line > top; }),
                  w.anchors.end());
  w.tokens.resize(std::min(w.tokens.size(), top));
  // Only the rows of chunks the disk does not hold yet are copied.
  std::size_t lo = top;
  for (std::size_t b : w.chunks)
    if (!store_.has_chunk(prefix_hash(w.tokens.data(), b))) {
      lo = b - grid_;
      break;
    }
  std::uint64_t need = staged_row_bytes(layout_, lo, top);
  if (staged_bytes_ + staging_->staged_bytes + need > options_.stage_bytes) {
    // What fits: the lines up to the highest whose rows the pool can take (the chain below
    // stays usable); anchors above it go.
    ++stage_refusals_;
    const std::uint64_t used = staged_bytes_ + staging_->staged_bytes;
    const std::uint64_t room = options_.stage_bytes > used ? options_.stage_bytes - used : 0;
    const std::size_t row_bytes = std::max<std::size_t>(1, layout_.row_bytes());
    const std::size_t fit = lo + static_cast<std::size_t>(room / row_bytes) / grid_ * grid_;
    if (fit <= lo) return drop_staging();
    top = std::min(top, fit);
    w.chunks.erase(std::remove_if(w.chunks.begin(), w.chunks.end(), [top](std::size_t b) { return b > top; }),
                   w.chunks.end());
    const std::size_t before = w.anchors.size();
    w.anchors.erase(std::remove_if(w.anchors.begin(), w.anchors.end(),
                                   [top](const staged_anchor& a) { return a.line > top; }),
                    w.anchors.end());
    staging_->staged_bytes -= (before - w.anchors.size()) * staged_section_bytes(layout_);
    w.tokens.resize(top);
    need = staged_row_bytes(layout_, lo, top);
  }
  stage_rows(w, state, lo, top);
  staging_->staged_bytes += need;
  staging_->plan = store_.prepare(w);
  if (staging_->plan.files.empty()) {
    store_.commit(w, staging_->plan, {});
    return drop_staging();
  }
  staged_bytes_ += staging_->staged_bytes;
  ++jobs_;
  ready_.push_back(std::shared_ptr<disk_job>(staging_.release()));
}

void disk_tier::drop_staging() { staging_.reset(); }

bool disk_tier::stage_checkpoint(const state_adapter& state, const checkpoint_meta& meta) {
  const std::size_t rows = state.valid_length();
  if (meta.tokens.size() != rows + 1) return false;
  const std::uint64_t need = staged_row_bytes(layout_, 0, rows) + staged_section_bytes(layout_);
  if (staged_bytes_ + need > options_.stage_bytes) {
    ++stage_refusals_;
    return false;
  }
  auto job = std::make_shared<disk_job>();
  job->write.tokens = meta.tokens;
  stage_rows(job->write, state, 0, rows);
  job->write.anchors.push_back(stage_sections(state, rows));
  job->plan = store_.prepare_checkpoint(job->write, meta);
  if (job->plan.files.empty()) return false;
  job->staged_bytes = need;
  staged_bytes_ += need;
  ++checkpoints_staged_;
  finished_keys_.erase(meta.key_hash);
  ready_.push_back(std::move(job));
  return true;
}

void disk_tier::generation_finished(std::uint64_t key_hash) {
  store_.remove_checkpoints(key_hash);
  if (finished_keys_.size() >= 4096) finished_keys_.clear();
  finished_keys_.insert(key_hash);
}

void disk_tier::generation_started(std::uint64_t key_hash) { finished_keys_.erase(key_hash); }

std::vector<std::shared_ptr<disk_job>> disk_tier::take_jobs() {
  std::vector<std::shared_ptr<disk_job>> out;
  out.swap(ready_);
  return out;
}

void disk_tier::written(const disk_job& job) {
  store_.commit(job.write, job.plan, job.results);
  staged_bytes_ -= std::min(staged_bytes_, job.staged_bytes);
  // A checkpoint that was in flight when its generation ended is not wanted.
  if (job.plan.checkpoint && finished_keys_.count(job.plan.checkpoint->key_hash) != 0)
    store_.remove_checkpoints(job.plan.checkpoint->key_hash);
  store_.evict_to_cap();
}

void disk_tier::run_jobs() {
  for (auto& j : take_jobs()) {
    j->results = execute_disk_write(env_, layout_, j->write, j->plan);
    written(*j);
  }
}

std::size_t disk_tier::clear() {
  drop_staging();
  plan_ = admission_plan{};
  admission_.clear();
  sessions_seen_.clear();
  // Jobs not handed out yet are dropped with their in-flight marks.
  for (auto& j : take_jobs()) {
    store_.commit(j->write, j->plan, {});
    staged_bytes_ -= std::min(staged_bytes_, j->staged_bytes);
  }
  return store_.clear();
}

nlohmann::json disk_tier::stats() const {
  nlohmann::json j = store_.stats();
  j["hits"] = hits_;
  j["misses"] = misses_;
  j["declined"] = declined_;
  j["restore_failures"] = restore_failures_;
  j["tokens_saved"] = tokens_saved_;
  j["jobs"] = jobs_;
  j["anchors_planned"] = anchors_planned_;
  j["stage_refusals"] = stage_refusals_;
  j["staged_bytes"] = staged_bytes_;
  j["stage_limit_bytes"] = options_.stage_bytes;
  j["read_bytes_per_s"] = read_bps_;
  j["prefill_tokens_per_s"] = prefill_tps_;
  j["min_tokens"] = options_.admission.min_tokens;
  j["checkpoints_staged"] = checkpoints_staged_;
  j["checkpoint_tokens"] = options_.checkpoint_tokens;
  return j;
}

}  // namespace anchorage
