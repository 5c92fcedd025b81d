// The framed record (protocol/record_format.hpp, runtime/store/record.hpp): every durable file's
// preamble is written one way and checked by one set of rules, and every store's reader reports
// one set of faults. A record of any kind handed to another kind's reader is refused as
// bad_magic, naming what it is.
#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "protocol/checkpoint_format.hpp"
#include "protocol/disk_format.hpp"
#include "protocol/spill_format.hpp"
#include "runtime/core/crc32.hpp"
#include "runtime/core/little_endian.hpp"
#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/spill/spill_codec.hpp"
#include "runtime/store/record.hpp"

using namespace anchorage;
namespace rf = anchorage::record_format;
using bytes = std::vector<unsigned char>;

namespace {

constexpr std::uint64_t test_magic = rf::chunk_magic;
constexpr std::size_t fixed = 64;  // a kind of 40 preamble bytes and 24 of its own

// A 100-byte record of kind `magic`: a 64-byte header (the preamble and a u64 of the kind's) and
// 36 bytes of body, sealed.
bytes sample(std::uint64_t magic = test_magic, std::uint32_t version = 2) {
  bytes b(100, 0);
  store::put_preamble(b, magic, version, fixed, 16, 0xfeedULL, b.size());
  little_endian::put_u64(b, rf::preamble_bytes, 0x1234);
  for (std::size_t i = fixed; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i);
  store::seal_header(b, fixed);
  return b;
}

// The four rules in order, as a kind's reader runs them; the first problem.
store::record_problem check_all(const bytes& b, std::initializer_list<std::uint32_t> known = {2}) {
  rf::preamble p;
  if (auto e = store::read_preamble(b.data(), b.size(), fixed, test_magic, known, p)) return e;
  if (auto e = store::check_header(b.data(), b.size(), p, fixed)) return e;
  if (auto e = store::check_engine(p, 0xfeedULL, 16)) return e;
  return store::check_length(p.file_bytes, 100, b.size());
}

}  // namespace

TEST_CASE("a sealed record passes every rule and reads back its preamble", "[store][record]") {
  const bytes b = sample();
  rf::preamble p;
  REQUIRE_FALSE(store::read_preamble(b.data(), b.size(), fixed, test_magic, {2}, p));
  CHECK(p.version == 2);
  CHECK(p.header_bytes == fixed);
  CHECK(p.grid == 16);
  CHECK(p.fingerprint == 0xfeedULL);
  CHECK(p.file_bytes == 100);
  CHECK_FALSE(check_all(b));
  // The crc covers [16, header_bytes): the body is not the header's.
  bytes body = b;
  body[fixed + 3] ^= 1;
  CHECK_FALSE(check_all(body));
}

TEST_CASE("each preamble rule refuses with its fault and names the detail", "[store][record]") {
  const bytes good = sample();
  auto refused = [](const bytes& b, rf::fault f, const std::string& says,
                    std::initializer_list<std::uint32_t> known = {2}) {
    const store::record_problem e = check_all(b, known);
    CHECK(e.f == f);
    CHECK_THAT(e.why, Catch::Contains(says));
    // And as a codec's result carries it.
    const auto r = store::record_result<int>::failure(e);
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Catch::StartsWith(std::string(rf::fault_name(f)) + ": ") && Catch::Contains(says));
  };
  SECTION("shorter than the kind's fixed header") {
    refused(bytes(good.begin(), good.begin() + fixed - 1), rf::fault::truncated,
            "63 bytes, a chunk file's header needs 64");
  }
  SECTION("a magic of no kind") {
    bytes b = good;
    b[0] ^= 0x20;
    refused(b, rf::fault::bad_magic, "not a chunk file (magic ");
  }
  SECTION("a version this reader does not know, and the ones it does") {
    refused(sample(test_magic, 3), rf::fault::bad_version,
            "a chunk file of version 3, this reader knows 1 and 2", {1, 2});
    CHECK_FALSE(check_all(sample(test_magic, 1), {1, 2}));
  }
  SECTION("header_bytes that is not what the counts make") {
    bytes b = good;
    little_endian::put_u32(b, rf::offset::header_bytes, fixed + 8);
    store::seal_header(b, fixed);
    refused(b, rf::fault::bad_header, "header_bytes 72, its counts make 64");
  }
  SECTION("a header longer than the bytes") {
    rf::preamble p;
    REQUIRE_FALSE(store::read_preamble(good.data(), good.size(), fixed, test_magic, {2}, p));
    const auto e = store::check_header(good.data(), 50, p, fixed);
    CHECK(e.f == rf::fault::truncated);
  }
  SECTION("a header bit flipped, in the preamble or the kind's fields") {
    for (std::size_t at : {std::size_t(rf::offset::grid), std::size_t(rf::preamble_bytes + 1)}) {
      bytes b = good;
      b[at] ^= 0x40;
      // A flipped grid is damage to the header before it is another engine's.
      refused(b, rf::fault::bad_header, "header crc32");
    }
    bytes b = good;
    b[rf::offset::header_crc] ^= 1;
    refused(b, rf::fault::bad_header, "header crc32");
  }
  SECTION("another engine's fingerprint or grid") {
    bytes b(100, 0);
    store::put_preamble(b, test_magic, 2, fixed, 16, 0xbeefULL, 100);
    store::seal_header(b, fixed);
    refused(b, rf::fault::foreign_engine, "fingerprint");
    store::put_preamble(b, test_magic, 2, fixed, 32, 0xfeedULL, 100);
    store::seal_header(b, fixed);
    refused(b, rf::fault::foreign_engine, "grid 32, this engine's is 16");
  }
  SECTION("a length that is not what the fields make, or not the record's") {
    CHECK(store::check_length(100, 108, 100).f == rf::fault::bad_header);
    CHECK(store::check_length(100, 100, 99).f == rf::fault::truncated);
    bytes longer = good;
    longer.push_back(0);
    refused(longer, rf::fault::bad_header, "101 bytes, the header says 100");
  }
}

TEST_CASE("every store's reader refuses another kind's record as bad_magic, naming the kind",
          "[store][record]") {
  using reader = std::function<std::pair<rf::fault, std::string>(const bytes&)>;
  auto wrap = [](auto fn) {
    return reader([fn](const bytes& b) {
      const auto r = fn(b.data(), b.size());
      return std::make_pair(r.fault, r.error);
    });
  };
  struct kind {
    std::uint64_t magic;
    std::string name;
    reader read;
  };
  const std::vector<kind> kinds = {
      {rf::chunk_magic, "a chunk file", wrap(read_chunk_header)},
      {rf::anchor_magic, "an anchor file", wrap(read_anchor_header)},
      {rf::checkpoint_magic, "a checkpoint file", wrap(read_checkpoint_header)},
      {rf::spill_block_magic, "a spill block file", wrap(read_spill_block_header)},
      {rf::spill_anchor_magic, "a spill anchor file", wrap(read_spill_anchor_header)},
      {rf::spill_manifest_magic, "a spill manifest file", wrap(read_spill_manifest_header)},
  };
  std::set<std::uint64_t> magics;
  for (const kind& found : kinds) {
    magics.insert(found.magic);
    // Long enough for any kind's fixed header, so the magic is what refuses it.
    bytes b(512, 0);
    store::put_preamble(b, found.magic, 1, 512, 16, 1, 512);
    store::seal_header(b, 512);
    for (const kind& asked : kinds) {
      if (asked.magic == found.magic) continue;
      INFO(found.name << " read as " << asked.name);
      const auto [f, error] = asked.read(b);
      CHECK(f == rf::fault::bad_magic);
      CHECK_THAT(error, Catch::Contains("not " + asked.name + " (" + found.name + ")"));
    }
  }
  CHECK(magics.size() == kinds.size());  // the catalog's magics are distinct
}

TEST_CASE("the disk's and the spill's faults are the one set, each with its own name", "[store][record]") {
  static_assert(
      std::is_same_v<disk_format::fault, rf::fault> && std::is_same_v<spill_format::fault, rf::fault>,
      "one fault enum for every store");
  static_assert(std::is_same_v<decode_result<int>, spill_decode<int>>, "one result type for every store");
  std::set<std::string> names;
  const auto last = static_cast<int>(rf::fault::bad_payload);
  for (int i = 0; i <= last; ++i) names.insert(rf::fault_name(static_cast<rf::fault>(i)));
  CHECK(names.size() == static_cast<std::size_t>(last + 1));
  CHECK(names.count("unknown") == 0);
  CHECK(std::string(rf::fault_name(rf::fault::none)) == "none");
}
