// The session spill's sums, names and file codecs (runtime/spill/spill_image.hpp,
// runtime/spill/spill_codec.hpp): what every decode checks, byte by byte.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "kernels/block_checksum.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/spill/spill_codec.hpp"
#include "runtime/spill/spill_codec_detail.hpp"
#include "runtime/store/record.hpp"
#include "tests/support/spill_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace sf = anchorage::spill_format;

namespace {

// The sums as the kernel's contract defines them, written out here independently.
spill_sum sums_by_definition(const spill_bytes& b) {
  spill_sum s;
  for (std::size_t i = 0; i < b.size() / 8; ++i) {
    std::uint64_t w = 0;
    for (int k = 7; k >= 0; --k) w = (w << 8) | b[8 * i + static_cast<std::size_t>(k)];
    s.s0 += w;
    s.s1 += (i + 1) * w;
  }
  return s;
}

// A conversation of 10 tokens on grid 4 and its image: blocks [0,4) [4,8) [8,10), a grid anchor
// at 4 and the end anchor at 10.
struct codec_bench {
  state_layout l = spill_test_layout();
  spill_conversation c = make_conversation(l, "session-a", 10, 3);
  spill_image img = make_spill_image(l, c, [] {
    spill_image_options o;
    o.grid_anchors = {4};
    return o;
  }());
  const spill_manifest& m() const { return img.manifest; }
  spill_bytes block(std::size_t i) const {
    return encode_spill_block(l, m().blocks[i], m().tokens, img.blocks[i].rows);
  }
  spill_bytes anchor(std::size_t i) const {
    return encode_spill_anchor(l, m().anchors[i], img.anchors[i].sections);
  }
};

void reseal(spill_bytes& b) {
  const std::size_t hb = spill_codec_detail::get_u32(b.data() + sf::common_offset::header_bytes);
  store::seal_header(b, hb);
}

}  // namespace

TEST_CASE("host_sum is block_checksum's definition and combine_sums joins two ranges", "[spill]") {
  std::mt19937_64 rng(7);
  for (std::size_t words : {0u, 1u, 2u, 7u, 9u, 64u, 129u}) {
    const spill_bytes b = random_bytes(rng, 8 * words);
    const spill_sum whole = host_sum(b.data(), b.size());
    CHECK(whole == sums_by_definition(b));
    std::uint64_t k[2] = {0, 0};
    if (words > 0) kernels::cpu::block_checksum(b.data(), 8, 0, static_cast<long>(words), k);
    CHECK(whole == spill_sum{k[0], k[1]});
    // Every split, odd counts on either side included.
    for (std::size_t first = 0; first <= words; ++first) {
      const spill_sum x = host_sum(b.data(), 8 * first);
      const spill_sum y = host_sum(b.data() + 8 * first, 8 * (words - first));
      INFO(words << " words split at " << first);
      CHECK(combine_sums(x, y, first) == whole);
    }
  }
}

TEST_CASE("crc_sum_copy gives crc32, host_sum and a copy in one pass, across its pieces", "[spill]") {
  std::mt19937_64 rng(11);
  const std::size_t piece = 128 * 1024;
  for (std::size_t n :
       {std::size_t{0}, std::size_t{5}, std::size_t{8}, piece - 3, piece, piece + 8, 3 * piece + 13}) {
    INFO(n << " bytes");
    spill_bytes data(n);
    for (auto& b : data) b = static_cast<unsigned char>(rng());
    std::uint32_t crc = 1;
    spill_sum sum{1, 1};
    spill_bytes copy(n + 1, 0xA5);  // one byte more: nothing is written past n
    spill_codec_detail::crc_sum_copy(data.data(), n, copy.data(), crc, sum);
    CHECK(crc == crc32(data.data(), n));
    CHECK(sum == host_sum(data.data(), n));
    CHECK(sum == sums_by_definition(spill_bytes(data.begin(), data.begin() + static_cast<long>(n / 8 * 8))));
    CHECK(std::equal(data.begin(), data.end(), copy.begin()));
    CHECK(copy[n] == 0xA5);
    std::uint32_t crc_alone = 0;
    spill_sum sum_alone;
    spill_codec_detail::crc_sum_copy(data.data(), n, nullptr, crc_alone, sum_alone);
    CHECK(crc_alone == crc);
    CHECK(sum_alone == sum);
  }
}

TEST_CASE("the spill's prefix hash is the disk tier's, and names bind their content", "[spill]") {
  std::mt19937_64 rng(11);
  std::vector<token_id> t(300);
  for (auto& x : t) x = static_cast<token_id>(rng() % 200000);
  std::vector<std::size_t> ends{0, 1, 4, 17, 256, 300};
  const auto many = spill_prefix_hashes(t, ends);
  REQUIRE(many.size() == ends.size());
  for (std::size_t i = 0; i < ends.size(); ++i) {
    CHECK(spill_prefix_hash(t.data(), ends[i]) == prefix_hash(t.data(), ends[i]));
    CHECK(many[i] == prefix_hash(t.data(), ends[i]));
  }
  const std::vector<spill_sum> sums{{1, 2}, {3, 4}};
  const std::uint64_t h = spill_prefix_hash(t.data(), 8);
  const std::uint64_t block = spill_block_name(h, 4, 8, sums);
  CHECK(block != spill_anchor_name(h, 4, false, sums));  // another family
  CHECK(block != spill_block_name(h, 4, 8, {{1, 2}, {3, 5}}));
  CHECK(block != spill_block_name(h, 0, 8, sums));
  CHECK(block != spill_block_name(h + 1, 4, 8, sums));
  CHECK(spill_anchor_name(h, 8, false, sums) != spill_anchor_name(h, 8, true, sums));
  // A conversation is its key and its first grid line: growing it keeps its id.
  const std::vector<token_id> head(t.begin(), t.begin() + 4), longer(t.begin(), t.begin() + 40);
  CHECK(spill_conversation_id("k", head, 4) == spill_conversation_id("k", longer, 4));
  CHECK(spill_conversation_id("k", head, 4) != spill_conversation_id("k2", head, 4));
  CHECK(spill_conversation_id("k", longer, 4) != spill_conversation_id("k", longer, 8));
}

TEST_CASE("file names parse back and nothing else parses", "[spill]") {
  std::uint64_t v = 0;
  REQUIRE(parse_spill_block_file(spill_block_file(0x0123456789abcdefULL), v));
  CHECK(v == 0x0123456789abcdefULL);
  CHECK(spill_block_file(0x0123456789abcdefULL) == "b-0123456789abcdef.blk");
  CHECK(spill_anchor_file(1) == "s-0000000000000001.sec");
  CHECK(spill_manifest_file(2) == "m-0000000000000002.man");
  REQUIRE(parse_spill_anchor_file("s-00000000000000ff.sec", v));
  CHECK(v == 255);
  REQUIRE(parse_spill_manifest_file("m-ffffffffffffffff.man", v));
  CHECK(v == ~0ULL);
  CHECK_FALSE(parse_spill_block_file("b-0123456789ABCDEF.blk", v));
  CHECK_FALSE(parse_spill_block_file("b-0123456789abcde.blk", v));
  CHECK_FALSE(parse_spill_block_file("b-0123456789abcdef.blk.tmp", v));
  CHECK_FALSE(parse_spill_block_file("s-0123456789abcdef.sec", v));
  CHECK_FALSE(parse_spill_manifest_file("m-0123456789abcdef.blk", v));
}

TEST_CASE("a block file round-trips and every check catches its fault", "[spill]") {
  codec_bench t;
  const spill_block_ref& ref = t.m().blocks[2];  // [8, 10): a partial last block
  REQUIRE(ref.a == 8);
  REQUIRE(ref.b == 10);
  const spill_bytes file = t.block(2);
  CHECK(file.size() == spill_block_file_bytes(t.l, 8, 10));
  auto ok = verify_spill_block(file.data(), file.size(), t.l, ref, t.m().tokens);
  INFO(ok.error);
  REQUIRE(ok.ok());
  for (std::size_t v = 0; v < t.l.views.size(); ++v)
    CHECK(std::memcmp(ok.value.rows[v], t.img.blocks[2].rows[v].data(), t.img.blocks[2].rows[v].size()) == 0);
  // With destinations, the rows are copied there as they are verified.
  std::vector<spill_bytes> dest(t.l.views.size());
  std::vector<unsigned char*> into;
  for (std::size_t v = 0; v < t.l.views.size(); ++v) {
    dest[v].assign(t.img.blocks[2].rows[v].size(), 0);
    into.push_back(dest[v].data());
  }
  REQUIRE(verify_spill_block(file.data(), file.size(), t.l, ref, t.m().tokens, into).ok());
  for (std::size_t v = 0; v < t.l.views.size(); ++v) CHECK(dest[v] == t.img.blocks[2].rows[v]);
  CHECK_THROWS_AS(verify_spill_block(file.data(), file.size(), t.l, ref, t.m().tokens,
                                     std::vector<unsigned char*>(t.l.views.size() + 1, dest[0].data())),
                  std::invalid_argument);

  auto fault_of = [&](const spill_bytes& b, const spill_block_ref& r, const std::vector<token_id>& tokens,
                      const state_layout& l) {
    spill_decode<spill_block_view> d;
    REQUIRE_NOTHROW(d = verify_spill_block(b.data(), b.size(), l, r, tokens));
    CHECK_FALSE(d.error.empty() == !d.ok());
    return d.fault;
  };
  const auto& tokens = t.m().tokens;
  const std::size_t hb = sf::block_fixed_bytes + 2 * sf::sum_entry_bytes;

  SECTION("every byte of the rows is covered by a crc") {
    for (std::size_t at = hb; at < file.size(); ++at) {
      spill_bytes b = file;
      b[at] ^= 0x10;
      REQUIRE(fault_of(b, ref, tokens, t.l) == sf::fault::bad_crc);
    }
  }
  SECTION("every byte of the header is covered by its crc") {
    for (std::size_t at = sf::header_crc_from; at < hb; ++at) {
      spill_bytes b = file;
      b[at] ^= 0x01;
      const auto f = fault_of(b, ref, tokens, t.l);
      CHECK((f == sf::fault::bad_header || f == sf::fault::truncated));
    }
  }
  SECTION("magic, version, truncation") {
    spill_bytes b = file;
    b[0] ^= 1;
    CHECK(fault_of(b, ref, tokens, t.l) == sf::fault::bad_magic);
    const spill_bytes a = t.anchor(0);
    CHECK(fault_of(a, ref, tokens, t.l) == sf::fault::bad_magic);
    b = file;
    spill_codec_detail::put_u32(b, sf::common_offset::version, 2);
    CHECK(fault_of(b, ref, tokens, t.l) == sf::fault::bad_version);
    for (std::size_t n = 0; n < file.size(); n += 7) {
      const spill_bytes cut(file.begin(), file.begin() + static_cast<long>(n));
      CHECK(fault_of(cut, ref, tokens, t.l) == sf::fault::truncated);
    }
    spill_bytes longer = file;
    longer.push_back(0);
    CHECK(fault_of(longer, ref, tokens, t.l) == sf::fault::bad_header);
  }
  SECTION("another engine's file is foreign") {
    state_layout other = t.l;
    other.fingerprint ^= 1;
    CHECK(fault_of(file, ref, tokens, other) == sf::fault::foreign_engine);
    other = t.l;
    other.views[1].bytes_per_token = 32;
    CHECK(fault_of(file, ref, tokens, other) == sf::fault::foreign_engine);
    other = t.l;
    other.grid = 8;
    CHECK(fault_of(file, ref, tokens, other) == sf::fault::foreign_engine);
  }
  SECTION("another block than the one asked for") {
    CHECK(fault_of(file, t.m().blocks[1], tokens, t.l) == sf::fault::wrong_place);
    spill_block_ref r = ref;
    r.name ^= 1;
    CHECK(fault_of(file, r, tokens, t.l) == sf::fault::wrong_place);
    r = ref;
    r.sums[0].s1 += 1;
    CHECK(fault_of(file, r, tokens, t.l) == sf::fault::wrong_sums);
  }
  SECTION("a token id differs from the manifest's") {
    std::vector<token_id> other = tokens;
    other[9] += 1;
    CHECK(fault_of(file, ref, other, t.l) == sf::fault::wrong_tokens);
    other.resize(9);
    CHECK(fault_of(file, ref, other, t.l) == sf::fault::wrong_tokens);
    // A file rewritten with another id and valid crcs: only the id check can catch it.
    std::vector<token_id> forged = tokens;
    forged[8] = 4242;
    const spill_bytes f = encode_spill_block(t.l, ref, forged, t.img.blocks[2].rows);
    CHECK(fault_of(f, ref, tokens, t.l) == sf::fault::wrong_tokens);
  }
  SECTION("rows changed under valid crcs fail the sums") {
    std::vector<spill_bytes> rows = t.img.blocks[2].rows;
    rows[1][5] ^= 0x80;
    const spill_bytes f = encode_spill_block(t.l, ref, tokens, rows);  // the ref's sums, fresh crcs
    CHECK(fault_of(f, ref, tokens, t.l) == sf::fault::wrong_sums);
  }
  SECTION("a header resealed with a bad place is refused") {
    spill_bytes b = file;
    spill_codec_detail::put_u64(b, sf::block_offset::a, 5);
    reseal(b);
    CHECK(fault_of(b, ref, tokens, t.l) == sf::fault::bad_header);
    b = file;
    spill_codec_detail::put_u32(b, sf::block_offset::view_count, 100000);
    reseal(b);
    CHECK(fault_of(b, ref, tokens, t.l) == sf::fault::bad_header);
  }
}

TEST_CASE("an anchor file round-trips and every check catches its fault", "[spill]") {
  codec_bench t;
  const spill_anchor_ref& ref = t.m().anchors[1];
  REQUIRE(ref.end);
  const spill_bytes file = t.anchor(1);
  CHECK(file.size() == spill_anchor_file_bytes(t.l));
  auto ok = verify_spill_anchor(file.data(), file.size(), t.l, ref);
  INFO(ok.error);
  REQUIRE(ok.ok());
  for (std::size_t s = 0; s < t.l.sections.size(); ++s)
    CHECK(std::memcmp(ok.value.sections[s], t.img.anchors[1].sections[s].data(), t.l.sections[s].bytes) == 0);

  auto fault_of = [&](const spill_bytes& b, const spill_anchor_ref& r, const state_layout& l) {
    spill_decode<spill_anchor_view> d;
    REQUIRE_NOTHROW(d = verify_spill_anchor(b.data(), b.size(), l, r));
    return d.fault;
  };
  const std::size_t hb = sf::anchor_fixed_bytes + 2 * sf::sum_entry_bytes;
  for (std::size_t at = hb; at < file.size(); at += 3) {
    spill_bytes b = file;
    b[at] ^= 0x04;
    CHECK(fault_of(b, ref, t.l) == sf::fault::bad_crc);
  }
  CHECK(fault_of(file, t.m().anchors[0], t.l) == sf::fault::wrong_place);  // the grid anchor at 4
  spill_anchor_ref r = ref;
  r.end = false;
  CHECK(fault_of(file, r, t.l) == sf::fault::wrong_place);
  r = ref;
  r.sums[1].s0 ^= 1;
  CHECK(fault_of(file, r, t.l) == sf::fault::wrong_sums);
  state_layout other = t.l;
  other.sections[0].bytes = 56;
  CHECK(fault_of(file, ref, other) == sf::fault::foreign_engine);
  for (std::size_t n = 0; n < file.size(); n += 5)
    CHECK(fault_of(spill_bytes(file.begin(), file.begin() + static_cast<long>(n)), ref, t.l) ==
          sf::fault::truncated);
  // Sections changed under valid crcs.
  std::vector<spill_bytes> sections = t.img.anchors[1].sections;
  sections[0][0] ^= 1;
  const spill_bytes f = encode_spill_anchor(t.l, ref, sections);
  CHECK(fault_of(f, ref, t.l) == sf::fault::wrong_sums);
}

TEST_CASE("a manifest round-trips through CBOR and its rules are checked", "[spill]") {
  codec_bench t;
  spill_manifest m = t.m();
  m.hidden = {{1, 3}};
  m.think_close = 77;
  m.resident = true;
  m.slot = 2;
  m.sequence = 1234567890123ULL;
  m.end->hidden = {{2, 4}};
  m.end->pending = -1;
  const spill_bytes file = encode_spill_manifest(t.l, m);
  auto d = decode_spill_manifest(file.data(), file.size(), t.l, m.id);
  INFO(d.error);
  REQUIRE(d.ok());
  const spill_manifest& r = d.value;
  CHECK(r.id == m.id);
  CHECK(r.session_key == m.session_key);
  CHECK(r.tokens == m.tokens);
  CHECK(r.taint == m.taint);
  CHECK(r.reasoning == m.reasoning);
  CHECK(r.hidden == m.hidden);
  CHECK(r.answers == m.answers);
  CHECK(r.think_close == 77);
  CHECK(r.resident);
  CHECK(r.slot == 2);
  CHECK(r.sequence == m.sequence);
  REQUIRE(r.end);
  CHECK(r.end->at == m.end->at);
  CHECK(r.end->prompt_len == m.end->prompt_len);
  CHECK(r.end->pending == -1);
  CHECK(r.end->hidden == m.end->hidden);
  CHECK(r.end->reasoning == m.end->reasoning);
  REQUIRE(r.blocks.size() == m.blocks.size());
  for (std::size_t i = 0; i < m.blocks.size(); ++i) {
    CHECK(r.blocks[i].name == m.blocks[i].name);
    CHECK(r.blocks[i].a == m.blocks[i].a);
    CHECK(r.blocks[i].b == m.blocks[i].b);
    CHECK(r.blocks[i].sums == m.blocks[i].sums);
  }
  REQUIRE(r.anchors.size() == m.anchors.size());
  for (std::size_t i = 0; i < m.anchors.size(); ++i) {
    CHECK(r.anchors[i].name == m.anchors[i].name);
    CHECK(r.anchors[i].at == m.anchors[i].at);
    CHECK(r.anchors[i].end == m.anchors[i].end);
    CHECK(r.anchors[i].sums == m.anchors[i].sums);
  }
  CHECK(encode_spill_manifest(t.l, r) == file);  // deterministic

  auto fault_of = [&](const spill_bytes& b, std::uint64_t id, const state_layout& l) {
    spill_decode<spill_manifest> x;
    REQUIRE_NOTHROW(x = decode_spill_manifest(b.data(), b.size(), l, id));
    return x.fault;
  };
  CHECK(fault_of(file, m.id ^ 1, t.l) == sf::fault::wrong_place);
  state_layout other = t.l;
  other.fingerprint = 99;
  CHECK(fault_of(file, m.id, other) == sf::fault::foreign_engine);
  for (std::size_t at = sf::manifest_fixed_bytes; at < file.size(); at += 11) {
    spill_bytes b = file;
    b[at] ^= 0x20;
    CHECK(fault_of(b, m.id, t.l) == sf::fault::bad_crc);
  }
  for (std::size_t n = 0; n < file.size(); n += 13)
    CHECK(fault_of(spill_bytes(file.begin(), file.begin() + static_cast<long>(n)), m.id, t.l) ==
          sf::fault::truncated);

  // A payload with a valid crc that is not CBOR, or breaks a rule: bad_payload.
  auto with_payload = [&](const std::vector<std::uint8_t>& payload) {
    spill_bytes b(file.begin(), file.begin() + sf::manifest_fixed_bytes);
    spill_codec_detail::put_u64(b, sf::common_offset::file_bytes, sf::manifest_fixed_bytes + payload.size());
    spill_codec_detail::put_u64(b, sf::manifest_offset::payload_bytes, payload.size());
    spill_codec_detail::put_u32(b, sf::manifest_offset::payload_crc, crc32(payload.data(), payload.size()));
    store::seal_header(b, sf::manifest_fixed_bytes);
    b.insert(b.end(), payload.begin(), payload.end());
    return b;
  };
  CHECK(fault_of(with_payload({0xff, 0x00, 0x13}), m.id, t.l) == sf::fault::bad_payload);
  nlohmann::json j = nlohmann::json::from_cbor(file.begin() + sf::manifest_fixed_bytes, file.end());
  j["taint"] = "ten";
  CHECK(fault_of(with_payload(nlohmann::json::to_cbor(j)), m.id, t.l) == sf::fault::bad_payload);
  j = nlohmann::json::from_cbor(file.begin() + sf::manifest_fixed_bytes, file.end());
  j["blocks"][1]["b"] = 7;  // a gap: [4, 7) then [8, 10)
  CHECK(fault_of(with_payload(nlohmann::json::to_cbor(j)), m.id, t.l) == sf::fault::bad_payload);
  j = nlohmann::json::from_cbor(file.begin() + sf::manifest_fixed_bytes, file.end());
  j.erase("sequence");
  CHECK(fault_of(with_payload(nlohmann::json::to_cbor(j)), m.id, t.l) == sf::fault::bad_payload);
}

TEST_CASE("check_spill_manifest names each broken rule", "[spill]") {
  codec_bench t;
  CHECK(check_spill_manifest(t.l, t.m()).empty());
  auto broken = [&](auto change) {
    spill_manifest m = t.m();
    change(m);
    const std::string e = check_spill_manifest(t.l, m);
    CHECK_FALSE(e.empty());
    CHECK_THROWS_AS(encode_spill_manifest(t.l, m), std::invalid_argument);
    return e;
  };
  broken([](spill_manifest& m) { m.id ^= 1; });
  broken([](spill_manifest& m) { m.blocks.pop_back(); });           // [8, 10) missing
  broken([](spill_manifest& m) { m.blocks[1].name ^= 1; });         // not its content's name
  broken([](spill_manifest& m) { m.blocks[0].sums.pop_back(); });   // one sum per view
  broken([](spill_manifest& m) { m.anchors[1].sums[0].s0 ^= 1; });  // the name no longer fits
  broken([](spill_manifest& m) { m.taint = 3; });                   // the grid anchor at 4 above it
  broken([](spill_manifest& m) { m.end.reset(); });                 // an end anchor without its record
  broken([](spill_manifest& m) { m.end->at = 9; });                 // the record elsewhere
  broken([](spill_manifest& m) { std::swap(m.anchors[0], m.anchors[1]); });  // the end anchor not last
  broken([](spill_manifest& m) { m.answers = {{3, 11}}; });                  // a span past the tokens
  broken([](spill_manifest& m) { m.tokens[0] += 1; });                       // names and id no longer fit
}
