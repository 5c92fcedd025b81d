#pragma once
// Bytes in, bytes out for the session spill's block, anchor and manifest files
// (protocol/spill_format.hpp, docs/SPILL_FORMAT.md). No file I/O here: the file seam reads and
// writes the bytes.
//
// A decode verifies everything before it returns anything: a decode that fails names what
// failed and leaves nothing to use. Bad bytes never throw; only contract violations by the
// caller (noted per function) do.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "protocol/spill_format.hpp"
#include "runtime/core/token.hpp"
#include "runtime/store/record.hpp"
#include "runtime/engine/state_layout.hpp"
#include "runtime/spill/spill_image.hpp"

namespace anchorage {

// The result of a decode: a value, or the fault and a message naming what failed (the framed
// record's result, runtime/store/record.hpp).
template <class T>
using spill_decode = store::record_result<T>;

// Sizes, for budgets, before anything is encoded.
std::uint64_t spill_block_file_bytes(const state_layout& layout, std::size_t a, std::size_t b);
std::uint64_t spill_anchor_file_bytes(const state_layout& layout);

// File names: b-<16 hex>.blk, s-<16 hex>.sec, m-<16 hex>.man, and back (nullopt-like: false
// when `file` is not one).
std::string spill_block_file(std::uint64_t name);
std::string spill_anchor_file(std::uint64_t name);
std::string spill_manifest_file(std::uint64_t id);
bool parse_spill_block_file(const std::string& file, std::uint64_t& name);
bool parse_spill_anchor_file(const std::string& file, std::uint64_t& name);
bool parse_spill_manifest_file(const std::string& file, std::uint64_t& id);

// ---- Block files ----------------------------------------------------------------------------

// A block file's head (header, view table, token ids [ref.a, ref.b) from `tokens`) for rows
// that lie elsewhere: rows[v] points at (b - a) * bytes_per_token bytes of view v. The file is
// the head followed by each view's rows in layout order (a writer passes them as pieces). The
// sums written are the ref's. Throws std::invalid_argument when the ref does not fit the
// layout (place off the grid, sums not one per view) or tokens is shorter than b.
std::vector<unsigned char> encode_spill_block_head(const state_layout& layout, const spill_block_ref& ref,
                                                   const std::vector<token_id>& tokens,
                                                   const std::vector<const unsigned char*>& rows);
// The whole file, rows[v] holding view v's rows [a, b). Throws as above, and when a row
// vector has another size.
std::vector<unsigned char> encode_spill_block(const state_layout& layout, const spill_block_ref& ref,
                                              const std::vector<token_id>& tokens,
                                              const std::vector<std::vector<unsigned char>>& rows);

// Magic, version, table size, header crc, reserved fields and a sane place (a on the grid,
// a < b <= a + grid): what a scan needs to index a file without reading its rows. Checks
// neither the engine nor the file's length.
spill_decode<spill_format::block_header> read_spill_block_header(const unsigned char* data, std::size_t size);

// A verified block: rows[v] points into the bytes at view v's rows [a, b).
struct spill_block_view {
  std::vector<const unsigned char*> rows;
};
// Everything: the header as read_spill_block_header, the fingerprint, grid, view count and
// sizes against the layout (foreign_engine), the name, a and b against `ref` (wrong_place),
// file_bytes and the length, the stored sums against the ref's, the tokens' crc, every stored
// id against tokens[a, b) (wrong_tokens), every view's crc, then the sums recomputed over the
// rows against the ref's (wrong_sums). With `into` (one destination per view), each view's rows
// are also copied there as they are checked: crc, sums and copy run over one cache-sized piece at
// a time, so the bytes are read from memory once. After a failure the destinations hold part of
// the rows, and the caller must not use them.
spill_decode<spill_block_view> verify_spill_block(const unsigned char* data, std::size_t size,
                                                  const state_layout& layout, const spill_block_ref& ref,
                                                  const std::vector<token_id>& tokens,
                                                  const std::vector<unsigned char*>& into = {});

// ---- Anchor files ---------------------------------------------------------------------------

// An anchor file's head for sections that lie elsewhere (sections[s]: layout section s); the
// file is the head followed by each section in layout order. Throws std::invalid_argument when
// the ref's sums are not one per section.
std::vector<unsigned char> encode_spill_anchor_head(const state_layout& layout, const spill_anchor_ref& ref,
                                                    const std::vector<const unsigned char*>& sections);
std::vector<unsigned char> encode_spill_anchor(const state_layout& layout, const spill_anchor_ref& ref,
                                               const std::vector<std::vector<unsigned char>>& sections);

spill_decode<spill_format::anchor_header> read_spill_anchor_header(const unsigned char* data,
                                                                   std::size_t size);

// A verified anchor: sections[s] points into the bytes at layout section s.
struct spill_anchor_view {
  std::vector<const unsigned char*> sections;
};
// The same checks as verify_spill_block, for at, end and every section (crc, then sums).
spill_decode<spill_anchor_view> verify_spill_anchor(const unsigned char* data, std::size_t size,
                                                    const state_layout& layout, const spill_anchor_ref& ref);

// The engine checks a scan applies to a header it read: fingerprint, grid and the table's
// count and sizes against the layout. An empty string when the file is this engine's.
std::string spill_foreign_block(const spill_format::block_header& h, const state_layout& layout);
std::string spill_foreign_anchor(const spill_format::anchor_header& h, const state_layout& layout);

// ---- Manifests ------------------------------------------------------------------------------

// The manifest's rules (docs/SPILL_FORMAT.md): its id is spill_conversation_id of its key and
// tokens; taint and spans inside the tokens; blocks ascending from 0 to tokens.size() without a
// gap, each a on the grid and 0 < b - a <= grid, one sum per view; grid anchors ascending on
// the grid at or below the taint, then at most one end anchor, which is there exactly when the
// end record is, at its position; one sum per section; every name what spill_block_name /
// spill_anchor_name make of it. An empty string when it keeps them all, else the first broken.
std::string check_spill_manifest(const state_layout& layout, const spill_manifest& m);

// The whole manifest file. Throws std::invalid_argument when check_spill_manifest fails.
std::vector<unsigned char> encode_spill_manifest(const state_layout& layout, const spill_manifest& m);

spill_decode<spill_format::manifest_header> read_spill_manifest_header(const unsigned char* data,
                                                                       std::size_t size);

// Magic, version, header crc, fingerprint and grid (foreign_engine), the id against
// `expected_id`, the length, the payload's crc, its CBOR and every field's type
// (bad_payload), then check_spill_manifest (bad_payload).
spill_decode<spill_manifest> decode_spill_manifest(const unsigned char* data, std::size_t size,
                                                   const state_layout& layout, std::uint64_t expected_id);

}  // namespace anchorage
