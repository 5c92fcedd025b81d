// The stats' probes (protocol/probe.hpp): one field list gives each stats struct its merge over
// the slots, its JSON and its /metrics tier series.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>

#include "protocol/cache_stats.hpp"
#include "runtime/server/metrics.hpp"

using namespace anchorage;

namespace {

resident_stats slot_resident(long hits, std::size_t bytes, std::size_t limit,
                             std::optional<std::size_t> end) {
  resident_stats r;
  r.hits = hits;
  r.end_hits = hits / 2;
  r.bytes = bytes;
  r.entries = 2;
  r.limit_bytes = limit;
  r.taint = limit / 8;
  r.end_anchor = end;
  r.tokens_saved = 100 * hits;
  return r;
}

// Every series line of a /metrics text, value included.
std::set<std::string> lines_of(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') out.insert(line);
  return out;
}

}  // namespace

TEST_CASE("a probe's merge adds counts and sizes and keeps the server's limits and positions",
          "[stats][probe]") {
  resident_stats total = slot_resident(3, 1000, 4096, 640);
  probe::merge_into(total, slot_resident(5, 24, 4096, std::nullopt));
  CHECK(total.hits == 8);
  CHECK(total.end_hits == 1 + 2);
  CHECK(total.bytes == 1024);
  CHECK(total.entries == 4);
  CHECK(total.tokens_saved == 800);
  CHECK(total.limit_bytes == 4096);  // a budget, not summed
  CHECK(total.taint == 512);
  CHECK(total.end_anchor == std::optional<std::size_t>(640));  // the first slot's

  // Nested probes merge field by field; inlined ones too.
  compaction_stats c;
  c.continuations = 1;
  c.prewrites_kept = 3;
  c.worker = {2, 1, 1};
  compaction_stats d;
  d.as_sent = 4;
  d.prewrites_kept = 3;
  d.worker = {1, 0, 1};
  probe::merge_into(c, d);
  CHECK(c.continuations == 1);
  CHECK(c.as_sent == 4);
  CHECK(c.prewrites_kept == 3);
  CHECK(c.worker.started == 3);
  CHECK(c.worker.preempted == 1);
  CHECK(c.worker.finished == 2);

  disk_staging_stats a, b;
  a.staged_bytes = 10;
  a.submissions = 1;
  a.prefill_tokens_per_s = 900;
  b.staged_bytes = 5;
  b.submissions = 2;
  b.prefill_tokens_per_s = 1200;
  probe::merge_into(a, b);
  CHECK(a.staged_bytes == 15);
  CHECK(a.submissions == 3);
  CHECK(a.prefill_tokens_per_s == 900);
}

TEST_CASE(
    "a probe's JSON uses the wire's names: nulls for empty positions, inlined components, nested objects",
    "[stats][probe]") {
  const nlohmann::json r = slot_resident(2, 64, 128, std::nullopt);
  CHECK(r.at("hits") == 2);
  CHECK(r.at("end_anchor").is_null());
  CHECK(r.at("pinned").is_null());
  CHECK(nlohmann::json(slot_resident(2, 64, 128, 96)).at("end_anchor") == 96);

  disk_tier_stats d;
  d.store.chunks = 7;
  d.store.folder = "/cache/disk";
  d.staging.submissions = 3;
  d.staging.prefill_tokens_per_s = 512.5;
  d.min_tokens = 2048;
  const nlohmann::json dj = d;
  CHECK(dj.at("chunks") == 7);
  CHECK(dj.at("folder") == "/cache/disk");
  CHECK(dj.at("jobs") == 3);  // the staging's submissions, under the wire's name
  CHECK(dj.at("prefill_tokens_per_s") == 512.5);
  CHECK(dj.at("min_tokens") == 2048);
  CHECK_FALSE(dj.contains("store"));
  CHECK_FALSE(dj.contains("submissions"));
  CHECK_FALSE(dj.contains("generation"));  // the actor's own, not the wire's

  spill_tier_stats s;
  s.store.reads = 4;
  s.hits = 2;
  s.last_read = {4096, 0.25};
  const nlohmann::json sj = s;
  CHECK(sj.at("reads") == 4);
  CHECK(sj.at("hits") == 2);
  CHECK(sj.at("last_read") == nlohmann::json{{"bytes", 4096}, {"seconds", 0.25}});

  cache_stats all;
  all.spill = s;
  const nlohmann::json wire = all;
  CHECK(wire.at("spill").at("enabled") == true);
  CHECK(wire.at("disk") == nlohmann::json{{"enabled", false}});
  CHECK(wire.at("response") == nlohmann::json{{"enabled", false}});
  CHECK_FALSE(wire.contains("compaction"));
}

TEST_CASE("the metrics' tier series come from the probes' fields: one line per tier that has the field",
          "[stats][probe][metrics]") {
  cache_stats c;
  c.resident = slot_resident(3, 1000, 4096, std::nullopt);
  c.store.hits = 1;
  c.disk.emplace();
  c.disk->store.hits = 7;
  c.disk->store.restore_failures = 1;
  c.spill.emplace();
  c.spill->hits = 2;
  c.spill->store.write_failures = 5;
  c.suffix.emplace();
  c.suffix->enabled = true;
  c.suffix->hits = 9;
  c.suffix->lookups = 10;
  c.compaction.emplace();
  c.compaction->continuations = 6;
  c.speculative.emplace();
  c.speculative->drafters.mtp.accepted = 11;
  metrics m;
  m.set_tiers(c);
  const std::set<std::string> lines = lines_of(m.text(0, 0));
  for (const char* want :
       {"anchorage_cache_hits_total{tier=\"disk\"} 7", "anchorage_cache_hits_total{tier=\"resident\"} 3",
        "anchorage_cache_hits_total{tier=\"spill\"} 2", "anchorage_cache_hits_total{tier=\"store\"} 1",
        "anchorage_cache_restore_failures_total{tier=\"disk\"} 1",
        "anchorage_cache_write_failures_total{tier=\"spill\"} 5",
        "anchorage_cache_tokens_saved_total{tier=\"resident\"} 300",
        "anchorage_suffix_lookups_total{hit=\"yes\"} 9",
        "anchorage_compactions_total{served=\"continuation\"} 6",
        "anchorage_draft_tokens_total{drafter=\"mtp\",outcome=\"accepted\"} 11"}) {
    INFO(want);
    CHECK(lines.count(want) == 1);
  }
  for (const std::string& l : lines) {
    INFO(l);
    CHECK(l.find("tier=\"suffix\"") == std::string::npos);    // its hits are drafts: its own series
    CHECK(l.find("tier=\"response\"") == std::string::npos);  // off
    // The spill tier has no misses field; the resident tier no restore failures.
    CHECK(l.find("anchorage_cache_misses_total{tier=\"spill\"}") == std::string::npos);
    CHECK(l.find("anchorage_cache_restore_failures_total{tier=\"resident\"}") == std::string::npos);
  }
}

TEST_CASE("an if_set field is written only when it holds a value and a merge keeps the first one's",
          "[server][stats]") {
  suffix_tier_stats open;
  open.enabled = true;
  open.path = "/cache/suffix/suffix.log";
  open.adds = 3;
  const nlohmann::json j = open;
  CHECK(j["enabled"] == true);
  CHECK(j["adds"] == 3);
  CHECK_FALSE(j.contains("refused"));  // open: no reason, no member

  suffix_tier_stats off;
  off.refused = "--suffix-store off";
  const nlohmann::json k = off;
  CHECK(k["refused"] == "--suffix-store off");
  CHECK(k["enabled"] == false);

  suffix_tier_stats a = off, b;
  b.refused = "another reason";
  b.adds = 2;
  a.adds = 1;
  probe::merge_into(a, b);
  CHECK(a.refused == std::optional<std::string>("--suffix-store off"));
  CHECK(a.adds == 3);
}
