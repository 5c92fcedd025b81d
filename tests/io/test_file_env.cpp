// The file-system seam (runtime/io/file_env.hpp): uring_env on a fresh temp directory, and the
// faults fault_env injects below it. Every case is a caller's view: file_results and bytes.
#include <catch2/catch.hpp>
#include <xxhash.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/support/fault_env.hpp"
#include "runtime/io/uring_env.hpp"

using namespace anchorage;

namespace {

// A fresh directory under the system temp directory, removed with everything in it at the end.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("anchorage-fs-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::vector<unsigned char> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<unsigned char> v(n);
  std::uint64_t x = 0x9e3779b97f4a7c15ULL * (seed + 1);
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

std::vector<unsigned char> read_all(file_env& env, const std::string& path) {
  const auto n = env.size(path);
  REQUIRE(n.has_value());
  std::vector<unsigned char> out(static_cast<std::size_t>(*n));
  const file_result r = env.read(path, 0, out.data(), out.size());
  INFO(r.message);
  REQUIRE(r.ok);
  return out;
}

file_result write_one(file_env& env, const std::string& dir, const std::string& name,
                      const std::vector<unsigned char>& bytes) {
  return env.write_atomic(dir, name, {{bytes.data(), bytes.size()}});
}

}  // namespace

TEST_CASE("uring_env round-trips a multi-piece file over 4 MiB with an odd size", "[fs]") {
  temp_dir dir;
  uring_env env;
  if (!env.uses_uring()) WARN("io_uring unavailable: testing the pread/pwrite fallback");
  const auto header = pattern(17, 1), body = pattern(9u << 20, 2), tail = pattern(106, 3);
  REQUIRE(env.write_atomic(
      dir.str(), "chunk",
      {{header.data(), header.size()}, {body.data(), body.size()}, {tail.data(), tail.size()}}));
  std::vector<unsigned char> whole(header);
  whole.insert(whole.end(), body.begin(), body.end());
  whole.insert(whole.end(), tail.begin(), tail.end());
  REQUIRE(whole.size() == (9u << 20) + 123);
  CHECK(env.size(dir.file("chunk")) == whole.size());
  CHECK(env.list(dir.str()) == std::vector<std::string>{"chunk"});  // no tmp left
  CHECK(read_all(env, dir.file("chunk")) == whole);

  // Odd offsets and lengths, across the 4 MiB block boundary, into a misaligned destination.
  const std::uint64_t mib4 = 4u << 20;
  const std::vector<std::pair<std::uint64_t, std::size_t>> ranges = {
      {1, 4095}, {mib4 - 3, mib4 + 7}, {4097, 1}, {whole.size() - 5, 5}, {12345, 0}, {7, 9u << 20}};
  std::vector<unsigned char> buf((9u << 20) + 1);
  for (const auto& [offset, n] : ranges) {
    INFO("offset " << offset << " n " << n);
    const file_result r = env.read(dir.file("chunk"), offset, buf.data() + 1, n);
    INFO(r.message);
    REQUIRE(r.ok);
    CHECK(std::memcmp(buf.data() + 1, whole.data() + offset, n) == 0);
  }
}

TEST_CASE("uring_env with small blocks, a shallow queue, buffered I/O and empty files", "[fs]") {
  temp_dir dir;
  const auto bytes = pattern(100003, 4);
  for (bool direct : {true, false}) {
    INFO("direct " << direct);
    uring_env env({2, 8192, direct});  // 13 blocks through 2 slots
    REQUIRE(write_one(env, dir.str(), "f", bytes));
    CHECK(read_all(env, dir.file("f")) == bytes);
    std::vector<unsigned char> part(30001);
    REQUIRE(env.read(dir.file("f"), 8191, part.data(), part.size()));
    CHECK(std::memcmp(part.data(), bytes.data() + 8191, part.size()) == 0);
    REQUIRE(env.write_atomic(dir.str(), "empty", {}));
    CHECK(env.size(dir.file("empty")) == 0u);
  }
}

TEST_CASE("write_atomic replaces an existing file", "[fs]") {
  temp_dir dir;
  uring_env env;
  const auto old_bytes = pattern(50000, 5), new_bytes = pattern(4099, 6);
  REQUIRE(write_one(env, dir.str(), "anchor", old_bytes));
  REQUIRE(write_one(env, dir.str(), "anchor", new_bytes));
  CHECK(read_all(env, dir.file("anchor")) == new_bytes);  // shorter: no stale tail
  CHECK(env.list(dir.str()) == std::vector<std::string>{"anchor"});
}

TEST_CASE("ENOSPC mid-write keeps the previous good file and leaves no tmp", "[fs]") {
  temp_dir dir;
  uring_env real;
  fault_env env(real);
  const auto old_bytes = pattern(300000, 7), new_bytes = pattern((5u << 20) + 11, 8);
  REQUIRE(write_one(env, dir.str(), "chunk", old_bytes));
  env.no_space_after(1u << 20);  // the new file runs out of space a fifth of the way in
  const file_result r = write_one(env, dir.str(), "chunk", new_bytes);
  CHECK_FALSE(r.ok);
  CHECK(r.error == ENOSPC);
  CHECK(env.counters().no_space == 1);
  CHECK(env.counters().bytes_written == old_bytes.size() + (1u << 20));  // the partial tmp
  CHECK(env.list(dir.str()) == std::vector<std::string>{"chunk"});
  CHECK(read_all(env, dir.file("chunk")) == old_bytes);
  CHECK(write_one(env, dir.str(), "other", pattern(10, 9)).error == ENOSPC);  // still full
  env.heal();
  REQUIRE(write_one(env, dir.str(), "chunk", new_bytes));
  CHECK(read_all(env, dir.file("chunk")) == new_bytes);
}

TEST_CASE("a crash before the rename leaves the previous file and a tmp a sweep finds", "[fs]") {
  temp_dir dir;
  uring_env real;
  fault_env env(real);
  const auto old_bytes = pattern(70000, 10), new_bytes = pattern(90001, 11);
  REQUIRE(write_one(env, dir.str(), "anchor", old_bytes));
  env.crash_before_rename();
  const file_result r = write_one(env, dir.str(), "anchor", new_bytes);
  CHECK_FALSE(r.ok);
  CHECK(env.counters().crashes == 1);
  CHECK(env.list(dir.str()) == std::vector<std::string>{"anchor", "anchor.tmp"});
  CHECK(env.size(dir.file("anchor.tmp")) == new_bytes.size());
  CHECK(read_all(env, dir.file("anchor")) == old_bytes);

  // The start-up sweep: every tmp name is an orphan.
  for (const auto& name : env.list(dir.str())) {
    if (is_tmp_name(name)) CHECK(env.remove(dir.file(name)));
  }
  CHECK(env.list(dir.str()) == std::vector<std::string>{"anchor"});

  // The switch fired once; a stale tmp does not disturb the next write either.
  env.crash_before_rename();
  CHECK_FALSE(write_one(env, dir.str(), "anchor", new_bytes).ok);
  REQUIRE(write_one(env, dir.str(), "anchor", new_bytes));
  CHECK(env.list(dir.str()) == std::vector<std::string>{"anchor"});
  CHECK(read_all(env, dir.file("anchor")) == new_bytes);
}

TEST_CASE("a torn write leaves the previous file and a short tmp", "[fs]") {
  temp_dir dir;
  uring_env real;
  fault_env env(real);
  const auto old_bytes = pattern(9000, 12), new_bytes = pattern(9000, 13);
  REQUIRE(write_one(env, dir.str(), "chunk", old_bytes));
  env.torn_write(1000);
  CHECK_FALSE(write_one(env, dir.str(), "chunk", new_bytes).ok);
  CHECK(env.list(dir.str()) == std::vector<std::string>{"chunk", "chunk.tmp"});
  const auto torn = read_all(env, dir.file("chunk.tmp"));
  REQUIRE(torn.size() == 1000);
  CHECK(std::memcmp(torn.data(), new_bytes.data(), 1000) == 0);
  CHECK(read_all(env, dir.file("chunk")) == old_bytes);
}

TEST_CASE("an injected read error is returned, not thrown", "[fs]") {
  temp_dir dir;
  uring_env real;
  fault_env env(real);
  const auto bytes = pattern(5000, 14);
  REQUIRE(write_one(env, dir.str(), "f", bytes));
  env.fail_reads(EIO);
  std::vector<unsigned char> buf(bytes.size(), 0xAB);
  const file_result r = env.read(dir.file("f"), 0, buf.data(), buf.size());
  CHECK_FALSE(r.ok);
  CHECK(r.error == EIO);
  CHECK(env.counters().read_errors == 1);
  CHECK(buf == std::vector<unsigned char>(bytes.size(), 0xAB));
  env.fail_reads(0);
  CHECK(read_all(env, dir.file("f")) == bytes);
}

TEST_CASE("a flipped bit returns different bytes that a checksum catches", "[fs]") {
  temp_dir dir;
  uring_env real;
  fault_env env(real);
  const auto bytes = pattern(20000, 15);
  REQUIRE(write_one(env, dir.str(), "f", bytes));
  env.flip_bit_on_read(10100, 3);
  std::vector<unsigned char> head(5000);
  REQUIRE(env.read(dir.file("f"), 0, head.data(), head.size()));  // does not cover the byte
  CHECK(std::memcmp(head.data(), bytes.data(), head.size()) == 0);
  const auto got = read_all(env, dir.file("f"));
  REQUIRE(got.size() == bytes.size());
  CHECK(got != bytes);
  CHECK((got[10100] ^ bytes[10100]) == 0x08);
  CHECK(XXH3_64bits(got.data(), got.size()) != XXH3_64bits(bytes.data(), bytes.size()));
  CHECK(env.counters().bit_flips == 1);
  CHECK(read_all(env, dir.file("f")) == bytes);  // one read only; the medium is unchanged
}

TEST_CASE("reading past the end or a missing file is an error", "[fs]") {
  temp_dir dir;
  uring_env env;
  const auto bytes = pattern(5000, 16);
  REQUIRE(write_one(env, dir.str(), "f", bytes));
  std::vector<unsigned char> buf(8192);
  const std::string f = dir.file("f");
  CHECK(env.read(f, 4000, buf.data(), 1001).error == ERANGE);
  CHECK(env.read(f, 0, buf.data(), 5001).error == ERANGE);
  CHECK(env.read(f, 5001, buf.data(), 0).error == ERANGE);
  CHECK(env.read(f, 5000, buf.data(), 0).ok);
  REQUIRE(env.read(f, 4999, buf.data(), 1).ok);
  CHECK(buf[0] == bytes[4999]);
  CHECK(env.read(dir.file("missing"), 0, buf.data(), 1).error == ENOENT);
  CHECK_FALSE(env.size(dir.file("missing")).has_value());
}

TEST_CASE("free_bytes reports the file system's free space", "[fs]") {
  temp_dir dir;
  uring_env env;
  const auto free = env.free_bytes(dir.str());
  REQUIRE(free.has_value());
  CHECK(*free > 0);
  CHECK_FALSE(env.free_bytes(dir.file("missing")).has_value());
}

TEST_CASE("a directory that does not exist gives errors, not a crash", "[fs]") {
  temp_dir dir;
  uring_env env;
  const std::string missing = dir.file("no/such/dir");
  const auto bytes = pattern(100, 17);
  const file_result w = write_one(env, missing, "f", bytes);
  CHECK_FALSE(w.ok);
  CHECK(w.error == ENOENT);
  CHECK_FALSE(w.message.empty());
  CHECK(env.list(missing).empty());
  CHECK_FALSE(env.remove(missing + "/f"));
  REQUIRE(env.make_dir(missing));
  REQUIRE(env.make_dir(missing));  // already there
  REQUIRE(write_one(env, missing, "f", bytes));
  CHECK(read_all(env, missing + "/f") == bytes);
  CHECK_FALSE(env.make_dir(missing + "/f").ok);  // a file, not a directory
}

// ---- Submission ahead -----------------------------------------------------------------------

namespace {

std::vector<unsigned char> bytes_of(const file_buffer& b) {
  return std::vector<unsigned char>(b.data(), b.data() + b.size());
}

}  // namespace

TEST_CASE("submit_read: several whole-file reads in flight, waited for in any order", "[fs]") {
  temp_dir dir;
  for (bool direct : {true, false}) {
    for (const uring_env_options o :
         {uring_env_options{8, 4u << 20, direct}, uring_env_options{2, 8192, direct}}) {
      INFO("direct " << direct << " depth " << o.queue_depth << " block " << o.block_bytes);
      uring_env env(o);
      const auto a = pattern((9u << 20) + 123, 20), b = pattern(100003, 21), c = pattern(1, 22);
      REQUIRE(write_one(env, dir.str(), "a", a));
      REQUIRE(write_one(env, dir.str(), "b", b));
      REQUIRE(write_one(env, dir.str(), "c", c));
      REQUIRE(env.write_atomic(dir.str(), "empty", {}));
      // More pieces in flight than the queue holds: the rest go as earlier ones complete.
      const io_ticket ta = env.submit_read(dir.file("a"), a.size());
      const io_ticket tb = env.submit_read(dir.file("b"), b.size());
      const io_ticket tc = env.submit_read(dir.file("c"), c.size());
      const io_ticket te = env.submit_read(dir.file("empty"), 0);
      // A synchronous call meanwhile sees its own bytes.
      std::vector<unsigned char> part(4097);
      REQUIRE(env.read(dir.file("a"), 8191, part.data(), part.size()));
      CHECK(std::memcmp(part.data(), a.data() + 8191, part.size()) == 0);
      file_buffer got;
      REQUIRE(env.wait_read(tc, got));
      CHECK(bytes_of(got) == c);
      REQUIRE(env.wait_read(ta, got));
      CHECK(reinterpret_cast<std::uintptr_t>(got.data()) % 4096 == 0);
      CHECK(bytes_of(got) == a);
      REQUIRE(env.wait_read(te, got));
      CHECK(got.size() == 0);
      REQUIRE(env.wait_read(tb, got));
      CHECK(bytes_of(got) == b);
      // A prefix of a file is fine; more than it holds, or no file, is an error at the wait.
      REQUIRE(env.wait_read(env.submit_read(dir.file("a"), 5000), got));
      CHECK(std::memcmp(got.data(), a.data(), 5000) == 0);
      file_result r = env.wait_read(env.submit_read(dir.file("b"), b.size() + 1), got);
      CHECK(r.error == ERANGE);
      CHECK(got.size() == 0);
      r = env.wait_read(env.submit_read(dir.file("missing"), 10), got);
      CHECK(r.error == ENOENT);
    }
  }
}

TEST_CASE("submit_write_atomic copies the pieces, then waits like write_atomic", "[fs]") {
  temp_dir dir;
  for (bool direct : {true, false}) {
    INFO("direct " << direct);
    uring_env env({2, 8192, direct});
    auto head = pattern(17, 30), body = pattern((5u << 20) + 7, 31);
    const auto want_head = head, want_body = body;
    const io_ticket t1 =
        env.submit_write_atomic(dir.str(), "one", {{head.data(), head.size()}, {body.data(), body.size()}});
    // The caller's bytes may change at once: the env took a copy.
    std::fill(head.begin(), head.end(), 0);
    std::fill(body.begin(), body.end(), 0);
    const auto second = pattern(4099, 32);
    const io_ticket t2 = env.submit_write_atomic(dir.str(), "two", {{second.data(), second.size()}});
    CHECK_FALSE(env.size(dir.file("one")).has_value());  // in place only once waited for
    REQUIRE(env.wait_write(t2));
    REQUIRE(env.wait_write(t1));
    std::vector<unsigned char> whole(want_head);
    whole.insert(whole.end(), want_body.begin(), want_body.end());
    CHECK(read_all(env, dir.file("one")) == whole);
    CHECK(read_all(env, dir.file("two")) == second);
    REQUIRE(env.wait_write(env.submit_write_atomic(dir.str(), "empty", {})));
    CHECK(env.size(dir.file("empty")) == 0u);
    CHECK(env.list(dir.str()) == std::vector<std::string>{"empty", "one", "two"});  // no tmp
    // A missing directory fails at the wait, leaving nothing.
    const file_result r =
        env.wait_write(env.submit_write_atomic(dir.file("no/such"), "f", {{second.data(), 10}}));
    CHECK(r.error == ENOENT);
    std::filesystem::remove(dir.file("one"));
    std::filesystem::remove(dir.file("two"));
    std::filesystem::remove(dir.file("empty"));
  }
}

TEST_CASE("fault_env injects its faults on the asynchronous paths", "[fs]") {
  temp_dir dir;
  uring_env real;
  fault_env env(real);
  const auto bytes = pattern(20000, 33), other = pattern(3000, 34);
  REQUIRE(env.wait_write(env.submit_write_atomic(dir.str(), "f", {{bytes.data(), bytes.size()}})));
  REQUIRE(write_one(env, dir.str(), "g", other));
  CHECK(env.counters().writes == 2);
  CHECK(env.counters().bytes_written == bytes.size() + other.size());

  file_buffer got;
  env.fail_reads(EIO);
  CHECK(env.wait_read(env.submit_read(dir.file("f"), bytes.size()), got).error == EIO);
  CHECK(env.counters().read_errors == 1);
  // Aimed at one file, the others pass.
  env.read_faults_only_for(dir.file("g"));
  REQUIRE(env.wait_read(env.submit_read(dir.file("f"), bytes.size()), got));
  CHECK(bytes_of(got) == bytes);
  CHECK(env.wait_read(env.submit_read(dir.file("g"), other.size()), got).error == EIO);
  env.heal();

  env.flip_bit_on_read(10100, 3);
  REQUIRE(env.wait_read(env.submit_read(dir.file("f"), bytes.size()), got));
  REQUIRE(got.size() == bytes.size());
  CHECK((got.data()[10100] ^ bytes[10100]) == 0x08);
  CHECK(env.counters().bit_flips == 1);
  REQUIRE(env.wait_read(env.submit_read(dir.file("f"), bytes.size()), got));
  CHECK(bytes_of(got) == bytes);

  env.no_space_after(1000);
  const file_result r =
      env.wait_write(env.submit_write_atomic(dir.str(), "f", {{other.data(), other.size()}}));
  CHECK(r.error == ENOSPC);
  CHECK(read_all(env, dir.file("f")) == bytes);  // the previous file stays
  env.heal();
  env.crash_before_rename();
  CHECK_FALSE(env.wait_write(env.submit_write_atomic(dir.str(), "f", {{other.data(), other.size()}})));
  CHECK(env.counters().crashes == 1);
  CHECK(std::filesystem::exists(dir.file("f.tmp")));
  CHECK(read_all(env, dir.file("f")) == bytes);
}
