// The disk tier actor's runtime object without actors: an offer, then a verified read off the
// engine, then an apply on the engine's owner, equals a cold prefill bit for bit; an offer read
// after a clear, or a damaged file, fails cleanly with nothing applied; checkpoints round-trip;
// admission and the read decision as the actor answers them.
#include <catch2/catch.hpp>

#include <fstream>

#include "runtime/disk/disk_service.hpp"
#include "tests/support/disk_store_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

struct service_bench : bench {
  disk_tier_options options() const {
    disk_tier_options o;
    o.store = options_in(dir.str());
    o.admission.min_tokens = 64;
    return o;
  }
  // A "process": a service scanning the folder at its start.
  std::unique_ptr<disk_service> open_service() {
    auto s = std::make_unique<disk_service>(env, layout, clock, options());
    s->start();
    return s;
  }
};

// The disk writer's part, inline: prepare, write through `env`, commit.
disk_write_reply write_job(disk_service& s, file_env& env, disk_submission sub) {
  disk_write_reply now;
  auto job = s.prepare(std::move(sub), now);
  if (!job) return now;
  job->results = execute_disk_write(env, s.store().layout(), job->write, job->plan);
  return s.commit(*job);
}

// An anchor at e.length() for prompt[0, e.length()), its chunks included.
disk_write_reply write_anchor(disk_service& s, file_env& env, const engine& e,
                              const std::vector<token_id>& prompt) {
  disk_submission sub;
  sub.write = stage(e, prompt, "", false);
  sub.staged_bytes = sub.write.bytes();
  return write_job(s, env, std::move(sub));
}

// One bit of the byte at `at` of the file at `path`, flipped on the medium.
void flip_bit(const std::string& path, std::size_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x10);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&byte, 1);
}

}  // namespace

TEST_CASE("disk service: offer, read off the engine, apply equals a cold prefill", "[disk][service]") {
  service_bench b;
  const auto prompt = test_tokens(4 * b.g + 5);
  {
    auto s = b.open_service();
    auto writer = prefilled(b.c, prompt, 3 * b.g);
    const auto r = write_anchor(*s, b.env, *writer, prompt);
    CHECK_FALSE(r.failed);
    CHECK(r.files_written == 4);  // three chunks and the anchor
    CHECK(r.released_bytes > 0);
    CHECK(s->stats().writes_out == 0);
  }
  auto s = b.open_service();  // a new process: the index comes from the scan
  const disk_offer_reply o = s->offer(prompt, 0, 0);
  REQUIRE(o.offer);
  CHECK(o.offer->line == 3 * b.g);
  CHECK(o.offer->generation == s->generation());
  expected<verified_read> r = s->read(*o.offer, prompt);
  REQUIRE(r);
  CHECK(r->line == 3 * b.g);
  CHECK(r->bytes_read == o.offer->read_bytes);
  auto fresh = make_engine(b.c);
  disk_service::apply(*r, fresh->cache_state());
  auto cold = prefilled(b.c, prompt, 3 * b.g);
  require_same_as_cold(*fresh, *cold, 3 * b.g);
  const disk_stats st = s->stats();
  CHECK(st.hits == 1);
  CHECK(st.entries == 1);
  CHECK(st.chunks == 3);
  CHECK(st.bytes_read == o.offer->read_bytes);
  CHECK(st.tokens_saved == static_cast<long long>(3 * b.g));
  CHECK(st.read_bytes_per_s > 0);
}

TEST_CASE("disk service: an offer read after a clear fails and nothing is applied", "[disk][service]") {
  service_bench b;
  const auto prompt = test_tokens(4 * b.g + 5);
  auto s = b.open_service();
  auto writer = prefilled(b.c, prompt, 3 * b.g);
  REQUIRE_FALSE(write_anchor(*s, b.env, *writer, prompt).failed);
  const disk_offer_reply o = s->offer(prompt, 0, 0);
  REQUIRE(o.offer);

  // The engine holds another prompt's rows; a failed read must leave them.
  auto e = prefilled(b.c, test_tokens(2 * b.g, 9), 2 * b.g);
  const untouched before(*e, 2 * b.g);
  const bool rewritten = GENERATE(false, true);
  INFO((rewritten ? "the same anchor written again after the clear" : "the folder left empty"));
  const disk_clear_reply c = s->clear();
  CHECK(c.files_removed == 4);
  CHECK(c.generation == o.offer->generation + 1);
  // Written again, the anchor is indexed once more: the generation alone refuses the old offer.
  if (rewritten) REQUIRE_FALSE(write_anchor(*s, b.env, *writer, prompt).failed);
  expected<verified_read> r = s->read(*o.offer, prompt);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().error(), Catch::Contains("cleared"));
  if (r) disk_service::apply(*r, e->cache_state());  // what the board would do
  before.check();
  CHECK(s->stats().restore_failures == 1);
  // A fresh offer reads again when the files are there.
  const disk_offer_reply again = s->offer(prompt, 0, 0);
  CHECK(again.offer.has_value() == rewritten);
  if (again.offer) CHECK(s->read(*again.offer, prompt));
}

TEST_CASE("disk service: a flipped bit in a chunk file fails the read, deletes the chain, applies nothing",
          "[disk][service]") {
  service_bench b;
  const auto prompt = test_tokens(4 * b.g + 5);
  auto s = b.open_service();
  auto writer = prefilled(b.c, prompt, 3 * b.g);
  REQUIRE_FALSE(write_anchor(*s, b.env, *writer, prompt).failed);
  const disk_offer_reply o = s->offer(prompt, 0, 0);
  REQUIRE(o.offer);
  // One bit of the second chunk's rows, on the medium.
  const std::string second = chunk_file(s->store(), prompt, 2 * b.g);
  REQUIRE(exists(second));
  flip_bit(second, b.cfb - 7);
  auto e = make_engine(b.c);
  const untouched before(*e, 3 * b.g);
  expected<verified_read> r = s->read(*o.offer, prompt);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().error(), Catch::Contains(second));
  if (r) disk_service::apply(*r, e->cache_state());
  before.check();
  // The damaged chunk went with everything above it; the first chunk stays.
  CHECK_FALSE(exists(second));
  CHECK_FALSE(exists(chunk_file(s->store(), prompt, 3 * b.g)));
  CHECK_FALSE(exists(anchor_file(s->store(), "", prompt, 3 * b.g)));
  CHECK(exists(chunk_file(s->store(), prompt, b.g)));
  CHECK_FALSE(s->offer(prompt, 0, 0).offer);
}

TEST_CASE("disk service: a checkpoint read off the engine and applied restores the whole state",
          "[disk][service][checkpoint]") {
  service_bench b;
  const auto ids = test_tokens(2 * b.g + 9);
  const std::size_t rows = ids.size() - 1;  // the last id is pending
  auto e = prefilled(b.c, ids, rows);
  checkpoint_meta meta;
  meta.key_hash = 0x5eedULL;
  meta.seed = 42;
  meta.seed_explicit = true;
  meta.prompt_tokens = 2 * b.g;  // nine output ids, the last pending
  meta.tokens = ids;
  const std::vector<token_id> prompt = slice(ids, 0, meta.prompt_tokens);
  {
    auto s = b.open_service();
    disk_submission sub;
    sub.write.tokens = meta.tokens;
    stage_rows(sub.write, e->cache_state(), 0, rows);
    sub.write.anchors.push_back(stage_sections(e->cache_state(), rows));
    sub.checkpoint = meta;
    sub.staged_bytes = sub.write.bytes();
    const auto r = write_job(*s, b.env, std::move(sub));
    CHECK_FALSE(r.failed);
    CHECK(r.files_written == 1);
    CHECK(s->stats().checkpoints == 1);
  }
  auto s = b.open_service();
  disk_read_request req;
  req.prompt.assign(prompt.begin(), prompt.end());
  req.checkpoint_key = meta.key_hash;
  const disk_read_reply r = s->start_read(req);
  INFO(r.error);
  REQUIRE(r.kind == disk_read_kind::checkpoint);
  REQUIRE(r.checkpoint);
  CHECK(r.line == rows);
  CHECK(r.checkpoint->read.meta.tokens == meta.tokens);
  CHECK(r.checkpoint->read.meta.seed == 42);
  auto fresh = make_engine(b.c);
  disk_service::apply_checkpoint(*r.checkpoint, fresh->cache_state());
  require_same_as_cold(*fresh, *e, rows);

  // Another request's prompt does not read it; an ended generation's checkpoint is gone.
  disk_read_request other = req;
  other.prompt.back() ^= 1;
  const disk_read_reply wrong = s->start_read(other);
  CHECK(wrong.kind == disk_read_kind::none);
  CHECK_THAT(wrong.error, Catch::StartsWith("checkpoint: "));
  CHECK(s->stats().checkpoints == 0);  // it failed its check and was deleted
}

TEST_CASE("disk service: admission as the board asks for it, and the read decision", "[disk][service]") {
  service_bench b;
  const auto prompt = test_tokens(4 * b.g + 5);
  auto s = b.open_service();
  disk_plan_request req;
  req.prompt.assign(prompt.begin(), prompt.end());
  const disk_write_lines first = s->plan_writes(req);
  CHECK(first.chunks == std::vector<std::size_t>{b.g, 2 * b.g, 3 * b.g, 4 * b.g});
  CHECK(first.anchors.empty());  // seen once
  CHECK(first.rows_from == 0);
  const disk_write_lines second = s->plan_writes(req);
  CHECK(second.anchors == std::vector<std::size_t>{4 * b.g});  // seen twice

  disk_plan_request resumed = req;
  resumed.exact = false;
  resumed.resume = b.g;
  CHECK(s->plan_writes(resumed).chunks.empty());  // a session resume writes nothing

  // With the first two chunks on disk, only rows from 2 grid on need staging.
  auto writer = prefilled(b.c, prompt, 2 * b.g);
  REQUIRE_FALSE(write_anchor(*s, b.env, *writer, prompt).failed);
  CHECK(s->plan_writes(req).rows_from == 2 * b.g);

  // The read decision: a prefill faster than the read declines it; a floor at the anchor too.
  const disk_offer_reply slow = s->offer(prompt, 0, 1e15);
  CHECK_FALSE(slow.offer);
  CHECK(slow.declined());
  CHECK(slow.declined_line == 2 * b.g);
  CHECK_FALSE(s->offer(prompt, 2 * b.g, 0).offer);
  CHECK(s->offer(prompt, b.g, 0).offer);
  const disk_stats st = s->stats();
  CHECK(st.declined == 1);
  CHECK(st.anchors_planned == 2);  // the second plan and the last one (seen three times)
}

TEST_CASE("disk service: a failed read says whether its files failed their checks or the offer was stale",
          "[disk][service][miss]") {
  service_bench b;
  const auto prompt = test_tokens(4 * b.g + 5);
  auto s = b.open_service();
  auto writer = prefilled(b.c, prompt, 3 * b.g);
  REQUIRE_FALSE(write_anchor(*s, b.env, *writer, prompt).failed);
  auto read_of = [&](const disk_offer& o) {
    disk_read_request rq;
    rq.prompt.assign(prompt.begin(), prompt.end());
    rq.offer = o;
    return s->start_read(rq);
  };
  // Stale: the tier was cleared between the offer and its read.
  const disk_offer_reply before_clear = s->offer(prompt, 0, 0);
  REQUIRE(before_clear.offer);
  s->clear();
  const disk_read_reply stale = read_of(*before_clear.offer);
  CHECK(stale.kind == disk_read_kind::none);
  CHECK_FALSE(stale.damaged);
  // Damaged: the files are there and one bit of a chunk's rows is wrong.
  REQUIRE_FALSE(write_anchor(*s, b.env, *writer, prompt).failed);
  const disk_offer_reply o = s->offer(prompt, 0, 0);
  REQUIRE(o.offer);
  const std::string second = chunk_file(s->store(), prompt, 2 * b.g);
  flip_bit(second, b.cfb - 7);
  const disk_read_reply damaged = read_of(*o.offer);
  CHECK(damaged.kind == disk_read_kind::none);
  CHECK(damaged.damaged);
  // Read again, the chain is gone: stale, not damaged.
  const disk_read_reply gone = read_of(*o.offer);
  CHECK(gone.kind == disk_read_kind::none);
  CHECK_FALSE(gone.damaged);
  // Each failed read counted once on the wire: the stale offer by the service (before the store
  // was asked), the damaged files and the missing chain by the store.
  CHECK(s->store().restore_failures() == 2);
  CHECK(s->stats().restore_failures == 3);
  // And by why: the stale offer, the flipped bit (its block's crc), the chain gone with it.
  const disk_restore_failures why = s->stats().restore_failure_reasons;
  CHECK(why.stale_offer == 1);
  CHECK(why.bad_crc == 1);
  CHECK(why.missing == 1);
  CHECK(why.total() == 3);
}

TEST_CASE("disk service: a line only another engine's folder holds is named in the offer's reply",
          "[disk][service][miss]") {
  service_bench b;
  const auto prompt = test_tokens(4 * b.g + 5);
  {
    auto s = b.open_service();
    auto writer = prefilled(b.c, prompt, 3 * b.g);
    REQUIRE_FALSE(write_anchor(*s, b.env, *writer, prompt).failed);
    // Its own folder: an offer, and no other engine's line.
    const disk_offer_reply own = s->offer(prompt, 0, 0);
    REQUIRE(own.offer);
    CHECK(own.foreign_line == 0);
  }
  // Another engine (other weights: another fingerprint) on the same root.
  state_layout other = b.layout;
  other.fingerprint ^= 0x5a5a;
  disk_service s(b.env, other, b.clock, b.options());
  s.start();
  const disk_offer_reply o = s.offer(prompt, 0, 0);
  CHECK_FALSE(o.offer);
  CHECK(o.foreign_line == 3 * b.g);                      // its deepest chunk the prompt shares, found by name
  CHECK(s.offer(prompt, 3 * b.g, 0).foreign_line == 0);  // not deeper than the tiers above
  // A prompt that parts inside the second chunk reaches only the first.
  auto parted = prompt;
  parted[b.g + 3] = static_cast<token_id>((parted[b.g + 3] + 1) % 256);
  CHECK(s.offer(parted, 0, 0).foreign_line == b.g);
  // The other folder's files are left as they were.
  auto back = b.open_service();
  CHECK(back->offer(prompt, 0, 0).offer);
}

TEST_CASE("disk service: the start-up sweep's results are in the stats it publishes", "[disk][service]") {
  service_bench b;
  const auto prompt = test_tokens(4 * b.g + 5);
  {
    auto s = b.open_service();
    CHECK(s->stats().sweep.indexed == 0);
    auto writer = prefilled(b.c, prompt, 3 * b.g);
    REQUIRE_FALSE(write_anchor(*s, b.env, *writer, prompt).failed);
  }
  // What a crash leaves (an unfinished write) and a file of ours cut short.
  std::ofstream(join_path(b.folder(), "c-00000000000000aa.chk.tmp")) << "half";
  std::ofstream(join_path(b.folder(), "c-00000000000000bb.chk")) << "not a chunk";
  auto s = b.open_service();
  const disk_stats st = s->stats();
  INFO("indexed " << st.sweep.indexed << ", reaped " << st.sweep.tmp_reaped << ", damaged "
                  << st.sweep.damaged_removed);
  CHECK(st.sweep.indexed == 4);  // 3 chunks and the anchor
  CHECK(st.sweep.tmp_reaped == 1);
  CHECK(st.sweep.damaged_removed == 1);
  CHECK(st.sweep.foreign_swept == 0);
  CHECK(st.sweep.evicted == 0);
  CHECK(st.sweep.seconds >= 0);
  // The dedup figures: one anchor on its own chain, nothing shared.
  CHECK(st.anchored_bytes == st.bytes);
  CHECK(st.dedup_ratio == Approx(1.0));
}
