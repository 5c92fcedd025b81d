// Sums, names and sizes of what the session spill keeps (runtime/spill/spill_image.hpp).
#include "runtime/spill/spill_image.hpp"

#include <xxhash.h>

#include <cstring>
#include <stdexcept>

#include "kernels/block_checksum.hpp"

namespace anchorage {
namespace {

// Distinct seeds keep the three name families apart (a block, an anchor and a conversation
// hashed from the same bytes get different names).
constexpr std::uint64_t block_seed = 0x7370696c6c2e626bULL;         // "spill.bk"
constexpr std::uint64_t anchor_seed = 0x7370696c6c2e616eULL;        // "spill.an"
constexpr std::uint64_t conversation_seed = 0x7370696c6c2e6376ULL;  // "spill.cv"

bool host_is_little_endian() {
  const std::uint32_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// The hash's input as little-endian bytes, whatever the host.
void put_u64(std::vector<unsigned char>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

void put_ids(std::vector<unsigned char>& out, const token_id* tokens, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::uint32_t>(tokens[i]);
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<unsigned char>(v >> (8 * k)));
  }
}

// prefix hash, positions, then each sum pair: what a name binds.
std::uint64_t name_of(std::uint64_t seed, std::uint64_t prefix_hash, std::uint64_t p0, std::uint64_t p1,
                      const std::vector<spill_sum>& sums) {
  std::vector<unsigned char> in;
  in.reserve(8 * (3 + 2 * sums.size()));
  put_u64(in, prefix_hash);
  put_u64(in, p0);
  put_u64(in, p1);
  for (const spill_sum& s : sums) {
    put_u64(in, s.s0);
    put_u64(in, s.s1);
  }
  return XXH3_64bits_withSeed(in.data(), in.size(), seed);
}

}  // namespace

spill_sum combine_sums(spill_sum first, spill_sum second, std::uint64_t first_words) {
  // s1 weighs word i by i + 1: the second range's words sit first_words further on, so each
  // adds first_words more times itself, first_words * s0 in all (mod 2^64, as the sums are).
  return {first.s0 + second.s0, first.s1 + second.s1 + first_words * second.s0};
}

spill_sum host_sum(const void* data, std::size_t bytes) {
  std::uint64_t out[2] = {0, 0};
  // One "row" of all the bytes: the kernel's words are counted from the range's start.
  if (bytes > 0) kernels::cpu::block_checksum(data, static_cast<long>(bytes), 0, 1, out);
  return {out[0], out[1]};
}

std::uint64_t spill_image::staged_bytes() const {
  std::uint64_t n = 0;
  for (const auto& b : blocks)
    for (const auto& r : b.rows) n += r.size();
  for (const auto& a : anchors)
    for (const auto& s : a.sections) n += s.size();
  return n;
}

std::uint64_t spill_block_name(std::uint64_t prefix_hash, std::size_t a, std::size_t b,
                               const std::vector<spill_sum>& sums) {
  return name_of(block_seed, prefix_hash, a, b, sums);
}

std::uint64_t spill_anchor_name(std::uint64_t prefix_hash, std::size_t at, bool end,
                                const std::vector<spill_sum>& sums) {
  return name_of(anchor_seed, prefix_hash, at, end ? 1 : 0, sums);
}

std::uint64_t spill_conversation_id(const std::string& session_key, const std::vector<token_id>& tokens,
                                    std::size_t grid) {
  const std::size_t n = tokens.size() < grid ? tokens.size() : grid;
  std::vector<unsigned char> in;
  in.reserve(8 + session_key.size() + 4 * n);
  put_u64(in, session_key.size());  // the key's length first: "ab" + [c] is not "a" + [b, c]
  in.insert(in.end(), session_key.begin(), session_key.end());
  put_ids(in, tokens.data(), n);
  return XXH3_64bits_withSeed(in.data(), in.size(), conversation_seed);
}

std::uint64_t spill_prefix_hash(const token_id* tokens, std::size_t n) {
  if (host_is_little_endian()) return XXH3_64bits(tokens, n * sizeof(token_id));
  std::vector<unsigned char> le;
  le.reserve(4 * n);
  put_ids(le, tokens, n);
  return XXH3_64bits(le.data(), le.size());
}

std::vector<std::uint64_t> spill_prefix_hashes(const std::vector<token_id>& tokens,
                                               const std::vector<std::size_t>& ends) {
  std::vector<std::uint64_t> out;
  out.reserve(ends.size());
  // XXH3's streaming digest is the one-shot hash of everything fed so far.
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  std::size_t fed = 0;
  std::vector<unsigned char> le;
  for (std::size_t e : ends) {
    if (e < fed || e > tokens.size()) {
      XXH3_freeState(st);
      throw std::invalid_argument("spill_prefix_hashes: ends must be ascending and within the tokens");
    }
    if (host_is_little_endian()) {
      XXH3_64bits_update(st, tokens.data() + fed, (e - fed) * sizeof(token_id));
    } else {
      le.clear();
      put_ids(le, tokens.data() + fed, e - fed);
      XXH3_64bits_update(st, le.data(), le.size());
    }
    fed = e;
    out.push_back(XXH3_64bits_digest(st));
  }
  XXH3_freeState(st);
  return out;
}

}  // namespace anchorage
