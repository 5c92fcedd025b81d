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
#include "runtime/store/record.hpp"

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

// The file belongs to this engine (the framed record's rule 3): empty when it does, else what
// differs.
inline std::string foreign_engine(const sf::common_header& h, const state_layout& l) {
  return store::check_engine(h, l.fingerprint, static_cast<std::uint32_t>(l.grid)).why;
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
