// The disk tier behind the board's work, without actors: the conductor's offer and the disk
// actor's answers made synchronous (tests/support/disk_driver.hpp). Admission decided before the
// prefill, write-behind through submissions, a restart (a new service scanning the same folder)
// resuming from disk bit for bit like a cold prefill, the read decision, and a damaged file
// falling back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>

#include "runtime/disk/disk_codec.hpp"
#include "runtime/generation/generator.hpp"
#include "runtime/io/uring_env.hpp"
#include "tests/support/cache_fixture.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/fault_env.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

struct turn {
  cache_source source = cache_source::cold;
  std::size_t at = 0;
  std::size_t prefilled = 0;
  cache_via via = cache_via::none;
  std::string text;
};

board_runner_options runner_options() {
  board_runner_options o;
  o.decode_block = 2;
  o.cache = small_cache(true);
  return o;
}

// One "process": a board's work (an engine and its device tiers) and a disk tier on `dir`.
struct process {
  model_config c;
  uring_env base;
  fault_env env{base};  // passes everything through until a test switches a fault on
  std::unique_ptr<board_runner> runner;
  std::unique_ptr<disk_driver> disk;
  int next_id = 0;

  process(const std::string& dir, double assumed_read = 1e9, std::size_t min_tokens = 64,
          std::uint64_t stage_bytes = 1ULL << 30, const std::string& preset = "tiny")
      : c(test_config(preset)) {
    disk_tier_options o;
    o.store.dir = dir;
    o.store.eviction.min_free_bytes = 0;
    o.admission.min_tokens = min_tokens;
    o.assumed_read_bytes_per_s = assumed_read;
    o.stage_bytes = stage_bytes;
    board_runner_options ro = runner_options();
    ro.disk = o;
    runner = std::make_unique<board_runner>(std::shared_ptr<engine>(make_engine(c).release()), ro);
    disk = std::make_unique<disk_driver>(env, runner->slot0().layout(), o);
  }
  disk_service& service() { return *disk->service; }
  const disk_scan_report& scan() const { return disk->scan; }
  // A request (its run asks the disk for its offer); its writes are written before it returns.
  turn serve(const std::vector<token_id>& prompt, int max_tokens = 4, const std::string& session = "s") {
    board_job j = job_of(prompt, max_tokens, "r" + std::to_string(++next_id), session);
    const run_result r = run_to_end(*runner, runner->start(j), disk.get());
    REQUIRE(r.done);
    turn t;
    t.source = r.done->source;
    t.at = static_cast<std::size_t>(r.done->resumed_at);
    t.prefilled = static_cast<std::size_t>(r.done->prefilled);
    t.via = r.events.back().cache.via;
    t.text = r.text;
    return t;
  }
  void clear_device() {
    runner->clear(cache_tier::resident);
    runner->clear(cache_tier::store);
  }
};

// Serves `head` twice in one process, the resident and store rows dropped between, so both
// passes forward it cold: the second admits an anchor at its longest line.
void write_head_twice(const std::string& dir, const std::vector<token_id>& head,
                      const std::string& preset = "tiny") {
  process p(dir, 1e9, 64, 1ULL << 30, preset);
  p.serve(head);
  p.clear_device();
  p.serve(head);
  REQUIRE(p.service().store().entries() == 1);
}

// A cold engine after `prompt` and `max_tokens` greedy tokens (the last one pending), and its ids.
std::unique_ptr<engine> cold_after(const model_config& c, const std::vector<token_id>& prompt, int max_tokens,
                                   std::vector<token_id>* out = nullptr) {
  auto cold = make_engine(c);
  cold->prefill(prompt);
  generation_request gr;
  gr.max_tokens = max_tokens;
  auto ids = generator(*cold, gr).run();
  if (out) *out = std::move(ids);
  return cold;
}

// What a board without caches answers to `prompt`.
std::string cold_text(const model_config& c, const std::vector<token_id>& prompt, int max_tokens) {
  board_runner_options o = runner_options();
  o.cache.enabled = false;
  board_runner r(std::shared_ptr<engine>(make_engine(c).release()), o);
  const run_result res = run_to_end(r, r.start(job_of(prompt, max_tokens, "cold")));
  REQUIRE(res.done);
  return res.text;
}

std::size_t files_with(const std::string& dir, const std::string& ext) {
  std::size_t n = 0;
  for (auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.path().extension() == ext) ++n;
  return n;
}

}  // namespace

TEST_CASE("a prompt seen once writes chunks and no anchor, seen twice, an anchor at its longest line",
          "[disk][admission]") {
  temp_dir dir("anchorage-disk-tier");
  process p(dir.str());
  const std::size_t g = static_cast<std::size_t>(p.c.grid);
  const auto prompt = test_tokens(5 * g + 7, 501);
  p.serve(prompt);
  CHECK(p.service().store().chunk_count() == 5);
  CHECK(p.service().store().entries() == 0);
  CHECK(files_with(dir.str(), ".anc") == 0);
  // The resident prefix would answer the same prompt (nothing forwarded cold, nothing counted):
  // another server, or one whose resident rows were replaced, forwards it cold again.
  p.clear_device();
  const auto second = p.serve(prompt);
  CHECK(second.source == cache_source::cold);
  CHECK(p.service().store().entries() == 1);
  CHECK(p.service().store().longest_durable_prefix_tokens() == 5 * g);
  CHECK(files_with(dir.str(), ".anc") == 1);
  CHECK(files_with(dir.str(), ".chk") == 5);  // shared, not written again
}

TEST_CASE("after a restart a prompt resumes from disk and equals a cold prefill bit for bit",
          "[disk][exact]") {
  temp_dir dir("anchorage-disk-tier");
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const auto head = test_tokens(6 * g + 5, 502);
  write_head_twice(dir.str(), head, preset);
  // A new process: a fresh engine, empty device tiers, the index rebuilt by the scan.
  process q(dir.str(), 1e9, 64, 1ULL << 30, preset);
  CHECK(q.scan().indexed == 7);  // 6 chunks and the anchor
  auto prompt = head;
  const auto more = test_tokens(2 * g + 3, 503);
  prompt.insert(prompt.end(), more.begin(), more.end());
  const auto r = q.serve(prompt, 8);
  CHECK(r.source == cache_source::disk);
  CHECK(r.at == 6 * g);
  CHECK(r.prefilled == prompt.size() - 6 * g);
  // The restored prompt is the resident one, with the disk anchor as its anchor.
  CHECK(q.runner->tiers().resident().anchors().size() >= 1);
  CHECK(q.service().stats().hits == 1);

  CHECK(cold_text(c, prompt, 8) == r.text);
  // The rows and sections after the same tokens (the decoded ones included) are the same bits.
  const auto cold = cold_after(c, prompt, 8);
  const engine& e = q.runner->slot0();
  REQUIRE(e.length() == cold->length());
  require_same_state(state_bytes(e.cache_state(), e.length()),
                     state_bytes(cold->cache_state(), cold->length()), cold->layout());
}

TEST_CASE("a damaged disk file is never restored: the request falls back and the chain is gone", "[disk]") {
  temp_dir dir("anchorage-disk-tier");
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const auto head = test_tokens(4 * g, 504);
  write_head_twice(dir.str(), head);
  // One flipped byte in the middle of the second chunk's rows.
  const std::string folder = [&] {
    for (auto& f : std::filesystem::directory_iterator(dir.path)) return f.path().string();
    return std::string();
  }();
  const std::uint64_t second = prefix_hash(head.data(), 2 * g);
  char name[40];
  std::snprintf(name, sizeof name, "c-%016llx.chk", static_cast<unsigned long long>(second));
  const std::string path = folder + "/" + name;
  REQUIRE(std::filesystem::exists(path));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = std::filesystem::file_size(path);
    f.seekg(static_cast<std::streamoff>(size - 100));
    char b = 0;
    f.read(&b, 1);
    b = static_cast<char>(b ^ 0x10);
    f.seekp(static_cast<std::streamoff>(size - 100));
    f.write(&b, 1);
  }
  process q(dir.str(), 1e9, 1u << 20);  // writes nothing: what is on disk is what the read left
  auto prompt = head;
  const auto more = test_tokens(g + 1, 505);
  prompt.insert(prompt.end(), more.begin(), more.end());
  const auto r = q.serve(prompt, 4);
  CHECK(r.source == cache_source::cold);  // the read failed its crc; nothing above the disk: cold
  CHECK(q.service().stats().restore_failures == 1);
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(q.service().store().entries() == 0);      // the anchor on the chain went with it
  CHECK(q.service().store().chunk_count() >= 1);  // the first chunk is intact and stays
  CHECK(cold_text(c, prompt, 4) == r.text);
}

TEST_CASE("the disk is read only when the read costs less than the prefill it saves", "[disk]") {
  temp_dir dir("anchorage-disk-tier");
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const auto head = test_tokens(4 * g, 506);
  write_head_twice(dir.str(), head);
  // An absurdly slow disk (1 byte/s): once a prefill rate is measured, the read loses.
  process q(dir.str(), 1.0);
  q.serve(test_tokens(3 * g, 507));  // measures the prefill rate
  REQUIRE(q.runner->stats().disk_staging->prefill_tokens_per_s > 0);
  auto prompt = head;
  prompt.push_back(7);
  const auto r = q.serve(prompt, 2, "other");
  CHECK(r.source == cache_source::cold);
  CHECK(q.service().stats().declined == 1);
}

TEST_CASE("a session resume's prefill writes nothing to disk, a guest neither", "[disk][admission]") {
  temp_dir dir("anchorage-disk-tier");
  process p(dir.str());
  const std::size_t g = static_cast<std::size_t>(p.c.grid);
  const auto first = test_tokens(3 * g + 2, 508);
  p.serve(first, 6);
  const std::size_t chunks = p.service().store().chunk_count();
  CHECK(chunks == 3);
  // The next turn resumes at the end anchor: its rows above the prompt are session state.
  std::vector<token_id> answer;
  cold_after(p.c, first, 6, &answer);
  const long submitted = p.disk->submissions;
  const auto second = next_prompt(first, answer, 3 * g, 509);
  const auto t2 = p.serve(second, 4);
  REQUIRE(t2.source == cache_source::end);
  CHECK(p.service().store().chunk_count() == chunks);
  CHECK(p.disk->submissions == submitted);  // nothing staged at all
}

TEST_CASE("a full disk below the seam: writes fail softly, answers stay exact, serving goes on", "[disk]") {
  temp_dir dir("anchorage-disk-tier");
  process p(dir.str());
  const std::size_t g = static_cast<std::size_t>(p.c.grid);
  const auto prompt = test_tokens(4 * g + 9, 510);
  p.env.no_space_after(0);
  const auto first = p.serve(prompt, 6);
  p.clear_device();
  const auto second = p.serve(prompt, 6);
  const disk_stats d = p.service().stats();
  CHECK(d.write_failures >= 2);
  CHECK(d.entries == 0);
  CHECK(d.chunks == 0);
  CHECK(files_with(dir.str(), ".chk") + files_with(dir.str(), ".anc") + files_with(dir.str(), ".tmp") == 0);
  const auto expect = cold_text(p.c, prompt, 6);
  CHECK(first.text == expect);
  CHECK(second.text == expect);
  // The disk has room again: the next cold pass writes (the counts survived the failures).
  p.env.heal();
  p.clear_device();
  p.serve(prompt, 6);
  CHECK(p.service().store().chunk_count() == 4);
  CHECK(p.service().store().entries() == 1);
}

TEST_CASE("a staging pool too small for the whole prompt still writes the lines that fit", "[disk]") {
  temp_dir dir("anchorage-disk-tier");
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const std::uint64_t three_lines = 3 * g * make_engine(c)->layout().row_bytes();
  process p(dir.str(), 1e9, 64, three_lines);
  const auto prompt = test_tokens(6 * g + 1, 511);
  p.serve(prompt);
  CHECK(p.service().store().chunk_count() == 3);  // lines 1..3: the chain from the start
  CHECK(p.runner->stats().disk_staging->stage_refusals == 1);
  CHECK(p.runner->stats().disk_staging->staged_bytes == 0);
}

TEST_CASE("the disk tier answers with its own offer: the line, the bytes to read, the hit", "[disk]") {
  temp_dir dir("anchorage-disk-tier");
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const auto head = test_tokens(4 * g, 510);
  write_head_twice(dir.str(), head);
  process q(dir.str());
  auto prompt = head;
  prompt.push_back(9);
  const auto o = q.service().offer(prompt, 0, 0).offer;
  REQUIRE(o);
  CHECK(o->line > 0);
  CHECK(o->line % g == 0);
  CHECK(o->line <= head.size());
  CHECK(o->key == prefix_hash(prompt.data(), o->line));
  CHECK(o->read_bytes > 0);
  CHECK_FALSE(q.service().offer(prompt, o->line, 0).offer);  // the tiers above start as late: no offer
  auto fresh = make_engine(c);
  auto read = q.service().read(*o, prompt);
  REQUIRE(read);
  disk_service::apply(*read, fresh->cache_state());
  CHECK(fresh->length() == o->line);
}

TEST_CASE("a disk offer made while the request waited, the disk cleared before its read: cold, never wrong",
          "[disk]") {
  temp_dir dir("anchorage-disk-tier");
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const auto head = test_tokens(4 * g, 515);
  write_head_twice(dir.str(), head);
  process q(dir.str());
  auto prompt = head;
  const auto more = test_tokens(g + 3, 516);
  prompt.insert(prompt.end(), more.begin(), more.end());
  board_job j = job_of(prompt, 6, "late");
  board_events started = q.runner->start(j);
  REQUIRE(started.disk_offer);
  const disk_offer_reply offer = q.disk->offer(*started.disk_offer);
  REQUIRE(offer.offer);
  q.service().clear();  // between the offer and the read
  const run_result r = run_to_end(*q.runner, q.runner->offered(offer), q.disk.get());
  REQUIRE(r.done);
  CHECK(r.done->source == cache_source::cold);
  CHECK(r.done->prefilled == static_cast<long>(prompt.size()));
  CHECK(q.service().stats().restore_failures == 1);
  CHECK(r.text == cold_text(c, prompt, 6));
}
