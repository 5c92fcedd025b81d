// The disk tier inside the device tiers, without actors: admission decided before the prefill,
// write-behind through jobs, a restart (a new store scanning the same folder) resuming from disk
// bit for bit like a cold prefill, the read decision, and a damaged file falling back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>

#include "runtime/disk/disk_codec.hpp"
#include "tests/support/fault_env.hpp"
#include "runtime/io/uring_env.hpp"
#include "tests/support/cache_fixture.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// One "process": an engine, device tiers and a disk tier on `dir`.
struct process {
  model_config c;
  std::unique_ptr<engine> e;
  uring_env base;
  fault_env env{base};  // passes everything through until a test switches a fault on
  system_eviction_clock clock;
  cache_tiers tiers;
  disk_scan_report scan;

  process(const std::string& dir, double assumed_read = 1e9, std::size_t min_tokens = 64,
          std::uint64_t stage_bytes = 1ULL << 30)
      : c(test_config("tiny")), e(make_engine(c)), tiers(small_cache(true)) {
    disk_tier_options o;
    o.store.dir = dir;
    o.store.eviction.min_free_bytes = 0;
    o.admission.min_tokens = min_tokens;
    o.assumed_read_bytes_per_s = assumed_read;
    o.stage_bytes = stage_bytes;
    auto d = std::make_unique<disk_tier>(env, e->layout(), clock, o);
    scan = d->start();
    tiers.attach_disk(std::move(d));
  }
  disk_tier& disk() { return *tiers.disk(); }
  // A request; its staged writes are written before it returns (no writer actor here).
  turn_result serve(const std::vector<token_id>& prompt, int max_tokens = 4,
                    const std::string& session = "s") {
    auto r = serve_turn(tiers, *e, prompt, max_tokens, session);
    disk().run_jobs();
    return r;
  }
};

// Serves `head` twice in one process, the resident and store rows dropped between, so both
// passes forward it cold: the second admits an anchor at its longest line.
void write_head_twice(const std::string& dir, const std::vector<token_id>& head) {
  process p(dir);
  p.serve(head);
  p.tiers.clear(cache_tier::resident);
  p.tiers.clear(cache_tier::store);
  p.serve(head);
  REQUIRE(p.disk().store().entries() == 1);
}

// What a cold engine emits after `prompt`, greedily.
std::vector<token_id> cold_output(const model_config& c, const std::vector<token_id>& prompt,
                                  int max_tokens) {
  auto cold = make_engine(c);
  cold->prefill(prompt);
  generation_request gr;
  gr.max_tokens = max_tokens;
  return generator(*cold, gr).run();
}

std::size_t files_with(const std::string& dir, const std::string& ext) {
  std::size_t n = 0;
  for (auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.path().extension() == ext) ++n;
  return n;
}

}  // namespace

TEST_CASE("a prompt seen once writes chunks and no anchor; seen twice, an anchor at its longest line",
          "[disk][admission]") {
  temp_dir dir("anchorage-disk-tier");
  process p(dir.str());
  const std::size_t g = static_cast<std::size_t>(p.c.grid);
  const auto prompt = test_tokens(5 * g + 7, 501);
  p.serve(prompt);
  CHECK(p.disk().store().chunk_count() == 5);
  CHECK(p.disk().store().entries() == 0);
  CHECK(files_with(dir.str(), ".anc") == 0);
  // The resident prefix would answer the same prompt (nothing forwarded cold, nothing counted):
  // another server, or one whose resident rows were replaced, forwards it cold again.
  p.tiers.clear(cache_tier::resident);
  p.tiers.clear(cache_tier::store);
  const auto second = p.serve(prompt);
  CHECK(second.offer.source == cache_source::cold);
  CHECK(p.disk().store().entries() == 1);
  CHECK(p.disk().store().longest_durable_prefix_tokens() == 5 * g);
  CHECK(files_with(dir.str(), ".anc") == 1);
  CHECK(files_with(dir.str(), ".chk") == 5);  // shared, not written again
}

TEST_CASE("after a restart a prompt resumes from disk and equals a cold prefill bit for bit",
          "[disk][exact]") {
  temp_dir dir("anchorage-disk-tier");
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const auto head = test_tokens(6 * g + 5, 502);
  write_head_twice(dir.str(), head);
  // A new process: a fresh engine, empty device tiers, the index rebuilt by the scan.
  process q(dir.str());
  CHECK(q.scan.indexed == 7);  // 6 chunks and the anchor
  auto prompt = head;
  const auto more = test_tokens(2 * g + 3, 503);
  prompt.insert(prompt.end(), more.begin(), more.end());
  const auto r = q.serve(prompt, 8);
  CHECK(r.offer.source == cache_source::disk);
  CHECK(r.offer.at == 6 * g);
  CHECK(r.prefilled == prompt.size() - 6 * g);
  // The restored prompt is the resident one, with the disk anchor as its anchor.
  CHECK(q.tiers.resident().anchors().size() >= 1);
  CHECK(nlohmann::json(q.tiers.stats())["disk"]["hits"] == 1);

  auto cold = make_engine(c);
  cold->prefill(prompt);
  generation_request gr;
  gr.max_tokens = 8;
  CHECK(generator(*cold, gr).run() == r.output);
  // The rows and sections after the same tokens (the decoded ones included) are the same bits.
  require_same_state(state_bytes(q.e->cache_state(), q.e->length()),
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
  CHECK(r.offer.source == cache_source::cold);  // the read failed its crc; nothing above the disk: cold
  CHECK(nlohmann::json(q.tiers.stats())["disk"]["restore_failures"] == 1);
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(q.disk().store().entries() == 0);      // the anchor on the chain went with it
  CHECK(q.disk().store().chunk_count() >= 1);  // the first chunk is intact and stays
  CHECK(cold_output(c, prompt, 4) == r.output);
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
  REQUIRE(q.disk().prefill_tokens_per_s() > 0);
  auto prompt = head;
  prompt.push_back(7);
  const auto r = q.serve(prompt, 2, "other");
  CHECK(r.offer.source == cache_source::cold);
  CHECK(nlohmann::json(q.tiers.stats())["disk"]["declined"] == 1);
}

TEST_CASE("a session resume's prefill writes nothing to disk; a guest neither", "[disk][admission]") {
  temp_dir dir("anchorage-disk-tier");
  process p(dir.str());
  const std::size_t g = static_cast<std::size_t>(p.c.grid);
  const auto first = test_tokens(3 * g + 2, 508);
  const auto t1 = p.serve(first, 6);
  const std::size_t chunks = p.disk().store().chunk_count();
  CHECK(chunks == 3);
  // The next turn resumes at the end anchor: its rows above the prompt are session state.
  const auto second = next_prompt(t1.offer.served, t1.output, 3 * g, 509);
  const auto t2 = p.serve(second, 4);
  REQUIRE(t2.offer.source == cache_source::end);
  CHECK(p.disk().store().chunk_count() == chunks);
  CHECK(p.disk().running_plan().writes_nothing());
}

TEST_CASE("a full disk below the seam: writes fail softly, answers stay exact, serving goes on", "[disk]") {
  temp_dir dir("anchorage-disk-tier");
  process p(dir.str());
  const std::size_t g = static_cast<std::size_t>(p.c.grid);
  const auto prompt = test_tokens(4 * g + 9, 510);
  p.env.no_space_after(0);
  const auto first = p.serve(prompt, 6);
  p.tiers.clear(cache_tier::resident);
  p.tiers.clear(cache_tier::store);
  const auto second = p.serve(prompt, 6);
  const auto d = nlohmann::json(p.tiers.stats())["disk"];
  CHECK(d["write_failures"].get<long>() >= 2);
  CHECK(d["entries"] == 0);
  CHECK(d["chunks"] == 0);
  CHECK(files_with(dir.str(), ".chk") + files_with(dir.str(), ".anc") + files_with(dir.str(), ".tmp") == 0);
  const auto expect = cold_output(p.c, prompt, 6);
  CHECK(first.output == expect);
  CHECK(second.output == expect);
  // The disk has room again: the next cold pass writes (the counts survived the failures).
  p.env.heal();
  p.tiers.clear(cache_tier::resident);
  p.tiers.clear(cache_tier::store);
  p.serve(prompt, 6);
  CHECK(p.disk().store().chunk_count() == 4);
  CHECK(p.disk().store().entries() == 1);
}

TEST_CASE("a staging pool too small for the whole prompt still writes the lines that fit", "[disk]") {
  temp_dir dir("anchorage-disk-tier");
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const std::uint64_t three_lines = 3 * g * make_engine(c)->layout().row_bytes();
  process p(dir.str(), 1e9, 64, three_lines);
  const auto prompt = test_tokens(6 * g + 1, 511);
  p.serve(prompt);
  CHECK(p.disk().store().chunk_count() == 3);  // lines 1..3: the chain from the start
  CHECK(nlohmann::json(p.tiers.stats())["disk"]["stage_refusals"] == 1);
  CHECK(p.disk().staged_bytes() == 0);
}

TEST_CASE("a guest on a side slot restores its head from disk into the side slot only", "[disk][guest]") {
  temp_dir dir("anchorage-disk-tier");
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const auto head = test_tokens(4 * g, 512);
  write_head_twice(dir.str(), head);
  process q(dir.str());
  // Slot 0 holds a long conversation; the guest is under a quarter of it.
  const auto resident = test_tokens(24 * g + 3, 513);
  q.serve(resident, 4, "long");
  const auto rows_before = q.tiers.resident().tokens();
  const std::size_t chunks_before = q.disk().store().chunk_count();
  auto guest = head;
  const auto more = test_tokens(g / 2, 514);
  guest.insert(guest.end(), more.begin(), more.end());
  request_info info;
  info.session_key = "title";
  info.max_tokens = 4;
  info.side_slot_free = true;
  auto o = q.tiers.plan(guest, info);
  REQUIRE(o.source == cache_source::disk);
  CHECK(o.via == cache_via::side);
  CHECK(o.at == 4 * g);
  auto side = make_engine(c);
  q.tiers.restore(side->cache_state(), o);
  REQUIRE(o.source == cache_source::disk);
  q.tiers.begin(o, side->cache_state());
  side->prefill(slice(guest, side->length(), guest.size()));
  q.tiers.after_prefill_step(side->cache_state(), side->where());
  q.tiers.finish(side->cache_state());
  q.disk().run_jobs();
  // The side slot's state is a cold prefill's; slot 0's rows and the disk are as they were.
  auto cold = make_engine(c);
  cold->prefill(guest);
  require_same_state(state_bytes(side->cache_state(), guest.size()),
                     state_bytes(cold->cache_state(), guest.size()), cold->layout());
  CHECK(q.tiers.resident().tokens() == rows_before);
  CHECK(q.disk().store().chunk_count() == chunks_before);
  CHECK(nlohmann::json(q.tiers.stats())["disk"]["hits"] == 1);
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
  const auto o = q.disk().offer(prompt, 0);
  REQUIRE(o);
  CHECK(o->line > 0);
  CHECK(o->line % g == 0);
  CHECK(o->line <= head.size());
  CHECK(o->hit.line == o->line);
  CHECK(o->read_bytes == o->hit.read_bytes);
  CHECK(o->read_bytes > 0);
  CHECK_FALSE(q.disk().offer(prompt, o->line));  // the tiers above start as late: no offer
  auto fresh = make_engine(c);
  std::string error;
  REQUIRE(q.disk().restore(*o, prompt, fresh->cache_state(), error));
  CHECK(error.empty());
}
