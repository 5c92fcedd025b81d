#pragma once
// Private to runtime/spill/spill_*codec.cpp: little-endian fields and the checks every spill
// file's reader shares. Not part of the codec's API.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "protocol/spill_format.hpp"
#include "runtime/core/crc32.hpp"
#include "runtime/core/little_endian.hpp"
#include "runtime/spill/spill_codec.hpp"

namespace anchorage::spill_codec_detail {

namespace sf = spill_format;
using sf::fault;
using bytes = std::vector<unsigned char>;

using little_endian::get_u32;
using little_endian::get_u64;
using little_endian::hex;
using little_endian::put_u32;
using little_endian::put_u64;
inline std::string num(std::uint64_t v) { return std::to_string(v); }

// The common fields (magic, version, grid, fingerprint, file_bytes) at their offsets, with the
// header crc left 0 (seal() fills it once the header is complete).
inline void put_common(bytes& b, std::uint64_t magic, std::size_t header_bytes, const state_layout& l,
                       std::uint64_t file_bytes) {
  put_u64(b, sf::common_offset::magic, magic);
  put_u32(b, sf::common_offset::version, sf::version);
  put_u32(b, sf::common_offset::header_bytes, static_cast<std::uint32_t>(header_bytes));
  put_u32(b, sf::common_offset::grid, static_cast<std::uint32_t>(l.grid));
  put_u64(b, sf::common_offset::fingerprint, l.fingerprint);
  put_u64(b, sf::common_offset::file_bytes, file_bytes);
}
// The header crc over [16, header_bytes).
inline void seal(bytes& b, std::size_t header_bytes) {
  put_u32(b, sf::common_offset::header_crc,
          crc32(b.data() + sf::header_crc_from, header_bytes - sf::header_crc_from));
}

inline void put_entry(bytes& b, std::size_t at, std::uint64_t size, spill_sum sum, std::uint32_t crc) {
  put_u64(b, at + sf::entry_offset::size, size);
  put_u64(b, at + sf::entry_offset::s0, sum.s0);
  put_u64(b, at + sf::entry_offset::s1, sum.s1);
  put_u32(b, at + sf::entry_offset::crc, crc);
}
// An entry, or false when its reserved field is not zero.
inline bool get_entry(const unsigned char* p, sf::sum_entry& e) {
  e.size = get_u64(p + sf::entry_offset::size);
  e.s0 = get_u64(p + sf::entry_offset::s0);
  e.s1 = get_u64(p + sf::entry_offset::s1);
  e.crc = get_u32(p + sf::entry_offset::crc);
  return get_u32(p + sf::entry_offset::reserved) == 0;
}

inline const char* kind_of_magic(std::uint64_t m) {
  if (m == sf::block_magic) return "a spill block";
  if (m == sf::anchor_magic) return "a spill anchor";
  if (m == sf::manifest_magic) return "a spill manifest";
  return nullptr;
}

// The fixed header is there, the magic is `magic`, the version known; then the common fields.
// `kind` names the file ("a spill block").
template <class R>
bool check_start(R& r, const unsigned char* d, std::size_t size, std::size_t fixed, std::uint64_t magic,
                 const char* kind, sf::common_header& h) {
  if (size < fixed) {
    r = R::failure(fault::truncated, num(size) + " bytes, " + kind + " file's header needs " + num(fixed));
    return false;
  }
  const std::uint64_t m = get_u64(d + sf::common_offset::magic);
  if (m != magic) {
    const char* other = kind_of_magic(m);
    r = R::failure(fault::bad_magic, std::string("not ") + kind + " file (" +
                                         (other ? std::string(other) + " file" : "magic " + hex(m)) + ")");
    return false;
  }
  h.version = get_u32(d + sf::common_offset::version);
  if (h.version != sf::version) {
    r = R::failure(fault::bad_version,
                   "version " + num(h.version) + ", this reader knows " + num(sf::version));
    return false;
  }
  h.header_bytes = get_u32(d + sf::common_offset::header_bytes);
  h.grid = get_u32(d + sf::common_offset::grid);
  h.fingerprint = get_u64(d + sf::common_offset::fingerprint);
  h.file_bytes = get_u64(d + sf::common_offset::file_bytes);
  return true;
}

// header_bytes is what the counts make, the header is all there and its crc holds.
template <class R>
bool check_header(R& r, const unsigned char* d, std::size_t size, std::uint64_t expect_hb,
                  const sf::common_header& h) {
  if (h.header_bytes != expect_hb) {
    r = R::failure(fault::bad_header,
                   "header_bytes " + num(h.header_bytes) + ", its counts make " + num(expect_hb));
    return false;
  }
  if (size < expect_hb) {
    r = R::failure(fault::truncated, num(size) + " bytes, the header needs " + num(expect_hb));
    return false;
  }
  const std::uint32_t crc = crc32(d + sf::header_crc_from, expect_hb - sf::header_crc_from);
  const std::uint32_t stored = get_u32(d + sf::common_offset::header_crc);
  if (crc != stored) {
    r = R::failure(fault::bad_header, "header crc32 " + hex(crc) + ", stored " + hex(stored));
    return false;
  }
  return true;
}

// The file belongs to this engine: same fingerprint, same grid.
inline std::string foreign_engine(const sf::common_header& h, const state_layout& l) {
  if (h.fingerprint != l.fingerprint)
    return "fingerprint " + hex(h.fingerprint) + ", this engine's is " + hex(l.fingerprint);
  if (h.grid != static_cast<std::uint32_t>(l.grid))
    return "grid " + num(h.grid) + ", this engine's is " + num(static_cast<std::uint64_t>(l.grid));
  return {};
}

// The header's file_bytes is what its fields make, and the bytes are exactly that long.
template <class R>
bool check_length(R& r, std::uint64_t file_bytes, std::uint64_t expect, std::size_t size) {
  if (file_bytes != expect)
    r = R::failure(fault::bad_header, "file_bytes " + num(file_bytes) + ", its fields make " + num(expect));
  else if (size < expect)
    r = R::failure(fault::truncated, num(size) + " of " + num(expect) + " bytes");
  else if (size > expect)
    r = R::failure(fault::bad_header, num(size) + " bytes, the header says " + num(expect));
  return r.ok();
}

// crc32 and host_sum of `n` bytes, and a copy of them to `to` when it is not null, in one pass:
// piece by piece (a multiple of 8 bytes each, small enough to stay in the core's L2 cache between
// the three), so the bytes come from memory once. Each piece's sums join the total's with
// combine_sums.
inline void crc_sum_copy(const unsigned char* data, std::size_t n, unsigned char* to, std::uint32_t& crc,
                         spill_sum& sum) {
  constexpr std::size_t piece = 128 * 1024;
  crc = 0;
  sum = {0, 0};
  const std::size_t whole = n / 8 * 8;  // host_sum counts whole words only
  for (std::size_t at = 0; at < n; at += piece) {
    const std::size_t len = std::min(piece, n - at);
    crc = crc32_extend(crc, data + at, len);
    const std::size_t words_len = at < whole ? std::min(len, whole - at) : 0;
    if (words_len > 0) sum = combine_sums(sum, host_sum(data + at, words_len), at / 8);
    if (to) std::memcpy(to + at, data + at, len);
  }
}

// The stored sums, then the crc of the block's `n` bytes and its recomputed sums, against `want`;
// the bytes copied to `to` on the way when it is not null (crc_sum_copy).
template <class R>
bool check_block(R& r, const std::string& what, const sf::sum_entry& e, const unsigned char* data,
                 std::size_t n, spill_sum want, unsigned char* to = nullptr) {
  if (spill_sum{e.s0, e.s1} != want) {
    r = R::failure(fault::wrong_sums, what + ": the file's sums differ from the manifest's");
    return false;
  }
  std::uint32_t c = 0;
  spill_sum got;
  crc_sum_copy(data, n, to, c, got);
  if (c != e.crc) {
    r = R::failure(fault::bad_crc, what + ": crc32 " + hex(c) + ", stored " + hex(e.crc));
    return false;
  }
  if (got != want) {
    r = R::failure(fault::wrong_sums, what + ": the sums of its bytes differ from the manifest's");
    return false;
  }
  return true;
}

}  // namespace anchorage::spill_codec_detail
