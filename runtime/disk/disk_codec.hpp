#pragma once
// Bytes in, bytes out for the disk tier's chunk and anchor files (protocol/disk_format.hpp,
// docs/DISK_FORMAT.md). No file I/O here: the file-system seam reads and writes the bytes.
//
// A decode verifies everything before it returns anything: a decode that fails names what
// failed and leaves nothing to apply, so a restore that decodes all its files first and applies
// them only when every one passed never writes a byte of a bad file into the engine. Bad bytes
// never throw; only contract violations by the caller (noted per function) do.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "protocol/disk_format.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/core/token.hpp"
#include "runtime/core/token_prefix.hpp"
#include "runtime/store/record.hpp"

namespace anchorage {

// The result of a decode: a value, or the fault and a message naming what failed (the framed
// record's result, runtime/store/record.hpp).
template <class T>
using decode_result = store::record_result<T>;

// XXH3-64 (seed 0) of the ids as int32 little-endian bytes: the key of the prefix [0, n).
std::uint64_t prefix_hash(const token_id* tokens, std::size_t n);
// The prefix hashes at lines grid, 2 grid, ..., and at line_b, in one pass: the chunk chain an
// anchor at line_b needs (disk_format::chain_length(line_b, grid) hashes; the last is line_b's
// whether it is on the grid or off it). Throws std::invalid_argument unless grid > 0, line_b > 0
// and tokens holds at least line_b ids.
std::vector<std::uint64_t> chunk_hashes(const std::vector<token_id>& tokens, std::size_t line_b,
                                        std::size_t grid);

// Sizes, for budgets and benchmarks, before anything is encoded: a chunk on a grid line, a chunk
// at `line` (fewer rows off the grid), an anchor at line_b.
std::size_t chunk_file_bytes(const state_layout& layout);
std::size_t chunk_file_bytes(const state_layout& layout, std::size_t line);
std::size_t anchor_file_bytes(const state_layout& layout, std::size_t line_b);

// ---- Chunk files ----------------------------------------------------------------------------

// Rows [line_b - r, line_b) of every view and their token ids, r = disk_format::chunk_rows
// (the grid, or line_b mod grid off the grid: version 4), with prefix_tokens holding (at least)
// the ids [0, line_b). Throws std::invalid_argument when line_b is 0, is past the adapter's
// valid length, or prefix_tokens is shorter, or a name does not fit an entry.
std::vector<unsigned char> encode_chunk(const state_adapter& from, std::size_t line_b,
                                        const std::vector<token_id>& prefix_tokens);

// A chunk file's head (its header and token block) for rows that lie elsewhere: rows[v] points at
// rows [line_b - r, line_b) of view v. The file is the head followed by each view's rows, in
// layout order; a writer passes them as pieces, so the rows are never copied into a file buffer.
// Throws as encode_chunk.
std::vector<unsigned char> encode_chunk_head(const state_layout& layout, std::size_t line_b,
                                             const std::vector<token_id>& prefix_tokens,
                                             const std::vector<const unsigned char*>& rows);

// A verified chunk: rows[v] holds rows [line - row_count, line) of layout view v.
struct chunk_read {
  std::uint64_t fingerprint = 0;
  std::size_t line = 0;
  std::size_t grid = 0;
  std::size_t row_count = 0;  // the grid, or line mod grid off the grid
  std::uint64_t prefix_hash = 0;
  std::vector<token_id> tokens;
  std::vector<std::vector<unsigned char>> rows;
};

// Checks the header alone (magic, version, sizes, header crc): what a scan needs to index a
// file without reading its rows. Does not check the file's length against the header.
decode_result<disk_format::chunk_header> read_chunk_header(const unsigned char* data, std::size_t size);

// Verifies magic, version, header crc, length, the fingerprint and grid against the layout's,
// the line against line_b, the views' names and sizes against the layout's, the tokens' crc,
// every stored id against prompt[line_b - r, line_b), the prefix and parent hashes against
// the prompt's, and every view's crc; then copies the rows out.
decode_result<chunk_read> decode_chunk(const unsigned char* data, std::size_t size,
                                       const state_layout& layout, const std::vector<token_id>& prompt,
                                       std::size_t line_b);
decode_result<chunk_read> decode_chunk(const std::vector<unsigned char>& bytes, const state_layout& layout,
                                       const std::vector<token_id>& prompt, std::size_t line_b);

// The same checks as decode_chunk without copying anything: rows[v] points into `data` at rows
// [line - row_count, line) of layout view v, valid while `data` is. What a restore keeps until every
// file of its chain passed, then applies straight from the bytes it read.
struct chunk_view {
  std::uint64_t fingerprint = 0;
  std::size_t line = 0;
  std::size_t grid = 0;
  std::size_t row_count = 0;
  std::vector<const unsigned char*> rows;
};
decode_result<chunk_view> verify_chunk(const unsigned char* data, std::size_t size,
                                       const state_layout& layout, const std::vector<token_id>& prompt,
                                       std::size_t line_b);
void apply_chunk(state_adapter& into, const chunk_view& view);

// Writes the rows into rows [line - row_count, line) of every view; the valid length is unchanged
// (the anchor sets it). Throws std::invalid_argument when the read was decoded against another
// layout, std::out_of_range past the views' capacity.
void apply_chunk(state_adapter& into, const chunk_read& read);

// ---- Anchor files ---------------------------------------------------------------------------

// Every section (the state at line_b, the caller's contract) and the chain of chunk hashes
// below it (chunk_hashes(tokens, line_b, grid)), in format 2 on a grid line and 4 off it. Throws
// std::invalid_argument when line_b is 0 or the chain is not chain_length(line_b, grid) long.
std::vector<unsigned char> encode_anchor(const state_adapter& from, std::size_t line_b,
                                         const std::vector<std::uint64_t>& chunk_hashes);

// An anchor file's header for sections that lie elsewhere (sections[s]: layout section s); the
// file is the header followed by each section in layout order. Throws as encode_anchor.
std::vector<unsigned char> encode_anchor_head(const state_layout& layout, std::size_t line_b,
                                              const std::vector<std::uint64_t>& chunk_hashes,
                                              const std::vector<const unsigned char*>& sections);

// A verified anchor: sections[s] holds layout section s.
struct anchor_read {
  std::uint32_t version = 0;  // 1, 2 or 4: what the file was written with
  std::uint64_t fingerprint = 0;
  std::size_t line = 0;
  std::vector<std::uint64_t> chunk_hashes;
  std::vector<std::vector<unsigned char>> sections;
};

// Header alone, as read_chunk_header. Format 1's sections come back named gdn.S and gdn.conv.
decode_result<disk_format::anchor_header> read_anchor_header(const unsigned char* data, std::size_t size);

// Verifies magic, version (2 or 4 as the line says, or 1 read as gdn.S + gdn.conv), header crc,
// length, fingerprint and grid, the chain's length (expected.size()), every chunk hash against `expected`,
// the sections' names and sizes against the layout (each layout section exactly once) and every section's
// crc; then copies the sections out.
decode_result<anchor_read> decode_anchor(const unsigned char* data, std::size_t size,
                                         const state_layout& layout,
                                         const std::vector<std::uint64_t>& expected);
decode_result<anchor_read> decode_anchor(const std::vector<unsigned char>& bytes, const state_layout& layout,
                                         const std::vector<std::uint64_t>& expected);

// The same checks as decode_anchor without copying: sections[s] points into `data`.
struct anchor_view {
  std::uint64_t fingerprint = 0;
  std::size_t line = 0;
  std::vector<const unsigned char*> sections;
};
decode_result<anchor_view> verify_anchor(const unsigned char* data, std::size_t size,
                                         const state_layout& layout,
                                         const std::vector<std::uint64_t>& expected);
void apply_anchor(state_adapter& into, const anchor_view& view, std::size_t line_b);

// Writes every section and sets the valid length to line_b: the rows [0, line_b) must be in
// place already (the chunks applied, or the engine's own). Throws std::invalid_argument when
// line_b is not the anchor's line or the read was decoded against another layout.
void apply_anchor(state_adapter& into, const anchor_read& read, std::size_t line_b);

}  // namespace anchorage
