#pragma once
// What the session spill (docs/SPILL.md) keeps of one conversation: its manifest (the tokens,
// the taint, the spans, the end record, which blocks and anchors hold its bytes) and, for a
// write, the host bytes of the blocks and anchors the store does not hold yet. No I/O.
//
// Blocks are addressed by content: rows [a, b) of every view (a on the grid, b - a <= grid),
// named by spill_block_name() from two 64-bit sums per view (kernels/block_checksum.hpp, computed
// where the rows live), the block's place and the prefix it ends. A block another conversation
// (or an earlier spill of this one) already wrote is not written again. Anchors (every section
// at one position) are addressed the same way.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

inline constexpr token_id no_spill_token = -1;           // text/tokenizer.hpp's no_token
using spill_span = std::pair<std::size_t, std::size_t>;  // [first, second) row positions

// The two sums of kernels::block_checksum over one byte range.
struct spill_sum {
  std::uint64_t s0 = 0, s1 = 0;
  bool operator==(const spill_sum& o) const { return s0 == o.s0 && s1 == o.s1; }
  bool operator!=(const spill_sum& o) const { return !(*this == o); }
};

// The sums of two adjacent ranges as one: `first` covers `first_words` 64-bit words, then
// `second` (block_checksum's weights are positions, so the second range's shift by first_words).
spill_sum combine_sums(spill_sum first, spill_sum second, std::uint64_t first_words);
// block_checksum over `bytes` host bytes (a multiple of 8), on the CPU.
spill_sum host_sum(const void* data, std::size_t bytes);

// One block: rows [a, b) of every view.
struct spill_block_ref {
  std::uint64_t name = 0;  // spill_block_name(prefix hash of tokens[0, b), a, b, sums)
  std::size_t a = 0, b = 0;
  std::vector<spill_sum> sums;  // per view (layout order), over rows [a, b)
};

// One anchor: every section at position `at`.
struct spill_anchor_ref {
  std::uint64_t name = 0;  // spill_anchor_name(prefix hash of tokens[0, at), at, end, sums)
  std::size_t at = 0;
  bool end = false;             // the end anchor (else a grid anchor, at <= taint, on the grid)
  std::vector<spill_sum> sums;  // per section (layout order)
};

// The end anchor's record besides its rows, which are tokens[0, at).
struct spill_end {
  std::size_t at = 0;
  std::size_t prompt_len = 0;
  token_id pending = no_spill_token;
  std::vector<spill_span> reasoning, hidden, answers;
};

// A conversation as the spill keeps it: everything but the rows' and sections' bytes.
struct spill_manifest {
  std::uint64_t id = 0;  // spill_conversation_id(session_key, tokens): one manifest per id
  std::string session_key;
  std::vector<token_id> tokens;                        // rows [0, tokens.size()) hold these
  std::size_t taint = 0;                               // rows [0, taint) are a cold grid prefill's
  std::vector<spill_span> reasoning, hidden, answers;  // the resident prefix's spans
  token_id think_close = no_spill_token;
  std::optional<spill_end> end;
  std::vector<spill_block_ref> blocks;    // ascending, covering [0, tokens.size()) without a gap
  std::vector<spill_anchor_ref> anchors;  // grid anchors ascending, then the end anchor if any
  bool resident = false;       // a slot's resident conversation at a planned stop (read back at start)
  int slot = 0;                // which slot held it
  std::uint64_t sequence = 0;  // when it was spilled (ns since the epoch): the newest wins
};

// Host bytes of one block the store did not hold when it was staged.
struct spill_staged_block {
  std::size_t index = 0;                         // into manifest.blocks
  std::vector<std::vector<unsigned char>> rows;  // per view, (b - a) * bytes_per_token
};
// Host bytes of one anchor.
struct spill_staged_anchor {
  std::size_t index = 0;                             // into manifest.anchors
  std::vector<std::vector<unsigned char>> sections;  // per section
};

// One spill to write: the manifest and the bytes of what is new.
struct spill_image {
  spill_manifest manifest;
  std::vector<spill_staged_block> blocks;
  std::vector<spill_staged_anchor> anchors;
  std::uint64_t staged_bytes() const;  // host bytes held
};

// XXH3-64 names with distinct seeds (three disjoint families in practice).
std::uint64_t spill_block_name(std::uint64_t prefix_hash, std::size_t a, std::size_t b,
                               const std::vector<spill_sum>& sums);
std::uint64_t spill_anchor_name(std::uint64_t prefix_hash, std::size_t at, bool end,
                                const std::vector<spill_sum>& sums);
// A conversation: its session key and its first grid line of tokens (at most `grid` ids).
std::uint64_t spill_conversation_id(const std::string& session_key, const std::vector<token_id>& tokens,
                                    std::size_t grid);
// XXH3-64 (seed 0) of tokens[0, n) as int32 little-endian bytes (the disk tier's prefix_hash).
std::uint64_t spill_prefix_hash(const token_id* tokens, std::size_t n);
// spill_prefix_hash(tokens, e) for every e of `ends` (ascending, each <= tokens.size()), in one
// pass over tokens[0, ends.back()).
std::vector<std::uint64_t> spill_prefix_hashes(const std::vector<token_id>& tokens,
                                               const std::vector<std::size_t>& ends);

}  // namespace anchorage
