#include "runtime/disk/disk_service.hpp"

#include <algorithm>
#include <utility>

#include "runtime/disk/rate_average.hpp"
#include "runtime/core/log.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_scanner.hpp"
#include "runtime/io/clock.hpp"

namespace anchorage {
namespace {

// Sessions remembered for admission's first-request rule; forgotten all at once past this.
constexpr std::size_t sessions_kept = 65536;
// Ended generations remembered, so a checkpoint still out when its generation ended is dropped.
constexpr std::size_t finished_kept = 4096;

}  // namespace

disk_service::disk_service(file_env& env, const state_layout& layout, const eviction_clock& clock,
                           disk_tier_options options)
    : env_(env),
      layout_(layout),
      options_(std::move(options)),
      store_(env, layout_, clock, options_.store),
      admission_(options_.admission),
      grid_(static_cast<std::size_t>(layout.grid)) {}

disk_scan_report disk_service::start() {
  const std::int64_t began = steady_ns();
  disk_scan_report r = store_.scan();
  r.evicted = store_.evict_to_cap();
  ++generation_;
  constexpr std::size_t foreign_limit = std::size_t{1} << 20;
  const auto foreign = other_engines_chunks(env_, options_.store.dir, layout_.fingerprint, foreign_limit);
  foreign_chunks_ = std::unordered_set<std::uint64_t>(foreign.begin(), foreign.end());
  if (!foreign_chunks_.empty())
    log_info() << "disk tier: " << foreign_chunks_.size() << " chunks of other engines under "
               << options_.store.dir << " (kept; counted as other_fingerprint when a prompt needs them)";
  log_info() << "disk tier in " << store_.folder() << ": " << r.indexed << " files indexed, " << r.tmp_reaped
             << " unfinished writes reaped, " << r.foreign_swept << " of another engine swept, "
             << r.damaged_removed << " damaged removed, " << r.evicted << " evicted to the limits";
  r.seconds = static_cast<double>(steady_ns() - began) / 1e9;
  sweep_ = r;
  return r;
}

// ---- Reads --------------------------------------------------------------------------------------

disk_offer_reply disk_service::offer(const std::vector<token_id>& prompt, std::size_t floor,
                                     double prefill_tokens_per_s) {
  disk_offer_reply reply;
  const auto hit = store_.find(prompt);
  reply.foreign_line = foreign_line(prompt, std::max(floor, hit ? hit->line : 0));
  if (!hit) {
    ++misses_;
    return reply;
  }
  if (hit->line <= floor) return reply;  // the tiers above start as late
  const double bps = read_bps_ > 0 ? read_bps_ : options_.assumed_read_bytes_per_s;
  const double read_s = static_cast<double>(hit->read_bytes) / bps;
  const double prefill_s =
      prefill_tokens_per_s > 0 ? static_cast<double>(hit->line - floor) / prefill_tokens_per_s : 1e300;
  if (read_s >= prefill_s) {
    ++declined_;
    reply.declined_line = hit->line;
    return reply;
  }
  disk_offer o;
  o.ns = hit->ns;
  o.line = hit->line;
  o.key = prefix_hash(prompt.data(), hit->line);
  o.read_bytes = hit->read_bytes;
  o.generation = generation_;
  o.read_s = read_s;
  reply.offer = std::move(o);
  return reply;
}

std::size_t disk_service::foreign_line(const std::vector<token_id>& prompt, std::size_t above) const {
  if (foreign_chunks_.empty() || grid_ == 0 || prompt.size() < 2) return 0;
  const std::size_t top = (prompt.size() - 1) / grid_ * grid_;  // the last token is always prefilled
  if (top <= above) return 0;
  const std::vector<std::uint64_t> chain = chunk_hashes(prompt, top, grid_);
  for (std::size_t k = chain.size(); k > 0 && k * grid_ > above; --k)
    if (foreign_chunks_.count(chain[k - 1])) return k * grid_;
  return 0;
}

expected<verified_read> disk_service::read(const disk_offer& o, const std::vector<token_id>& prompt,
                                           bool* damaged) {
  auto refuse = [this](std::string what) {
    ++refused_reads_;
    return status::failure(std::move(what));
  };
  if (o.generation != generation_)
    return refuse("the disk tier was cleared since the offer (generation " + std::to_string(o.generation) +
                  ", now " + std::to_string(generation_) + ")");
  if (o.line == 0 || prompt.size() < o.line || prefix_hash(prompt.data(), o.line) != o.key)
    return refuse("the prompt is not the one the disk offer was made for");
  disk_hit hit;
  hit.ns = o.ns;
  hit.line = o.line;
  const std::int64_t t0 = steady_ns();
  expected<verified_read> r = store_.read_verified(hit, prompt, damaged);
  if (!r) return status::failure(r.error().error());  // the store counted it
  const double s = static_cast<double>(steady_ns() - t0) / 1e9;
  if (s > 0 && r->bytes_read > 0) read_bps_ = blend_rate(read_bps_, static_cast<double>(r->bytes_read) / s);
  tokens_saved_ += static_cast<long long>(o.line);
  return r;
}

void disk_service::apply(const verified_read& read, state_adapter& into) {
  disk_store::apply_verified(read, into);
}

expected<verified_checkpoint> disk_service::read_checkpoint(std::uint64_t key_hash,
                                                            const std::vector<token_id>& prompt) {
  const auto hit = store_.find_checkpoint(key_hash);
  if (!hit) return status::failure("no checkpoint of this key");
  return store_.read_checkpoint_verified(*hit, prompt);  // the store counts a failure
}

void disk_service::apply_checkpoint(const verified_checkpoint& read, state_adapter& into) {
  disk_store::apply_checkpoint_verified(read, into);
}

disk_read_reply disk_service::start_read(const disk_read_request& req) {
  disk_read_reply reply;
  const std::int64_t t0 = steady_ns();
  const std::vector<token_id> prompt(req.prompt.begin(), req.prompt.end());
  auto done = [&] {
    reply.read_ms = static_cast<double>(steady_ns() - t0) / 1e6;
    return std::move(reply);
  };
  if (req.checkpoint_key && store_.find_checkpoint(*req.checkpoint_key)) {
    expected<verified_checkpoint> c = read_checkpoint(*req.checkpoint_key, prompt);
    if (c) {
      reply.kind = disk_read_kind::checkpoint;
      reply.bytes_read = c->bytes_read;
      reply.line = c->read.meta.tokens.size() - 1;
      reply.checkpoint = std::make_shared<verified_checkpoint>(std::move(*c));
      return done();
    }
    reply.error = "checkpoint: " + c.error().error();
  }
  if (req.offer) {
    expected<verified_read> r = read(*req.offer, prompt, &reply.damaged);
    if (r) {
      reply.kind = disk_read_kind::prefix;
      reply.bytes_read = r->bytes_read;
      reply.line = r->line;
      reply.prefix = std::make_shared<verified_read>(std::move(*r));
      reply.error.clear();
      return done();
    }
    reply.error += (reply.error.empty() ? "" : "; ") + r.error().error();
  }
  return done();
}

// ---- Writes -------------------------------------------------------------------------------------

disk_write_lines disk_service::plan_writes(const disk_plan_request& req) {
  const std::vector<token_id> served(req.prompt.begin(), req.prompt.end());
  admission_request a;
  a.grid = grid_;
  a.resume = req.resume;
  if (!req.exact) a.taint = req.resume;  // a session resume's prefill writes nothing
  a.first_request = !req.session_key.empty() && sessions_seen_.count(req.session_key) == 0 &&
                    served.size() >= options_.admission.min_tokens;
  a.user_start = req.user_start;
  const admission_plan plan = admission_.plan(served, a);
  if (a.first_request) {
    if (sessions_seen_.size() >= sessions_kept) sessions_seen_.clear();
    sessions_seen_.insert(req.session_key);
  }
  disk_write_lines out;
  out.chunks = plan.chunks;
  out.anchors = plan.anchors;
  if (plan.writes_nothing()) return out;
  anchors_planned_ += static_cast<long>(plan.anchors.size());
  // Rows of the chunks the disk holds already need no staging.
  out.rows_from = plan.chunks.back();
  for (std::size_t b : plan.chunks)
    if (!store_.has_chunk(prefix_hash(served.data(), b))) {
      out.rows_from = b - disk_format::chunk_rows(b, grid_);
      break;
    }
  return out;
}

std::shared_ptr<disk_job> disk_service::prepare(disk_submission&& s, disk_write_reply& reply) {
  reply = disk_write_reply{};
  reply.released_bytes = s.staged_bytes;
  auto job = std::make_shared<disk_job>();
  job->staged_bytes = s.staged_bytes;
  job->write = std::move(s.write);
  job->plan =
      s.checkpoint ? store_.prepare_checkpoint(job->write, *s.checkpoint) : store_.prepare(job->write);
  ++jobs_;
  if (s.checkpoint) finished_keys_.erase(s.checkpoint->key_hash);
  if (job->plan.files.empty()) {
    // Nothing to write: refused, or every file present. Releases what prepare marked.
    const disk_write_report r = store_.commit(job->write, job->plan, {});
    reply.refused = job->plan.refused || r.refused;
    reply.error = job->plan.error;
    return nullptr;
  }
  ++writes_out_;
  return job;
}

disk_write_reply disk_service::commit(const disk_job& job) {
  const disk_write_report r = store_.commit(job.write, job.plan, job.results);
  if (writes_out_ > 0) --writes_out_;
  // A checkpoint that was out when its generation ended is not wanted.
  if (job.plan.checkpoint && finished_keys_.count(job.plan.checkpoint->key_hash) != 0)
    store_.remove_checkpoints(job.plan.checkpoint->key_hash);
  store_.evict_to_cap();
  disk_write_reply reply;
  reply.released_bytes = job.staged_bytes;
  reply.files_written = r.chunks_written + r.anchors_written;
  if (job.plan.checkpoint) reply.files_written = r.bytes_written > 0 ? 1 : 0;
  reply.bytes_written = r.bytes_written;
  reply.refused = r.refused;
  reply.failed = r.failed || job.results.size() < job.plan.files.size();
  reply.error = r.error;
  if (reply.failed && reply.error.empty()) reply.error = "the write did not complete";
  return reply;
}

void disk_service::generation_finished(std::uint64_t key_hash) {
  store_.remove_checkpoints(key_hash);
  if (finished_keys_.size() >= finished_kept) finished_keys_.clear();
  finished_keys_.insert(key_hash);
}

void disk_service::generation_started(std::uint64_t key_hash) { finished_keys_.erase(key_hash); }

// ---- Maintenance --------------------------------------------------------------------------------

disk_clear_reply disk_service::clear() {
  admission_.clear();
  sessions_seen_.clear();
  disk_clear_reply r;
  r.files_removed = store_.clear();
  r.generation = ++generation_;
  return r;
}

std::size_t disk_service::set_limits(const cache_settings& s) {
  disk_eviction_options& o = options_.store.eviction;
  if (s.disk_budget_bytes) o.budget_bytes = *s.disk_budget_bytes;
  if (s.disk_lifetime_s) o.lifetime_s = *s.disk_lifetime_s;
  if (s.disk_free_bytes) o.min_free_bytes = *s.disk_free_bytes;
  return store_.set_eviction(o);
}

disk_stats disk_service::stats() const {
  disk_stats s = store_.stats();
  s.misses = misses_;
  s.declined = declined_;
  // The store's failed reads and the offers refused before it.
  s.restore_failure_reasons.stale_offer += refused_reads_;
  s.restore_failures = s.restore_failure_reasons.total();
  s.sweep = sweep_;
  s.jobs = jobs_;
  s.writes_out = writes_out_;
  s.anchors_planned = anchors_planned_;
  s.tokens_saved = tokens_saved_;
  s.read_bytes_per_s = read_bps_;
  s.generation = generation_;
  return s;
}

}  // namespace anchorage
