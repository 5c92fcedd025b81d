#pragma once
// The session spill's three file formats: block files (rows [a, b) of every view and their token
// ids), anchor files (every section at one position) and manifests (one conversation: its
// tokens, spans, end record and the names of its blocks and anchors). docs/SPILL_FORMAT.md
// describes them field by field; the constants below are the definition.
//
// Every integer is little-endian and fixed-width, whatever the host. The first 40 bytes of
// every file share one layout (magic, version, header crc, header bytes, grid, fingerprint,
// file bytes), as the disk tier's files do (protocol/disk_format.hpp). Tables and blocks follow
// the fixed header back to back, with no padding. The header crc covers [16, header_bytes).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/record_format.hpp"

namespace anchorage::spill_format {

inline constexpr std::uint64_t block_magic = record_format::spill_block_magic;
inline constexpr std::uint64_t anchor_magic = record_format::spill_anchor_magic;
inline constexpr std::uint64_t manifest_magic = record_format::spill_manifest_magic;

// The version every file is written with, and the only one read.
inline constexpr std::uint32_t version = 1;

// ---- The fields every file shares: the framed record's preamble (protocol/record_format.hpp) ----
namespace common_offset = record_format::offset;
inline constexpr std::size_t header_crc_from = record_format::header_crc_from;
inline constexpr std::size_t common_bytes = record_format::preamble_bytes;

// ---- Block file: b-<name, 16 hex>.blk -----------------------------------------------------------
// [0, block_fixed_bytes)   the fixed header (offsets below)
// then view_count entries  sum_entry_bytes each, one per view in layout order
// then the tokens block    (b - a) int32 ids, positions [a, b)
// then one block per view  (b - a) * bytes_per_token bytes: rows [a, b), in layout order
namespace block_offset {
inline constexpr std::size_t name = 40;        // u64 the block's name (the file's)
inline constexpr std::size_t a = 48;           // u64 first row, a multiple of the grid
inline constexpr std::size_t b = 56;           // u64 end row, a < b <= a + grid
inline constexpr std::size_t view_count = 64;  // u32
inline constexpr std::size_t tokens_crc = 68;  // u32 crc32 of the tokens block
inline constexpr std::size_t reserved = 72;    // u64 zero
}  // namespace block_offset
inline constexpr std::size_t block_fixed_bytes = 80;
static_assert(block_offset::name == common_bytes, "a block's own fields follow the common ones");
static_assert(block_offset::reserved + 8 == block_fixed_bytes,
              "the block header ends with its reserved field");

// ---- Anchor file: s-<name, 16 hex>.sec ------------------------------------------------------------
// [0, anchor_fixed_bytes)    the fixed header (offsets below)
// then section_count entries sum_entry_bytes each, one per section in layout order
// then one block per section its bytes, whole, in layout order
namespace anchor_offset {
inline constexpr std::size_t name = 40;           // u64 the anchor's name (the file's)
inline constexpr std::size_t at = 48;             // u64 the position the sections are the state at
inline constexpr std::size_t end = 56;            // u32 1: the end anchor, 0: a grid anchor
inline constexpr std::size_t section_count = 60;  // u32
inline constexpr std::size_t reserved = 64;       // u64 zero
}  // namespace anchor_offset
inline constexpr std::size_t anchor_fixed_bytes = 72;
static_assert(anchor_offset::name == common_bytes, "an anchor's own fields follow the common ones");
static_assert(anchor_offset::reserved + 8 == anchor_fixed_bytes,
              "the anchor header ends with its reserved field");

// ---- Table entries (block views and anchor sections alike) --------------------------------------
//   [0, 8)   u64 size: bytes_per_token for a view, the section's bytes for a section
//   [8, 16)  u64 s0 of kernels::block_checksum over the block
//   [16, 24) u64 s1
//   [24, 28) u32 crc32 of the block
//   [28, 32) u32 zero
namespace entry_offset {
inline constexpr std::size_t size = 0;
inline constexpr std::size_t s0 = 8;
inline constexpr std::size_t s1 = 16;
inline constexpr std::size_t crc = 24;
inline constexpr std::size_t reserved = 28;
}  // namespace entry_offset
inline constexpr std::size_t sum_entry_bytes = 32;
static_assert(entry_offset::reserved + 4 == sum_entry_bytes, "an entry ends with its reserved field");
inline constexpr std::size_t token_bytes = 4;  // int32 LE

// ---- Manifest: m-<id, 16 hex>.man -----------------------------------------------------------------
// [0, manifest_fixed_bytes)  the fixed header (offsets below); header_bytes is manifest_fixed_bytes
// then the payload           payload_bytes of CBOR (RFC 8949), the manifest's fields (SPILL_FORMAT.md)
namespace manifest_offset {
inline constexpr std::size_t id = 40;             // u64 the conversation's id (the file's)
inline constexpr std::size_t payload_bytes = 48;  // u64 the CBOR payload's length
inline constexpr std::size_t payload_crc = 56;    // u32 crc32 of the payload
inline constexpr std::size_t reserved = 60;       // u32 zero
}  // namespace manifest_offset
inline constexpr std::size_t manifest_fixed_bytes = 64;
static_assert(manifest_offset::id == common_bytes, "a manifest's own fields follow the common ones");
static_assert(manifest_offset::reserved + 4 == manifest_fixed_bytes,
              "the manifest header ends with its reserved field");

// The largest manifest a reader accepts (a scan reads every manifest whole): 64 MiB holds the
// ids of about 16 million tokens.
inline constexpr std::uint64_t max_manifest_bytes = 64ULL << 20;
// The largest table a reader accepts before it reads one: more views or sections is damage.
inline constexpr std::uint32_t max_table_entries = 4096;

// ---- File names ---------------------------------------------------------------------------------
inline constexpr const char* block_prefix = "b-";
inline constexpr const char* block_suffix = ".blk";
inline constexpr const char* anchor_prefix = "s-";
inline constexpr const char* anchor_suffix = ".sec";
inline constexpr const char* manifest_prefix = "m-";
inline constexpr const char* manifest_suffix = ".man";
// The store's folder inside the tier's <dir>/<fingerprint hex>/.
inline constexpr const char* folder_name = "spill";

// What a reader found wrong: the one set every store's reader uses.
using fault = record_format::fault;
using record_format::fault_name;

// ---- Parsed headers (what a scan reads without the blocks) ---------------------------------------
struct sum_entry {
  std::uint64_t size = 0;
  std::uint64_t s0 = 0, s1 = 0;
  std::uint32_t crc = 0;
};

using common_header = record_format::preamble;

struct block_header : common_header {
  std::uint64_t name = 0;
  std::uint64_t a = 0, b = 0;
  std::uint32_t tokens_crc = 0;
  std::vector<sum_entry> views;
};

struct anchor_header : common_header {
  std::uint64_t name = 0;
  std::uint64_t at = 0;
  bool end = false;
  std::vector<sum_entry> sections;
};

struct manifest_header : common_header {
  std::uint64_t id = 0;
  std::uint64_t payload_bytes = 0;
  std::uint32_t payload_crc = 0;
};

}  // namespace anchorage::spill_format
