// A framed record's header read from its file (runtime/store/record_file.hpp), as the disk's and
// the spill's scans read it: the fixed part, then the tables up to header_bytes; a short file or
// an impossible header_bytes is no header.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "protocol/record_format.hpp"
#include "runtime/core/little_endian.hpp"
#include "runtime/io/uring_env.hpp"
#include "runtime/store/record.hpp"
#include "runtime/store/record_file.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace rf = anchorage::record_format;
using bytes = std::vector<unsigned char>;

namespace {

// A record whose header is `hb` bytes (a fixed part of 48 and tables after it) and `body` more.
bytes record(std::size_t hb, std::size_t body) {
  bytes b(hb + body, 0);
  store::put_preamble(b, rf::spill_block_magic, 1, hb, 16, 0xabcULL, b.size());
  for (std::size_t i = rf::preamble_bytes; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i * 7);
  store::seal_header(b, hb);
  return b;
}

std::string put(const temp_dir& d, const std::string& name, const bytes& b) {
  const std::string path = d.str() + "/" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return path;
}

}  // namespace

TEST_CASE("a record's header is read from its file, tables included, never its body", "[store][record]") {
  temp_dir d("anchorage-record-file");
  uring_env env;
  constexpr std::size_t fixed = 48;
  const bytes r = record(200, 1000);
  const auto h = store::read_record_header(env, put(d, "r", r), fixed, 4096);
  REQUIRE(h);
  CHECK(h->size() == 200);
  CHECK(bytes(r.begin(), r.begin() + 200) == *h);
  rf::preamble p;
  CHECK_FALSE(store::read_preamble(h->data(), h->size(), fixed, rf::spill_block_magic, {1}, p));
  CHECK_FALSE(store::check_header(h->data(), h->size(), p, 200));
  // A header of the fixed part alone.
  const auto plain = store::read_record_header(env, put(d, "plain", record(fixed, 10)), fixed, 4096);
  REQUIRE(plain);
  CHECK(plain->size() == fixed);
}

TEST_CASE("a short file or an impossible header_bytes reads no header", "[store][record]") {
  temp_dir d("anchorage-record-file");
  uring_env env;
  constexpr std::size_t fixed = 48;
  const bytes r = record(200, 1000);
  // Shorter than the fixed part, and shorter than its header.
  CHECK_FALSE(store::read_record_header(env, put(d, "tiny", bytes(r.begin(), r.begin() + 20)), fixed, 4096));
  CHECK_FALSE(store::read_record_header(env, put(d, "cut", bytes(r.begin(), r.begin() + 150)), fixed, 4096));
  // header_bytes below the fixed part, or above the most the caller allows.
  bytes low = r;
  little_endian::put_u32(low, rf::offset::header_bytes, 40);
  CHECK_FALSE(store::read_record_header(env, put(d, "low", low), fixed, 4096));
  CHECK_FALSE(store::read_record_header(env, put(d, "big", r), fixed, 199));
  CHECK(store::read_record_header(env, put(d, "edge", r), fixed, 200));
  // A fixed part shorter than the preamble is no kind of ours; a missing file is no header.
  CHECK_FALSE(store::read_record_header(env, put(d, "r", r), 16, 4096));
  CHECK_FALSE(store::read_record_header(env, d.str() + "/none", fixed, 4096));
}
