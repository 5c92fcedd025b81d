// The durable prefix store under faults injected below the file-system seam (fault_env): a full
// disk, read errors, a crash before the rename, flipped bits, ids that differ under valid crcs.
// Every failure leaves the engine untouched, the index consistent with the files on disk, and
// serving able to go on.
#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "tests/support/disk_store_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

// ---- Faults ---------------------------------------------------------------------------------

TEST_CASE("a full disk mid-store fails softly and leaves only whole, indexed files", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  const auto before_stats = store->stats();
  const long failures0 = counter(before_stats, "write_failures");

  // Room for two chunks and a bit: the third chunk's write runs out of space.
  b.env.no_space_after(2 * b.cfb + 100);
  CHECK_FALSE(store->store(slice(tokens, 0, line), cold->cache_state()));
  CHECK(b.env.counters().no_space >= 1);
  CHECK(tmp_files_under(b.folder()).empty());
  // Chunks are written in ascending order and the write stops at the first failure.
  std::vector<std::string> expect{"c-" + hex16(prefix_hash(tokens.data(), b.g)) + ".chk",
                                  "c-" + hex16(prefix_hash(tokens.data(), 2 * b.g)) + ".chk"};
  std::sort(expect.begin(), expect.end());
  CHECK(files_under(b.folder()) == expect);
  CHECK(store->entries() == 0);
  CHECK(store->chunk_count() == 2);
  CHECK(store->total_bytes() == bytes_under(b.folder()));
  CHECK_FALSE(store->find(tokens));
  CHECK(counter(store->stats(), "write_failures") > failures0);

  // Still full: a write that fits nothing fails the same way, nothing thrown.
  disk_write_report r;
  REQUIRE_NOTHROW(r = store->write(stage(*cold, tokens, "x", false)));
  CHECK(r.failed);
  CHECK_FALSE(r.error.empty());
  CHECK(r.chunks_present == 2);
  CHECK(tmp_files_under(b.folder()).empty());
  CHECK(store->total_bytes() == bytes_under(b.folder()));

  // A fresh scan indexes exactly the complete files.
  uring_env env2;
  disk_store rescan(env2, b.layout, b.clock, options_in(b.dir.str()));
  const auto report = rescan.scan();
  CHECK(report.indexed == 2);
  CHECK(report.damaged_removed == 0);
  CHECK(report.tmp_reaped == 0);
  CHECK_FALSE(rescan.find(tokens));

  // Space again: the same store completes the entry, the two chunks reused, and restores exactly.
  b.env.heal();
  const std::uint64_t writes = b.env.counters().writes;
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  CHECK(b.env.counters().writes == writes + 3);  // chunks 3 and 4, the anchor
  const auto hit = store->find(tokens);
  REQUIRE(hit);
  auto fresh = make_engine(b.c);
  const auto res = store->restore(*hit, tokens, fresh->cache_state());
  INFO(res.error().error());
  REQUIRE(bool(res));
  require_same_as_cold(*fresh, *cold, line);
}

TEST_CASE("a read error fails the restore, leaves the engine untouched and drops the chain", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  const long failures0 = counter(store->stats(), "restore_failures");

  auto target = prefilled(b.c, test_tokens(40, 9), 40);
  const untouched guard(*target, line);
  const auto hit = store->find(tokens);
  REQUIRE(hit);
  b.env.fail_reads(EIO);
  expected<disk_restore> r = status::failure("not read");
  REQUIRE_NOTHROW(r = store->restore(*hit, tokens, target->cache_state()));
  CHECK_FALSE(bool(r));
  CHECK_FALSE(r.error().error().empty());
  CHECK(b.env.counters().read_errors >= 1);
  guard.check();
  CHECK_FALSE(store->find(tokens));
  CHECK(counter(store->stats(), "restore_failures") == failures0 + 1);
  CHECK(store->stats().restore_failure_reasons.io == 1);  // the read's own error, no record check
  CHECK(store->total_bytes() == bytes_under(b.folder()));

  // Serving goes on: once the disk reads again, a new store and restore are exact.
  b.env.heal();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  const auto again = store->find(tokens);
  REQUIRE(again);
  CHECK(again->line == line);
  const auto ok = store->restore(*again, tokens, target->cache_state());
  INFO(ok.error().error());
  REQUIRE(bool(ok));
  require_same_as_cold(*target, *cold, line);
}

TEST_CASE("a crash before the rename leaves a tmp that the next scan reaps", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  const auto others = test_tokens(line + 1, 5);
  auto cold = prefilled(b.c, tokens, line);
  auto cold_other = prefilled(b.c, others, line);
  auto store = b.open();

  // A crash on the first chunk of a prefix: its tmp stays in our folder.
  b.env.crash_before_rename();
  CHECK_FALSE(store->store(slice(others, 0, line), cold_other->cache_state()));
  CHECK(b.env.counters().crashes == 1);
  CHECK(tmp_files_under(b.folder()).size() == 1);
  CHECK(store->chunk_count() == 0);
  CHECK_FALSE(store->find(others));

  // A crash on an anchor whose chunks are all there: its tmp stays in the namespace's folder.
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state(), "x"));
  b.env.crash_before_rename();
  CHECK_FALSE(store->store(slice(tokens, 0, line), cold->cache_state(), "y"));
  const auto tmps = tmp_files_under(b.folder());
  REQUIRE(tmps.size() == 2);
  CHECK(std::count_if(tmps.begin(), tmps.end(),
                      [](const std::string& f) { return f.rfind("n-y/", 0) == 0; }) == 1);
  CHECK_FALSE(store->find(tokens, "y"));

  // Restart: the orphans are reaped, nothing damaged is indexed, what was renamed is served.
  uring_env env2;
  disk_store restarted(env2, b.layout, b.clock, options_in(b.dir.str()));
  const auto report = restarted.scan();
  CHECK(report.tmp_reaped == 2);
  CHECK(report.indexed == 5);
  CHECK(report.damaged_removed == 0);
  CHECK(tmp_files_under(b.folder()).empty());
  CHECK(count_files(b.folder()) == 5);
  CHECK_FALSE(restarted.find(tokens, "y"));
  CHECK_FALSE(restarted.find(others));
  const auto hit = restarted.find(tokens, "x");
  REQUIRE(hit);
  auto fresh = make_engine(b.c);
  const auto r = restarted.restore(*hit, tokens, fresh->cache_state());
  INFO(r.error().error());
  REQUIRE(bool(r));
  require_same_as_cold(*fresh, *cold, line);
}

TEST_CASE("a flipped bit in an anchor or a chunk is refused and its chain deleted", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  auto target = prefilled(b.c, test_tokens(50, 9), 50);
  const untouched guard(*target, line);
  // Two more anchors on the chain: one on chunk 1, one on chunk 4 of another namespace.
  auto e32 = prefilled(b.c, tokens, b.g);
  REQUIRE(store->store(slice(tokens, 0, b.g), e32->cache_state(), "short"));
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state(), "other"));
  const std::size_t chunk_hb = df::chunk_fixed_bytes + b.layout.views.size() * df::entry_bytes;
  const std::size_t anchor_hb =
      df::anchor_fixed_bytes + 8 * (line / b.g) + b.layout.sections.size() * df::entry_bytes;

  SECTION("an anchor section, flipped as it is read") {
    // The last byte of the last section: past every chunk file's end, so only the anchor's
    // read covers it.
    const std::size_t at = b.afb(line) - 1;
    REQUIRE(at >= anchor_hb);
    REQUIRE(at >= b.cfb);
    b.env.flip_bit_on_read(at, 6);
    const auto hit = store->find(tokens);
    REQUIRE(hit);
    const auto r = store->restore(*hit, tokens, target->cache_state());
    CHECK_FALSE(bool(r));
    CHECK_THAT(r.error().error(), Catch::Contains("crc"));
    CHECK(b.env.counters().bit_flips == 1);
    guard.check();
    // The anchor is gone; the chunks below it stay.
    CHECK_FALSE(exists(anchor_file(*store, "", tokens, line)));
    for (std::size_t k = 1; k <= 4; ++k) CHECK(exists(chunk_file(*store, tokens, k * b.g)));
    CHECK(store->entries() == 2);
    CHECK(store->chunk_count() == 4);
    CHECK_FALSE(store->find(tokens));
    CHECK(store->find(tokens, "short"));
    CHECK(store->find(tokens, "other"));  // its own anchor file is sound
  }
  SECTION("a chunk's rows, damaged on disk") {
    // Chunk 2: a byte in the middle of its first view's rows.
    const std::string path = chunk_file(*store, tokens, 2 * b.g);
    const std::size_t at = chunk_hb + b.g * df::token_bytes + b.g * b.layout.views[0].bytes_per_token / 2;
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      REQUIRE(f);
      f.seekg(static_cast<std::streamoff>(at));
      char c = 0;
      f.read(&c, 1);
      c = static_cast<char>(c ^ 0x10);
      f.seekp(static_cast<std::streamoff>(at));
      f.write(&c, 1);
    }
    const auto hit = store->find(tokens);
    REQUIRE(hit);
    const auto r = store->restore(*hit, tokens, target->cache_state());
    CHECK_FALSE(bool(r));
    CHECK_THAT(r.error().error(), Catch::Contains("crc"));
    guard.check();
    // Chunk 2, the longer chunks and the anchor are gone; chunk 1 stays.
    CHECK(exists(chunk_file(*store, tokens, b.g)));
    for (std::size_t k = 2; k <= 4; ++k) CHECK_FALSE(exists(chunk_file(*store, tokens, k * b.g)));
    CHECK_FALSE(exists(anchor_file(*store, "", tokens, line)));
    CHECK(store->chunk_count() == 1);
    CHECK(store->entries() == 1);
    CHECK_FALSE(store->find(tokens));
    CHECK(store->find(tokens, "short"));  // the anchor on chunk 1 stays
    CHECK_FALSE(store->find(tokens, "other"));
    CHECK_FALSE(exists(anchor_file(*store, "other", tokens, line)));
  }
  CHECK(store->total_bytes() == bytes_under(b.folder()));
  CHECK(tmp_files_under(b.folder()).empty());

  // Serving goes on: the entry is written again and restores exactly.
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  const auto hit = store->find(tokens);
  REQUIRE(hit);
  const auto r = store->restore(*hit, tokens, target->cache_state());
  INFO(r.error().error());
  REQUIRE(bool(r));
  require_same_as_cold(*target, *cold, line);
}

TEST_CASE("a chunk whose ids differ under valid crcs is refused by the token check", "[disk]") {
  // A 64-bit prefix-hash collision cannot be produced, so the chunk file is made to look like
  // one: an id of its token block changed and every crc resealed. Only the comparison of the
  // stored ids against the prompt can catch it.
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));

  const std::size_t hb = df::chunk_fixed_bytes + b.layout.views.size() * df::entry_bytes;
  const std::string path = chunk_file(*store, tokens, 2 * b.g);  // rows [32, 64)
  bytes f(b.cfb);
  {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.read(reinterpret_cast<char*>(f.data()), static_cast<std::streamsize>(f.size())));
  }
  f[hb + 4 * 8] ^= 1;  // the id at position 40
  put32(f, df::chunk_offset::tokens_crc, crc32(f.data() + hb, b.g * df::token_bytes));
  reseal_header(f, hb);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    REQUIRE(out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size())));
  }
  // A fresh scan takes it: its header is sound.
  auto restarted = b.open();
  CHECK(restarted->entries() == 1);
  CHECK(restarted->chunk_count() == 4);

  auto target = make_engine(b.c);
  const untouched guard(*target, line);
  const auto hit = restarted->find(tokens);
  REQUIRE(hit);
  const auto r = restarted->restore(*hit, tokens, target->cache_state());
  CHECK_FALSE(bool(r));
  CHECK_THAT(r.error().error(), Catch::Contains("token"));
  guard.check();
  CHECK(exists(chunk_file(*restarted, tokens, b.g)));
  for (std::size_t k = 2; k <= 4; ++k) CHECK_FALSE(exists(chunk_file(*restarted, tokens, k * b.g)));
  CHECK_FALSE(exists(anchor_file(*restarted, "", tokens, line)));
  CHECK(restarted->chunk_count() == 1);
  CHECK_FALSE(restarted->find(tokens));
  CHECK(restarted->total_bytes() == bytes_under(b.folder()));
}

TEST_CASE("a write whose directory fsync fails leaves no file behind and nothing indexed", "[disk]") {
  // The one failure after the rename: the new file is in place but not durable. The store must
  // not keep an unindexed file (outside its budget, and indexed by the next scan).
  bench b;
  const std::size_t line = 2 * b.g;
  const auto tokens = test_tokens(line + 1, 41);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  b.env.fail_directory_sync();  // the first file: chunk 1
  CHECK_FALSE(store->store(slice(tokens, 0, line), cold->cache_state()));
  CHECK(b.env.counters().dir_sync_failures == 1);
  CHECK(store->chunk_count() == 0);
  CHECK(count_files(b.folder()) == 0);
  CHECK(counter(store->stats(), "write_failures") == 1);
  // Nothing is left for a restart to index; the next write goes through.
  CHECK(b.open()->chunk_count() == 0);
  CHECK(store->store(slice(tokens, 0, line), cold->cache_state()));
}

TEST_CASE("a fault on the file read ahead is caught before anything is applied", "[disk]") {
  // A restore of four chunks and an anchor submits file i + 1 before it verifies file i: the
  // third chunk is in flight while the second is checked. A fault aimed at it alone (a flipped
  // bit in its rows, or EIO) fails the restore, the engine untouched, and drops the chain from
  // that chunk up; the two below stay.
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  auto target = prefilled(b.c, test_tokens(50, 9), 50);
  const untouched guard(*target, line);
  const std::string third = chunk_file(*store, tokens, 3 * b.g);
  b.env.read_faults_only_for(third);
  const std::uint64_t reads_before = b.env.counters().reads;

  SECTION("a flipped bit in its rows") {
    const std::size_t chunk_hb = df::chunk_fixed_bytes + b.layout.views.size() * df::entry_bytes;
    b.env.flip_bit_on_read(chunk_hb + b.g * df::token_bytes + 5, 3);
    const auto hit = store->find(tokens);
    REQUIRE(hit);
    const auto r = store->restore(*hit, tokens, target->cache_state());
    CHECK_FALSE(bool(r));
    CHECK_THAT(r.error().error(), Catch::Contains("crc"));
    CHECK(b.env.counters().bit_flips == 1);
    // Chunks 1 to 3 were read and chunk 4 was in flight when chunk 3 failed its crc; the
    // anchor was never asked for.
    CHECK(b.env.counters().reads - reads_before == 4);
  }
  SECTION("EIO") {
    b.env.fail_reads(EIO);
    const auto hit = store->find(tokens);
    REQUIRE(hit);
    const auto r = store->restore(*hit, tokens, target->cache_state());
    CHECK_FALSE(bool(r));
    CHECK_THAT(r.error().error(), Catch::Contains("injected"));
    CHECK(b.env.counters().read_errors == 1);
    // Chunk 3's read failed: nothing more was asked for.
    CHECK(b.env.counters().reads - reads_before == 3);
  }
  guard.check();
  CHECK(exists(chunk_file(*store, tokens, b.g)));
  CHECK(exists(chunk_file(*store, tokens, 2 * b.g)));
  CHECK_FALSE(exists(third));
  CHECK_FALSE(exists(chunk_file(*store, tokens, 4 * b.g)));
  CHECK_FALSE(exists(anchor_file(*store, "", tokens, line)));
  CHECK(store->chunk_count() == 2);
  CHECK(store->entries() == 0);
  CHECK(store->total_bytes() == bytes_under(b.folder()));

  // The env is idle again and serving goes on: written again, restored exactly.
  b.env.heal();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  const auto hit = store->find(tokens);
  REQUIRE(hit);
  const auto r = store->restore(*hit, tokens, target->cache_state());
  INFO(r.error().error());
  REQUIRE(bool(r));
  require_same_as_cold(*target, *cold, line);
}

TEST_CASE("each failed restore is counted once, by the first thing that failed", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  const std::string second =
      join_path(b.folder(), "c-" + hex16(prefix_hash(tokens.data(), 2 * b.g)) + ".chk");

  // A file shorter than the index says: truncated (the read reports the early end).
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  auto hit = store->find(tokens);
  REQUIRE(hit);
  std::filesystem::resize_file(second, b.cfb / 2);
  CHECK_FALSE(store->read_verified(*hit, tokens));
  disk_restore_failures why = store->stats().restore_failure_reasons;
  CHECK(why.truncated == 1);
  CHECK(why.total() == 1);

  // Written again, one bit of that chunk's rows flipped: its block's crc.
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  hit = store->find(tokens);
  REQUIRE(hit);
  {
    std::fstream f(second, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(b.cfb - 7));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(b.cfb - 7));
    f.put(static_cast<char>(c ^ 0x10));
  }
  CHECK_FALSE(store->read_verified(*hit, tokens));
  why = store->stats().restore_failure_reasons;
  CHECK(why.bad_crc == 1);
  CHECK(why.truncated == 1);
  CHECK(why.total() == 2);
  CHECK(counter(store->stats(), "restore_failures") == 2);

  // The chain went with the bad file: the same hit asked again finds nothing on disk.
  CHECK_FALSE(store->read_verified(*hit, tokens));
  why = store->stats().restore_failure_reasons;
  CHECK(why.missing == 1);
  CHECK(why.total() == 3);
}
