// The board's half of the disk tier (disk_staging) with the disk actor's half (disk_service), no
// actors: a prefill staged and written leaves its chunk files, which a new service's scan
// indexes; a cut prefill still writes the lines it passed; the wire's stats keep their fields;
// the pool refuses what does not fit and releases what a reply released.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/disk/disk_staging.hpp"
#include "tests/support/disk_store_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every file under `dir` with its bytes.
std::vector<std::pair<std::string, std::string>> contents(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : files_under(dir))
    out.emplace_back(f, bytes_of((std::filesystem::path(dir) / f).string()));
  return out;
}

disk_tier_options tier_options(const std::string& dir, std::uint64_t stage_bytes = 1ULL << 30) {
  disk_tier_options o;
  o.store = options_in(dir);
  o.admission.min_tokens = 64;
  o.stage_bytes = stage_bytes;
  return o;
}

// Runs the prefill of `prompt` chunk by chunk up to `stop` tokens, calling `after` after each.
template <class F>
void prefill_steps(engine& e, const std::vector<token_id>& prompt, std::size_t stop, F&& after) {
  e.begin_prefill(slice(prompt, 0, stop));
  while (e.prefill_step()) after();
  after();
}

// The new way: the service plans, the staging copies, the service prepares, writes and commits.
struct staged_outcome {
  disk_staging_stats staging;
  nlohmann::json wire;  // the tier's probe (disk_tier_stats) of the service's and the staging's stats
};

staged_outcome write_with_staging(bench& b, const std::string& dir, const std::vector<token_id>& prompt,
                                  std::size_t stop, std::uint64_t stage_bytes = 1ULL << 30) {
  disk_service s(b.env, b.layout, b.clock, tier_options(dir, stage_bytes));
  s.start();
  disk_staging staging(b.layout, stage_bytes);
  auto e = make_engine(b.c);
  disk_plan_request pr;
  pr.prompt.assign(prompt.begin(), prompt.end());
  pr.session_key = "s";
  staging.begin(prompt, s.plan_writes(pr));
  prefill_steps(*e, prompt, stop, [&] { staging.after_prefill_step(e->cache_state()); });
  staging.finish(e->cache_state());
  for (auto& sub : staging.take_submissions()) {
    CHECK(staging.staged_bytes() >= sub->staged_bytes);
    disk_write_reply now;
    auto job = s.prepare(std::move(*sub), now);
    if (job) {
      job->results = execute_disk_write(b.env, b.layout, job->write, job->plan);
      now = s.commit(*job);
    }
    CHECK_FALSE(now.failed);
    staging.released(now.released_bytes);
  }
  const disk_tier_options o = tier_options(dir, stage_bytes);
  return {staging.stats(), nlohmann::json(disk_tier_stats{s.stats(), staging.stats(), o.admission.min_tokens,
                                                          o.checkpoint_tokens})};
}

// The wire's field names, sorted.
std::vector<std::string> keys_of(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("disk staging + disk service write a prefill's chunks, whole or cut, and a scan finds them",
          "[disk][staging]") {
  bench b;
  const auto prompt = test_tokens(5 * b.g + 7);
  for (const std::size_t stop : {prompt.size(), 2 * b.g + 3}) {  // whole, and cut short
    INFO("prefill stops at " << stop);
    temp_dir dir("anchorage-staging");
    const staged_outcome out = write_with_staging(b, dir.str(), prompt, stop);
    const disk_staging_stats& st = out.staging;
    const std::size_t lines = stop / b.g;        // the lines the prefill passed
    CHECK(contents(dir.str()).size() == lines);  // one chunk file per line, no anchor yet
    CHECK(st.staged_bytes == 0);                 // every submission's bytes released
    CHECK(st.submissions == 1);
    CHECK(out.wire["chunks"] == lines);
    CHECK(out.wire["files_written"] == lines);
    CHECK(out.wire["jobs"] == 1);
    // The wire's JSON keeps the fields the routes have always had, and the operator's view's since.
    CHECK(keys_of(out.wire) == std::vector<std::string>{"anchored_bytes",
                                                        "anchors_planned",
                                                        "bytes",
                                                        "bytes_read",
                                                        "bytes_written",
                                                        "checkpoint_tokens",
                                                        "checkpoints",
                                                        "checkpoints_staged",
                                                        "chunks",
                                                        "declined",
                                                        "dedup_ratio",
                                                        "entries",
                                                        "evictions",
                                                        "files_written",
                                                        "folder",
                                                        "fs_free_bytes",
                                                        "hits",
                                                        "jobs",
                                                        "lifetime_s",
                                                        "limit_bytes",
                                                        "longest_prefix",
                                                        "min_free_bytes",
                                                        "min_tokens",
                                                        "misses",
                                                        "prefill_tokens_per_s",
                                                        "read_bytes_per_s",
                                                        "refusals",
                                                        "remote",
                                                        "restore_failure_reasons",
                                                        "restore_failures",
                                                        "stage_limit_bytes",
                                                        "stage_refusals",
                                                        "staged_bytes",
                                                        "superseded",
                                                        "sweep",
                                                        "tokens_saved",
                                                        "write_failures"});
    // A new service on the folder (a restart) indexes every chunk from the headers.
    disk_service again(b.env, b.layout, b.clock, tier_options(dir.str()));
    CHECK(again.start().indexed == lines);
    CHECK(again.store().chunk_count() == lines);
  }
}

TEST_CASE("disk staging refuses what its pool cannot take and writes nothing for it", "[disk][staging]") {
  bench b;
  const auto prompt = test_tokens(5 * b.g + 7);
  temp_dir dir("anchorage-staging-small");
  const disk_staging_stats st =
      write_with_staging(b, dir.str(), prompt, prompt.size(), /*stage_bytes=*/16).staging;
  CHECK(st.stage_refusals > 0);
  CHECK(st.submissions == 0);
  CHECK(st.staged_bytes == 0);
  CHECK(count_files(dir.str()) == 0);
}

TEST_CASE("disk staging stages a checkpoint whole and only at the state's length", "[disk][staging]") {
  bench b;
  const auto prompt = test_tokens(2 * b.g + 3);
  auto e = prefilled(b.c, prompt, prompt.size());
  disk_staging staging(b.layout, 1ULL << 30);
  checkpoint_meta meta;
  meta.key_hash = 7;
  meta.prompt_tokens = prompt.size();
  meta.tokens = prompt;
  CHECK_FALSE(staging.stage_checkpoint(e->cache_state(), meta));  // one token short
  meta.tokens.push_back(1);
  REQUIRE(staging.stage_checkpoint(e->cache_state(), meta));
  auto subs = staging.take_submissions();
  REQUIRE(subs.size() == 1);
  REQUIRE(subs[0]->checkpoint);
  CHECK(subs[0]->write.row_hi == prompt.size());
  CHECK(staging.staged_bytes() == subs[0]->staged_bytes);
  staging.released(subs[0]->staged_bytes);
  CHECK(staging.staged_bytes() == 0);
  CHECK(staging.stats().checkpoints_staged == 1);
}
