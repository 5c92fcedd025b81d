#pragma once
// Bytes in, bytes out for generation checkpoint files (protocol/checkpoint_format.hpp,
// docs/DISK_FORMAT.md): one file holds an in-flight generation's whole state, so a generation
// cut by a restart resumes with the same tokens. No file I/O here, as for runtime/disk/disk_codec.hpp.
//
// A decode verifies everything before it returns anything and never throws on bad bytes; only
// contract violations by the caller (noted per function) throw.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/checkpoint_format.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

// What a checkpoint says about its generation, besides the state.
struct checkpoint_meta {
  std::uint64_t key_hash = 0;  // XXH3-64 of the request's key string (the caller's)
  std::uint64_t seed = 0;
  bool seed_explicit = false;  // the client sent the seed
  std::size_t prompt_tokens = 0;
  // The prompt, then every output id, the last one the pending token (sampled, not forwarded):
  // the state holds rows [0, tokens.size() - 1) and its sections are at that position.
  std::vector<token_id> tokens;
};

// The file's length for a layout and token_count ids (prompt + outputs), before encoding.
// Throws std::invalid_argument when token_count is below 2 (a prompt id and a pending one).
std::size_t checkpoint_file_bytes(const state_layout& layout, std::size_t token_count);

// Every section, rows [0, rows) of every view and the ids. Throws std::invalid_argument unless
// from.valid_length() == meta.tokens.size() - 1 and 1 <= meta.prompt_tokens < tokens.size()
// (at least the pending output id), or when a name does not fit an entry.
std::vector<unsigned char> encode_checkpoint(const state_adapter& from, const checkpoint_meta& meta);

// Checks the header alone (magic, version, sizes, header crc, the fields' consistency): what a
// scan needs to index a file. Does not check the file's length against the header.
decode_result<disk_format::checkpoint_header> read_checkpoint_header(const unsigned char* data,
                                                                     std::size_t size);

// The header, then the tokens block and its crc: the ids of a checkpoint for a listing, from
// the file's first header_bytes + 4 * token_count bytes (the rest may be absent).
decode_result<std::vector<token_id>> read_checkpoint_tokens(const unsigned char* data, std::size_t size);

// A verified checkpoint: sections[s] holds layout section s, rows[v] rows [0, rows) of layout
// view v, with rows = meta.tokens.size() - 1.
struct checkpoint_read {
  checkpoint_meta meta;
  std::uint64_t fingerprint = 0;
  std::vector<std::vector<unsigned char>> sections;
  std::vector<std::vector<unsigned char>> rows;
};

// Verifies magic, version, header crc, the header's fields, the fingerprint and grid against
// the layout's (foreign_engine), the sections' and views' names and sizes and the rows against
// the views' capacity (layout_mismatch), the length, the tokens' crc (bad_crc), the key hash
// against expected_key_hash and the stored prompt against `prompt`, same length and every id
// (wrong_prefix), and every section's and view's crc (bad_crc); then copies everything out.
decode_result<checkpoint_read> decode_checkpoint(const unsigned char* data, std::size_t size,
                                                 const state_layout& layout,
                                                 const std::vector<token_id>& prompt,
                                                 std::uint64_t expected_key_hash);
decode_result<checkpoint_read> decode_checkpoint(const std::vector<unsigned char>& bytes,
                                                 const state_layout& layout,
                                                 const std::vector<token_id>& prompt,
                                                 std::uint64_t expected_key_hash);

// Writes every section and rows [0, rows) of every view and sets the valid length to rows; the
// next token to forward is read.meta.tokens.back(). Throws std::invalid_argument when the read
// was decoded against another layout, std::out_of_range past the views' capacity; in both
// cases before writing anything.
void apply_checkpoint(state_adapter& into, const checkpoint_read& read);

}  // namespace anchorage
