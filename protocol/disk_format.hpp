#pragma once
// The disk tier's two file formats: chunk files (rows of every view between two grid lines, and
// their token ids) and anchor files (every section at one line). docs/DISK_FORMAT.md describes
// them field by field; the constants below are the definition.
//
// Every integer is little-endian and fixed-width, whatever the host. Blocks follow the header
// back to back, in table order, with no padding. The rows and sections themselves are the
// engine's bytes as its adapter copies them; the fingerprint (which covers the engine's
// arithmetic) decides whether they mean the same thing to the reader.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/record_format.hpp"

namespace anchorage::disk_format {

// Every file is a framed record (protocol/record_format.hpp): the first 40 bytes are its
// preamble, checked by runtime/store/record.hpp's rules; the offsets below repeat them.
inline constexpr std::uint64_t chunk_magic = record_format::chunk_magic;
inline constexpr std::uint64_t anchor_magic = record_format::anchor_magic;

// The version a file on a grid line is written with. Chunk files exist in versions 2 and 4.
inline constexpr std::uint32_t version = 2;
// The version a file at a line off the grid is written with: the line right after an image
// (docs/DISK_FORMAT.md, "Version 4"). Its chunk holds the rows from the grid line below to the
// line, fewer than the grid; its anchor's chain ends in that chunk's hash. 4 and not 3: one
// flipped bit of 2 is never 4 (nor 1), so a damaged version still reads as a bad version.
inline constexpr std::uint32_t off_grid_version = 4;
// Anchor files of version 1: two unnamed sections, read as these two names in this order.
inline constexpr std::uint32_t anchor_version_1 = 1;
inline constexpr const char* version_1_section_names[2] = {"gdn.S", "gdn.conv"};

// The version of a file at `line`.
inline constexpr std::uint32_t version_of_line(std::uint64_t line, std::uint64_t grid) {
  return line % grid != 0 ? off_grid_version : version;
}
// The rows a chunk file at `line` holds: [line - chunk_rows, line), the grid on a grid line,
// what lies above the grid line below it otherwise. grid > 0.
inline constexpr std::uint64_t chunk_rows(std::uint64_t line, std::uint64_t grid) {
  return line % grid != 0 ? line % grid : grid;
}
// The chunk files an anchor at `line` stands on: one per grid line up to it, and the line's own
// when it is off the grid. grid > 0.
inline constexpr std::uint64_t chain_length(std::uint64_t line, std::uint64_t grid) {
  return (line + grid - 1) / grid;
}

// ---- Chunk file -----------------------------------------------------------------------------
// [0, chunk_fixed_bytes)              the fixed header (offsets below)
// then view_count entries             entry_bytes each: one per view
// then the tokens block               r int32 token ids, positions [line - r, line)
// then one block per view             r * bytes_per_token bytes: rows [line - r, line)
// where r = chunk_rows(line, grid): the grid, or (version 4) line mod grid.
namespace chunk_offset {
inline constexpr std::size_t magic = 0;          // u64 chunk_magic
inline constexpr std::size_t version = 8;        // u32 version_of_line(line, grid): 2 or 4
inline constexpr std::size_t header_crc = 12;    // u32 crc32 of bytes [16, header_bytes)
inline constexpr std::size_t header_bytes = 16;  // u32 chunk_fixed_bytes + view_count * entry_bytes
inline constexpr std::size_t grid = 20;          // u32 the engine's grid
inline constexpr std::size_t fingerprint = 24;   // u64 the engine's layout fingerprint
inline constexpr std::size_t file_bytes = 32;    // u64 the whole file's length
inline constexpr std::size_t line = 40;          // u64 b: the chunk holds rows [b - r, b)
inline constexpr std::size_t prefix_hash = 48;   // u64 XXH3-64 of the int32 LE ids [0, b)
inline constexpr std::size_t parent_hash = 56;   // u64 XXH3-64 of the ids [0, b - r)
inline constexpr std::size_t view_count = 64;    // u32
inline constexpr std::size_t tokens_crc = 68;    // u32 crc32 of the tokens block
inline constexpr std::size_t reserved = 72;      // u64 zero
}  // namespace chunk_offset
inline constexpr std::size_t chunk_fixed_bytes = 80;

// ---- Anchor file ----------------------------------------------------------------------------
// [0, anchor_fixed_bytes)             the fixed header (offsets below)
// then chunk_count u64 hashes         the prefix hash at lines grid, 2 grid, ..., and at line
//                                     (the last grid line, or the line off the grid above it)
// then section_count entries          entry_bytes each (format 2), entry_v1_bytes (format 1)
// then one block per section          its bytes, whole
namespace anchor_offset {
inline constexpr std::size_t magic = 0;           // u64 anchor_magic
inline constexpr std::size_t version = 8;         // u32 version_of_line(line, grid) (or 1)
inline constexpr std::size_t header_crc = 12;     // u32 crc32 of bytes [16, header_bytes)
inline constexpr std::size_t header_bytes = 16;   // u32 anchor_fixed_bytes + 8 chunk_count
                                                  //     + section_count * entry size
inline constexpr std::size_t grid = 20;           // u32 the engine's grid
inline constexpr std::size_t fingerprint = 24;    // u64 the engine's layout fingerprint
inline constexpr std::size_t file_bytes = 32;     // u64 the whole file's length
inline constexpr std::size_t line = 40;           // u64 b: the sections are the state at b
inline constexpr std::size_t chunk_count = 48;    // u32 chain_length(b, grid)
inline constexpr std::size_t section_count = 52;  // u32 (2 in format 1)
inline constexpr std::size_t reserved = 56;       // u64 zero
}  // namespace anchor_offset
inline constexpr std::size_t anchor_fixed_bytes = 64;
static_assert(chunk_offset::file_bytes == record_format::offset::file_bytes &&
                  anchor_offset::file_bytes == record_format::offset::file_bytes &&
                  chunk_offset::line == record_format::preamble_bytes &&
                  anchor_offset::line == record_format::preamble_bytes,
              "chunks and anchors start with the record's preamble");

// ---- Table entries --------------------------------------------------------------------------
// Formats 2 and 4, chunk views and anchor sections alike:
//   [0, 48)  name, UTF-8, NUL-padded (a name of 48 bytes has no NUL)
//   [48, 56) u64 size: bytes_per_token for a view, the section's bytes for a section
//   [56, 60) u32 crc32 of the block
//   [60, 64) u32 zero
// Format 1 anchor sections: [0, 8) u64 bytes, [8, 12) u32 crc32, [12, 16) u32 zero.
inline constexpr std::size_t entry_bytes = 64;
inline constexpr std::size_t entry_name_bytes = 48;
inline constexpr std::size_t entry_size_offset = 48;
inline constexpr std::size_t entry_crc_offset = 56;
inline constexpr std::size_t entry_v1_bytes = 16;
inline constexpr std::size_t token_bytes = 4;  // int32 LE

// What a reader found wrong: the one set every store's reader uses.
using fault = record_format::fault;
using record_format::fault_name;

// ---- Parsed headers (what a scan reads without the blocks) -----------------------------------
struct entry {
  std::string name;        // format 1: the name it is read as
  std::uint64_t size = 0;  // bytes_per_token (view) or bytes (section)
  std::uint32_t crc = 0;
};

struct chunk_header : record_format::preamble {
  std::uint64_t line = 0;
  std::uint64_t prefix_hash = 0;
  std::uint64_t parent_hash = 0;
  std::uint32_t tokens_crc = 0;
  std::vector<entry> views;
};

struct anchor_header : record_format::preamble {
  std::uint64_t line = 0;
  std::vector<std::uint64_t> chunk_hashes;  // the last one is the anchor's key
  std::vector<entry> sections;
};

}  // namespace anchorage::disk_format
