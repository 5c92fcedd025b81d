#include "runtime/server/metrics.hpp"

#include <sstream>

namespace anchorage {

void metrics::on_finished(const ledger_entry& e) {
  ++requests_[{e.route, e.source, e.finish_reason}];
  prompt_tokens_ += e.prompt_tokens;
  prefilled_ += e.prefilled;
  cached_ += e.prompt_tokens - e.prefilled;
  output_tokens_ += e.output_tokens;
  ttft_.observe(e.ttft_ms / 1000.0);
  ttft_by_source_.emplace(e.source, histogram(histogram::latency_bounds()))
      .first->second.observe(e.ttft_ms / 1000.0);
  total_.observe(e.total_ms / 1000.0);
  queue_.observe(e.queue_ms / 1000.0);
}

void metrics::on_rejected(int status) { ++rejected_[status]; }

std::string metrics::text(long queue_depth, long running) const {
  std::ostringstream o;
  o << "# HELP anchorage_requests_total Requests finished, by route, cache source and finish reason.\n"
    << "# TYPE anchorage_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    const auto& [route, source, finish] = key;
    o << "anchorage_requests_total{route=\"" << to_string(route) << "\",source=\"" << to_string(source)
      << "\",finish_reason=\"" << to_string(finish) << "\"} " << n << "\n";
  }
  o << "# HELP anchorage_rejected_total Requests refused before running, by HTTP status.\n"
    << "# TYPE anchorage_rejected_total counter\n";
  for (const auto& [status, n] : rejected_)
    o << "anchorage_rejected_total{status=\"" << status << "\"} " << n << "\n";
  auto counter = [&](const char* name, const char* help, double v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n" << name << " " << v << "\n";
  };
  counter("anchorage_prompt_tokens_total", "Prompt tokens of finished requests.",
          static_cast<double>(prompt_tokens_));
  counter("anchorage_prefilled_tokens_total", "Prompt tokens forwarded by prefills.",
          static_cast<double>(prefilled_));
  counter("anchorage_cached_tokens_total", "Prompt tokens restored from a cache tier.",
          static_cast<double>(cached_));
  counter("anchorage_completion_tokens_total", "Tokens generated.", static_cast<double>(output_tokens_));
  auto latency = [&](const char* name, const char* help, const histogram& h) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
    h.write(o, name);
  };
  latency("anchorage_ttft_seconds", "Time to first token.", ttft_);
  latency("anchorage_request_seconds", "Time from arrival to the last token.", total_);
  latency("anchorage_queue_wait_seconds", "Time from arrival to a slot taking the request.", queue_);
  o << "# HELP anchorage_source_ttft_seconds Time to first token, by what served the prompt.\n"
    << "# TYPE anchorage_source_ttft_seconds histogram\n";
  for (const auto& [source, h] : ttft_by_source_)
    h.write(o, "anchorage_source_ttft_seconds", std::string("source=\"") + to_string(source) + "\"");
  struct series_line {
    tier_series series;
    const char* name;
    const char* type;
    const char* help;
  };
  static const series_line series[] = {
      {tier_series::entries, "anchorage_cache_entries", "gauge",
       "Entries a cache tier holds (anchors, snapshots)."},
      {tier_series::bytes, "anchorage_cache_bytes", "gauge",
       "Bytes a cache tier holds (device memory, or disk for the disk tier)."},
      {tier_series::limit_bytes, "anchorage_cache_limit_bytes", "gauge", "A cache tier's budget."},
      {tier_series::hits, "anchorage_cache_hits_total", "counter", "Requests a cache tier answered."},
      {tier_series::misses, "anchorage_cache_misses_total", "counter",
       "Lookups a cache tier had nothing for."},
      {tier_series::evictions, "anchorage_cache_evictions_total", "counter", "Entries dropped to make room."},
      {tier_series::stores, "anchorage_cache_stores_total", "counter", "Answers the response cache kept."},
      {tier_series::tokens_saved, "anchorage_cache_tokens_saved_total", "counter",
       "Prompt tokens restored instead of prefilled."},
      {tier_series::restore_failures, "anchorage_cache_restore_failures_total", "counter",
       "Restores refused by a verification or an I/O error."},
      {tier_series::write_failures, "anchorage_cache_write_failures_total", "counter",
       "Files a tier failed to write."},
      {tier_series::bytes_written, "anchorage_cache_bytes_written_total", "counter",
       "Bytes a tier wrote to disk."},
      {tier_series::bytes_read, "anchorage_cache_bytes_read_total", "counter",
       "Bytes a tier read back from disk."},
  };
  // The tiers whose hits are restores (the suffix store's are drafts: its own series below).
  for (const auto& s : series) {
    o << "# HELP " << s.name << " " << s.help << "\n# TYPE " << s.name << " " << s.type << "\n";
    if (!tiers_) continue;
    auto lines = [&](const char* tier, const auto& p) {
      probe::each_series(p, [&](tier_series t, const nlohmann::json& v) {
        if (t == s.series) o << s.name << "{tier=\"" << tier << "\"} " << v.dump() << "\n";
      });
    };
    if (tiers_->disk) lines("disk", *tiers_->disk);
    lines("resident", tiers_->resident);
    if (tiers_->response) lines("response", *tiers_->response);
    if (tiers_->spill) lines("spill", *tiers_->spill);
    lines("store", tiers_->store);
  }
  if (tiers_) {
    o << "# HELP anchorage_cache_miss_requests_total Requests that resumed less deep than they shared "
         "with what was held (or shared nothing), by why.\n"
      << "# TYPE anchorage_cache_miss_requests_total counter\n";
    for (miss_reason r : all_miss_reasons)
      o << "anchorage_cache_miss_requests_total{reason=\"" << to_string(r) << "\"} "
        << tiers_->miss_reasons[r].requests << "\n";
    o << "# HELP anchorage_cache_miss_tokens_total Prompt tokens prefilled that the server had held, by "
         "why.\n"
      << "# TYPE anchorage_cache_miss_tokens_total counter\n";
    for (miss_reason r : all_miss_reasons)
      o << "anchorage_cache_miss_tokens_total{reason=\"" << to_string(r) << "\"} "
        << tiers_->miss_reasons[r].tokens << "\n";
  }
  if (tiers_ && tiers_->disk) {
    const disk_restore_failures& f = tiers_->disk->store.restore_failure_reasons;
    o << "# HELP anchorage_disk_restore_failures_total The disk tier's failed restores, by the first thing "
         "that failed.\n"
      << "# TYPE anchorage_disk_restore_failures_total counter\n";
    probe::each_field<disk_restore_failures>([&](const auto& d) {
      o << "anchorage_disk_restore_failures_total{reason=\"" << d.name << "\"} " << f.*(d.member) << "\n";
    });
  }
  if (tiers_ && tiers_->compaction) {
    const compaction_stats& c = *tiers_->compaction;
    o << "# HELP anchorage_compactions_total Compaction requests, by how they were served.\n"
      << "# TYPE anchorage_compactions_total counter\n"
      << "anchorage_compactions_total{served=\"continuation\"} " << c.continuations << "\n"
      << "anchorage_compactions_total{served=\"prewritten\"} " << c.prewritten << "\n"
      << "anchorage_compactions_total{served=\"as_sent\"} " << c.as_sent << "\n";
    o << "# HELP anchorage_compaction_worker_runs_total The compaction worker's idle runs, by what became of "
         "them.\n"
      << "# TYPE anchorage_compaction_worker_runs_total counter\n"
      << "anchorage_compaction_worker_runs_total{run=\"started\"} " << c.worker.started << "\n"
      << "anchorage_compaction_worker_runs_total{run=\"preempted\"} " << c.worker.preempted << "\n"
      << "anchorage_compaction_worker_runs_total{run=\"finished\"} " << c.worker.finished << "\n";
  }
  if (tiers_ && tiers_->speculative) {
    const speculative_stats& sp = *tiers_->speculative;
    o << "# HELP anchorage_speculative_rounds_total Verify rounds (a pending token and at least one draft).\n"
      << "# TYPE anchorage_speculative_rounds_total counter\n"
      << "anchorage_speculative_rounds_total " << sp.rounds << "\n";
    o << "# HELP anchorage_draft_tokens_total Drafted tokens, by drafter and by whether the target agreed.\n"
      << "# TYPE anchorage_draft_tokens_total counter\n";
    probe::each_field<drafters_stats>([&](const auto& d) {
      const drafter_stats& x = sp.drafters.*(d.member);
      o << "anchorage_draft_tokens_total{drafter=\"" << d.name << "\",outcome=\"drafted\"} " << x.drafted
        << "\n";
      o << "anchorage_draft_tokens_total{drafter=\"" << d.name << "\",outcome=\"accepted\"} " << x.accepted
        << "\n";
    });
  }
  if (tiers_ && tiers_->suffix && tiers_->suffix->enabled) {
    const suffix_tier_stats& x = *tiers_->suffix;
    o << "# HELP anchorage_suffix_store_bytes Bytes of the persistent suffix store's log.\n"
      << "# TYPE anchorage_suffix_store_bytes gauge\n"
      << "anchorage_suffix_store_bytes " << x.bytes << "\n"
      << "# HELP anchorage_suffix_store_ids Token ids the persistent suffix store holds.\n"
      << "# TYPE anchorage_suffix_store_ids gauge\n"
      << "anchorage_suffix_store_ids " << x.ids << "\n"
      << "# HELP anchorage_suffix_lookups_total The lookup drafter's questions to the suffix store, by "
         "whether it proposed a draft.\n"
      << "# TYPE anchorage_suffix_lookups_total counter\n"
      << "anchorage_suffix_lookups_total{hit=\"yes\"} " << x.hits << "\n"
      << "anchorage_suffix_lookups_total{hit=\"no\"} " << (x.lookups - x.hits) << "\n";
  }
  o << "# HELP anchorage_queue_depth Requests waiting for the engine.\n# TYPE anchorage_queue_depth gauge\n"
    << "anchorage_queue_depth " << queue_depth << "\n";
  o << "# HELP anchorage_running Requests on the engine.\n# TYPE anchorage_running gauge\n"
    << "anchorage_running " << running << "\n";
  if (tiers_ && !tiers_->slots.empty()) {
    o << "# HELP anchorage_slot_busy Whether the slot serves a request.\n# TYPE anchorage_slot_busy gauge\n";
    for (const auto& sl : tiers_->slots)
      o << "anchorage_slot_busy{slot=\"" << sl.slot << "\"} " << (sl.request.empty() ? 0 : 1) << "\n";
    o << "# HELP anchorage_slot_resident_tokens Tokens the slot's rows hold.\n"
      << "# TYPE anchorage_slot_resident_tokens gauge\n";
    for (const auto& sl : tiers_->slots)
      o << "anchorage_slot_resident_tokens{slot=\"" << sl.slot << "\"} " << sl.resident_tokens << "\n";
  }
  return o.str();
}

}  // namespace anchorage
