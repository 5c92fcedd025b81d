// The durable prefix store (runtime/disk/disk_store.hpp) on a real directory: a stored prefix restores
// a cold prefill's bits through a fresh store and engine; lookups, namespaces, supersession, the
// three-step write, clear, stats and token_prefixes. Faults: test_disk_store_faults.cpp; scan and
// restarts: test_disk_store_recovery.cpp; budget and lifetime: test_disk_store_eviction.cpp.
#include <catch2/catch.hpp>

#include <fstream>

#include "tests/support/disk_store_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

// ---- Round trip and lookups -----------------------------------------------------------------

TEST_CASE("a stored prefix restores a cold prefill's bits through a fresh store", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 10);
  auto cold = prefilled(b.c, tokens, line);
  const auto stored = slice(tokens, 0, line);
  {
    auto writer = b.open();
    CHECK(writer->folder() == b.folder());
    REQUIRE(writer->store(stored, cold->cache_state()));
    CHECK(writer->entries() == 1);
    CHECK(writer->chunk_count() == 4);
  }
  // The files, named as the header says, each of its exact size.
  std::vector<std::string> expect;
  for (std::size_t k = 1; k <= 4; ++k)
    expect.push_back("c-" + hex16(prefix_hash(tokens.data(), k * b.g)) + ".chk");
  expect.push_back("n-_/a-" + hex16(prefix_hash(tokens.data(), line)) + ".anc");
  std::sort(expect.begin(), expect.end());
  CHECK(files_under(b.folder()) == expect);
  for (const auto& f : expect)
    CHECK(fs::file_size(fs::path(b.folder()) / f) == (f[0] == 'c' ? b.cfb : b.afb(line)));

  // A fresh env and store: everything comes back from the headers.
  uring_env env2;
  disk_store reader(env2, b.layout, b.clock, options_in(b.dir.str()));
  const disk_scan_report report = reader.scan();
  CHECK(report.indexed == 5);
  CHECK(report.tmp_reaped == 0);
  CHECK(report.foreign_swept == 0);
  CHECK(report.damaged_removed == 0);
  CHECK(reader.entries() == 1);
  CHECK(reader.chunk_count() == 4);
  CHECK(reader.total_bytes() == 4 * b.cfb + b.afb(line));
  CHECK(reader.longest_durable_prefix_tokens() == line);

  const auto hit = reader.find(tokens);
  REQUIRE(hit);
  CHECK(hit->ns.empty());
  CHECK(hit->line == line);
  CHECK(hit->read_bytes == 4 * b.cfb + b.afb(line));

  SECTION("into a fresh engine") {
    auto fresh = make_engine(b.c);
    const auto r = reader.restore(*hit, tokens, fresh->cache_state());
    INFO(r.error().error());
    REQUIRE(bool(r));
    CHECK(r->bytes_read == hit->read_bytes);
    require_same_as_cold(*fresh, *cold, line);
    // The rest of the prompt forwards to the same logits and state on both.
    fresh->prefill(slice(tokens, line, tokens.size()));
    cold->prefill(slice(tokens, line, tokens.size()));
    CHECK(same_bytes(fresh->last_logits(), cold->last_logits()));
    require_same_as_cold(*fresh, *cold, tokens.size());
  }
  SECTION("into an engine that held another, longer sequence") {
    auto used = prefilled(b.c, test_tokens(200, 9), 200);
    const auto r = reader.restore(*hit, tokens, used->cache_state());
    INFO(r.error().error());
    REQUIRE(bool(r));
    require_same_as_cold(*used, *cold, line);
    used->prefill(slice(tokens, line, tokens.size()));
    cold->prefill(slice(tokens, line, tokens.size()));
    CHECK(same_bytes(used->last_logits(), cold->last_logits()));
  }
}

TEST_CASE("lookups leave one token to forward and stay on the grid", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 10);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));

  // find caps the line at prompt.size() - 1.
  CHECK_FALSE(store->find(slice(tokens, 0, line)));
  REQUIRE(store->find(slice(tokens, 0, line + 1)));
  CHECK(store->find(slice(tokens, 0, line + 1))->line == line);
  CHECK_FALSE(store->find(slice(tokens, 0, line - 1)));
  CHECK_FALSE(store->find(slice(tokens, 0, 3 * b.g + 1)));  // no anchor at 96
  CHECK_FALSE(store->find({}));
  CHECK_FALSE(store->find(slice(tokens, 0, 1)));
  // Another prompt (a token below the line differs) or another namespace finds nothing.
  auto other = tokens;
  other[5] ^= 1;
  CHECK_FALSE(store->find(other));
  other = tokens;
  other[line - 1] ^= 1;
  CHECK_FALSE(store->find(other));
  CHECK_FALSE(store->find(tokens, "x"));

  // find_exact: exactly the anchor's tokens.
  const auto exact = store->find_exact(slice(tokens, 0, line));
  REQUIRE(exact);
  CHECK(exact->line == line);
  CHECK(exact->read_bytes == 4 * b.cfb + b.afb(line));
  CHECK_FALSE(store->find_exact(slice(tokens, 0, line + 1)));
  CHECK_FALSE(store->find_exact(slice(tokens, 0, 3 * b.g)));
  CHECK_FALSE(store->find_exact(slice(tokens, 0, line), "x"));

  CHECK(store->has_durable_prefix(slice(tokens, 0, line)));
  CHECK_FALSE(store->has_durable_prefix(slice(tokens, 0, 3 * b.g)));  // chunks, no anchor
  CHECK_FALSE(store->has_durable_prefix(slice(tokens, 0, 100)));      // off the grid
  CHECK_FALSE(store->has_durable_prefix(slice(tokens, 0, line), "x"));
  CHECK(store->longest_durable_prefix_tokens() == line);
}

// ---- Namespaces and supersession ------------------------------------------------------------

TEST_CASE("namespaces see only their own anchors and share every chunk", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state(), "a"));
  CHECK(store->find(tokens, "a"));
  CHECK_FALSE(store->find(tokens, "b"));
  CHECK_FALSE(store->find(tokens, ""));
  CHECK(exists(anchor_file(*store, "a", tokens, line)));

  // The same prefix in "b": four chunks present, one anchor written.
  const auto w = stage(*cold, tokens, "b", true);
  CHECK(store->bytes_needed(w) == b.afb(line));
  const std::uint64_t writes = b.env.counters().writes;
  const disk_write_report r = store->write(w);
  INFO(r.error);
  CHECK_FALSE(r.failed);
  CHECK_FALSE(r.refused);
  CHECK(r.chunks_written == 0);
  CHECK(r.chunks_present == 4);
  CHECK(r.anchors_written == 1);
  CHECK(r.superseded == 0);  // another namespace's anchor is not this one's to drop
  CHECK(r.bytes_written == b.afb(line));
  CHECK(b.env.counters().writes == writes + 1);
  CHECK(store->chunk_count() == 4);
  CHECK(store->entries() == 2);
  CHECK(store->find(tokens, "a"));
  CHECK(store->find(tokens, "b"));
  CHECK_FALSE(store->find(tokens, ""));
  CHECK(count_files(b.folder()) == 6);
  CHECK(store->total_bytes() == bytes_under(b.folder()));

  // A fresh store sees the same, and restores from either namespace exactly.
  auto again = b.open();
  CHECK(again->entries() == 2);
  CHECK(again->chunk_count() == 4);
  CHECK_FALSE(again->find(tokens, ""));
  for (const char* ns : {"a", "b"}) {
    INFO("namespace " << ns);
    const auto hit = again->find(tokens, ns);
    REQUIRE(hit);
    CHECK(hit->ns == ns);
    auto fresh = make_engine(b.c);
    const auto res = again->restore(*hit, tokens, fresh->cache_state());
    INFO(res.error().error());
    REQUIRE(bool(res));
    require_same_as_cold(*fresh, *cold, line);
  }
}

TEST_CASE("store supersedes the namespace's shorter anchors of the same prefix only", "[disk]") {
  bench b;
  // Two tokens past the longest anchor: p130 below looks the 128 anchor up with a longer prompt.
  const auto tokens = test_tokens(4 * b.g + 2);
  const auto others = test_tokens(2 * b.g + 1, 11);
  auto e = prefilled(b.c, tokens, 2 * b.g);
  auto o = prefilled(b.c, others, 2 * b.g);
  auto store = b.open();
  const auto t64 = slice(tokens, 0, 2 * b.g), t128 = slice(tokens, 0, 4 * b.g);
  const auto p70 = slice(tokens, 0, 70), p130 = slice(tokens, 0, 130);

  REQUIRE(store->store(t64, e->cache_state(), "s"));
  REQUIRE(store->store(t64, e->cache_state(), "o"));
  REQUIRE(store->store(slice(others, 0, 2 * b.g), o->cache_state(), "s"));
  const staged_write keep64 = stage(*e, tokens, "k", false);
  REQUIRE(store->write(keep64).anchors_written == 1);
  REQUIRE(store->find(p70, "s"));
  CHECK(store->entries() == 4);

  e->prefill(slice(tokens, 2 * b.g, 4 * b.g));
  REQUIRE(store->store(t128, e->cache_state(), "s"));
  // "s"'s 64 anchor of this prefix is gone, from the index and from disk.
  CHECK_FALSE(store->find(p70, "s"));
  CHECK_FALSE(exists(anchor_file(*store, "s", tokens, 2 * b.g)));
  REQUIRE(store->find(p130, "s"));
  CHECK(store->find(p130, "s")->line == 4 * b.g);
  // Another prefix in the same namespace and the same prefix in another one stay.
  CHECK(store->find(others, "s"));
  CHECK(store->find(p70, "o"));
  CHECK(store->find(p70, "k"));
  CHECK(store->entries() == 4);  // s:128, s:others, o:64, k:64
  // The chunks below the dropped anchor carry the new one: all still there.
  CHECK(store->chunk_count() == 4 + 2);

  // Without supersede both lines of "k" stay.
  const disk_write_report r = store->write(stage(*e, tokens, "k", false));
  INFO(r.error);
  CHECK(r.anchors_written == 1);
  CHECK(r.superseded == 0);
  REQUIRE(store->find(p70, "k"));
  CHECK(store->find(p70, "k")->line == 2 * b.g);
  REQUIRE(store->find(p130, "k"));
  CHECK(store->find(p130, "k")->line == 4 * b.g);
  CHECK(store->entries() == 5);

  // A shorter anchor does not supersede a longer one: its tokens are not a prefix of it.
  auto e64 = prefilled(b.c, tokens, 2 * b.g);
  REQUIRE(store->store(t64, e64->cache_state(), "s"));
  CHECK(store->find(p70, "s"));
  CHECK(store->find(p130, "s"));
  CHECK(store->entries() == 6);

  // The index agrees with the disk, and a fresh scan finds the same.
  CHECK(store->total_bytes() == bytes_under(b.folder()));
  auto again = b.open();
  CHECK(again->entries() == 6);
}

// ---- Maintenance ----------------------------------------------------------------------------

TEST_CASE("clear removes every file of our folder, and stats count what happened", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto t = test_tokens(line + 1), u = test_tokens(line + 1, 8);
  auto et = prefilled(b.c, t, line), eu = prefilled(b.c, u, line);
  auto store = b.open();
  REQUIRE(store->store(slice(t, 0, line), et->cache_state()));
  REQUIRE(store->store(slice(u, 0, line), eu->cache_state(), "z"));

  const nlohmann::json s0 = store->stats();
  REQUIRE(s0.is_object());
  for (const char* k : {"hits", "restore_failures", "write_failures", "refusals", "evictions", "superseded",
                        "files_written", "bytes_written", "bytes_read"})
    CHECK(counter(s0, k) >= 0);
  CHECK(counter(s0, "entries") == 2);
  CHECK(counter(s0, "chunks") == 8);
  CHECK(counter(s0, "bytes") == static_cast<long>(store->total_bytes()));
  CHECK(counter(s0, "files_written") == 10);
  CHECK(counter(s0, "bytes_written") == static_cast<long>(bytes_under(b.folder())));
  const long hits0 = counter(s0, "hits");
  const long failures0 = counter(s0, "write_failures");

  auto scratch = make_engine(b.c);
  const auto hit = store->find(t);
  REQUIRE(hit);
  REQUIRE(bool(store->restore(*hit, t, scratch->cache_state())));
  CHECK(counter(store->stats(), "hits") == hits0 + 1);
  CHECK(counter(store->stats(), "bytes_read") ==
        counter(s0, "bytes_read") + static_cast<long>(hit->read_bytes));

  b.env.no_space_after(0);
  auto e64 = prefilled(b.c, test_tokens(2 * b.g, 50), 2 * b.g);
  CHECK_FALSE(store->store(test_tokens(2 * b.g, 50), e64->cache_state()));
  b.env.heal();
  CHECK(counter(store->stats(), "write_failures") == failures0 + 1);

  // Another engine's folder next to ours, and a generation checkpoint in ours.
  const std::string theirs = join_path(b.dir.str(), "0123456789abcdef");
  fs::create_directories(theirs);
  std::ofstream(join_path(theirs, "c-0000000000000001.chk")) << "theirs";
  std::ofstream(join_path(store->folder(), "g-00000000000000aa-0000000033.gen")) << "ckpt";
  const std::size_t files = count_files(store->folder());
  REQUIRE(files == 5 + 5 + 1);

  CHECK(store->clear() == files);
  CHECK(count_files(store->folder()) == 0);
  CHECK(store->entries() == 0);
  CHECK(store->chunk_count() == 0);
  CHECK(store->total_bytes() == 0);
  CHECK(store->longest_durable_prefix_tokens() == 0);
  CHECK_FALSE(store->find(t));
  CHECK_FALSE(store->find(u, "z"));
  CHECK(files_under(theirs) == std::vector<std::string>{"c-0000000000000001.chk"});

  // And the store serves again.
  REQUIRE(store->store(slice(t, 0, line), et->cache_state()));
  CHECK(store->find(t));
}

TEST_CASE("token_prefixes lists the ids of every usable anchor", "[disk]") {
  bench b;
  const auto t = test_tokens(4 * b.g + 1), u = test_tokens(4 * b.g + 1, 60);
  auto e = make_engine(b.c);
  auto eu = prefilled(b.c, u, 4 * b.g);
  auto store = b.open();
  CHECK(store->token_prefixes().empty());
  e->prefill(slice(t, 0, b.g));
  REQUIRE(store->store(slice(t, 0, b.g), e->cache_state(), "y"));
  e->prefill(slice(t, b.g, 2 * b.g));
  REQUIRE(store->store(slice(t, 0, 2 * b.g), e->cache_state(), "w"));
  REQUIRE(store->store(slice(u, 0, 4 * b.g), eu->cache_state()));

  const std::vector<std::vector<token_id>> expect{slice(t, 0, b.g), slice(t, 0, 2 * b.g),
                                                  slice(u, 0, 4 * b.g)};
  CHECK(store->token_prefixes() == expect);
  CHECK(store->longest_durable_prefix_tokens() == 4 * b.g);
  // From the files alone, after a restart.
  auto restarted = b.open();
  CHECK(restarted->token_prefixes() == expect);
  // A chunk that can no longer be read: the anchor over it is skipped, the others stay.
  fs::remove(chunk_file(*restarted, t, 2 * b.g));
  CHECK(restarted->token_prefixes() ==
        std::vector<std::vector<token_id>>{slice(t, 0, b.g), slice(u, 0, 4 * b.g)});
}

// ---- A write in three steps (prepare, execute elsewhere, commit) ---------------------------

TEST_CASE("a write in three steps indexes what it wrote, unless its chain went meanwhile", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto t = test_tokens(line + 1), u = test_tokens(line + 1, 70);
  auto et = prefilled(b.c, t, line), eu = prefilled(b.c, u, line);
  auto store = b.open();
  uring_env writer_env;  // the writer's own env, as the disk writer actor has

  const staged_write w = stage(*et, t, "", true);
  const disk_write_plan plan = store->prepare(w);
  REQUIRE_FALSE(plan.refused);
  REQUIRE(plan.files.size() == 5);
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK_FALSE(plan.files[k].anchor);
    CHECK(plan.files[k].line == (k + 1) * b.g);
  }
  CHECK(plan.files[4].anchor);
  CHECK(plan.bytes == b.entry_bytes(line));
  CHECK(count_files(b.folder()) == 0);
  CHECK_FALSE(store->find(t));

  // A second write of the same prefix while the first is in flight skips its chunks.
  const staged_write w2 = stage(*et, t, "other", true);
  const disk_write_plan plan2 = store->prepare(w2);
  CHECK(plan2.chunks_present == 4);
  for (const auto& f : plan2.files) CHECK(f.anchor);

  const auto results = execute_disk_write(writer_env, b.layout, w, plan);
  REQUIRE(results.size() == 5);
  for (const auto& r : results) {
    INFO(r.error().error());
    CHECK(bool(r));
  }
  CHECK_FALSE(store->find(t));  // written, not yet indexed
  const disk_write_report rep = store->commit(w, plan, results);
  INFO(rep.error);
  CHECK_FALSE(rep.failed);
  CHECK(rep.chunks_written == 4);
  CHECK(rep.anchors_written == 1);
  CHECK(rep.bytes_written == b.entry_bytes(line));
  const auto rep2 = store->commit(w2, plan2, execute_disk_write(writer_env, b.layout, w2, plan2));
  CHECK(rep2.anchors_written == 1);
  CHECK(store->entries() == 2);
  CHECK(store->total_bytes() == bytes_under(b.folder()));
  {
    const auto hit = store->find(t);
    REQUIRE(hit);
    auto fresh = make_engine(b.c);
    const auto r = store->restore(*hit, t, fresh->cache_state());
    INFO(r.error().error());
    REQUIRE(bool(r));
    require_same_as_cold(*fresh, *et, line);
  }

  SECTION("a clear between the write and its commit: what it wrote is deleted") {
    const staged_write wu = stage(*eu, u, "", true);
    const disk_write_plan pu = store->prepare(wu);
    REQUIRE(pu.files.size() == 5);
    const auto ru = execute_disk_write(writer_env, b.layout, wu, pu);
    REQUIRE(ru.size() == 5);
    store->clear();
    store->commit(wu, pu, ru);
    CHECK(store->entries() == 0);
    CHECK(store->chunk_count() == 0);
    CHECK_FALSE(store->find(u));
    CHECK(count_files(b.folder()) == 0);
  }
  SECTION("a failed restore between the write and its commit drops the anchor over it") {
    // The anchor of "x" on t's chain is planned; then t's chunk 3 fails a restore and goes
    // with everything above it, so the new anchor has no chain left.
    const staged_write wx = stage(*et, t, "x", true);
    const disk_write_plan px = store->prepare(wx);
    REQUIRE(px.files.size() == 1);
    const auto rx = execute_disk_write(writer_env, b.layout, wx, px);
    std::ofstream(chunk_file(*store, t, 3 * b.g), std::ios::binary | std::ios::trunc)
        << std::string(b.cfb, 'x');
    auto scratch = make_engine(b.c);
    REQUIRE_FALSE(bool(store->restore(*store->find(t), t, scratch->cache_state())));
    store->commit(wx, px, rx);
    CHECK_FALSE(store->find(t, "x"));
    CHECK_FALSE(exists(anchor_file(*store, "x", t, line)));
    CHECK(store->total_bytes() == bytes_under(b.folder()));
  }
  SECTION("a plan committed with no results releases its marks") {
    const staged_write wu = stage(*eu, u, "", true);
    const disk_write_plan pu = store->prepare(wu);
    REQUIRE(pu.files.size() == 5);
    store->commit(wu, pu, {});
    CHECK_FALSE(store->find(u));
    CHECK(count_files(b.folder()) == 6);
    const disk_write_plan again = store->prepare(wu);
    CHECK(again.files.size() == 5);
    CHECK(again.chunks_present == 0);
    const auto rep3 = store->commit(wu, again, execute_disk_write(writer_env, b.layout, wu, again));
    CHECK(rep3.chunks_written == 4);
    CHECK(store->find(u));
  }
}

TEST_CASE("every read the store refuses is one restore failure, whichever check refused it", "[disk]") {
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 1);
  auto cold = prefilled(b.c, tokens, line);
  auto store = b.open();
  REQUIRE(store->store(slice(tokens, 0, line), cold->cache_state()));
  const auto hit = store->find(tokens);
  REQUIRE(hit);
  const long failures0 = counter(store->stats(), "restore_failures");

  // Refused before any file is looked at: a line of 0, off the grid, past the prompt.
  disk_hit bad = *hit;
  long expected = failures0;
  for (std::size_t at : {std::size_t{0}, line - 1, line + b.g}) {
    bad.line = at;
    CHECK_FALSE(store->read_verified(bad, tokens));
    CHECK(counter(store->stats(), "restore_failures") == ++expected);
  }
  // A grid line the prompt reaches but no anchor holds.
  bad.line = line - b.g;
  CHECK_FALSE(store->read_verified(bad, tokens));
  CHECK(counter(store->stats(), "restore_failures") == ++expected);
  CHECK(store->restore_failures() == expected);
  // Each of them by why: nothing on disk at that line.
  const disk_restore_failures why = store->stats().restore_failure_reasons;
  CHECK(why.missing == expected);
  CHECK(why.total() == expected);
  // And the anchor itself reads, counting no failure.
  CHECK(store->read_verified(*hit, tokens));
  CHECK(counter(store->stats(), "restore_failures") == expected);
}
