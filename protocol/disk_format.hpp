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

#include "protocol/file_magic.hpp"

namespace anchorage::disk_format {

constexpr std::uint64_t magic_of(const char (&s)[9]) { return file_magic_of(s); }

inline constexpr std::uint64_t chunk_magic = magic_of("ANCR.CHK");
inline constexpr std::uint64_t anchor_magic = magic_of("ANCR.ANC");

// The version every file is written with. Chunk files exist only in version 2.
inline constexpr std::uint32_t version = 2;
// Anchor files of version 1: two unnamed sections, read as these two names in this order.
inline constexpr std::uint32_t anchor_version_1 = 1;
inline constexpr const char* version_1_section_names[2] = {"gdn.S", "gdn.conv"};

// ---- Chunk file -----------------------------------------------------------------------------
// [0, chunk_fixed_bytes)              the fixed header (offsets below)
// then view_count entries             entry_bytes each: one per view
// then the tokens block               grid int32 token ids, positions [line - grid, line)
// then one block per view             grid * bytes_per_token bytes: rows [line - grid, line)
namespace chunk_offset {
inline constexpr std::size_t magic = 0;          // u64 chunk_magic
inline constexpr std::size_t version = 8;        // u32 2
inline constexpr std::size_t header_crc = 12;    // u32 crc32 of bytes [16, header_bytes)
inline constexpr std::size_t header_bytes = 16;  // u32 chunk_fixed_bytes + view_count * entry_bytes
inline constexpr std::size_t grid = 20;          // u32 the engine's grid
inline constexpr std::size_t fingerprint = 24;   // u64 the engine's layout fingerprint
inline constexpr std::size_t file_bytes = 32;    // u64 the whole file's length
inline constexpr std::size_t line = 40;          // u64 b: the chunk holds rows [b - grid, b)
inline constexpr std::size_t prefix_hash = 48;   // u64 XXH3-64 of the int32 LE ids [0, b)
inline constexpr std::size_t parent_hash = 56;   // u64 XXH3-64 of the ids [0, b - grid)
inline constexpr std::size_t view_count = 64;    // u32
inline constexpr std::size_t tokens_crc = 68;    // u32 crc32 of the tokens block
inline constexpr std::size_t reserved = 72;      // u64 zero
}  // namespace chunk_offset
inline constexpr std::size_t chunk_fixed_bytes = 80;

// ---- Anchor file ----------------------------------------------------------------------------
// [0, anchor_fixed_bytes)             the fixed header (offsets below)
// then chunk_count u64 hashes         the prefix hash at lines grid, 2 grid, ..., line
// then section_count entries          entry_bytes each (format 2), entry_v1_bytes (format 1)
// then one block per section          its bytes, whole
namespace anchor_offset {
inline constexpr std::size_t magic = 0;           // u64 anchor_magic
inline constexpr std::size_t version = 8;         // u32 2 (or 1)
inline constexpr std::size_t header_crc = 12;     // u32 crc32 of bytes [16, header_bytes)
inline constexpr std::size_t header_bytes = 16;   // u32 anchor_fixed_bytes + 8 chunk_count
                                                  //     + section_count * entry size
inline constexpr std::size_t grid = 20;           // u32 the engine's grid
inline constexpr std::size_t fingerprint = 24;    // u64 the engine's layout fingerprint
inline constexpr std::size_t file_bytes = 32;     // u64 the whole file's length
inline constexpr std::size_t line = 40;           // u64 b: the sections are the state at b
inline constexpr std::size_t chunk_count = 48;    // u32 b / grid
inline constexpr std::size_t section_count = 52;  // u32 (2 in format 1)
inline constexpr std::size_t reserved = 56;       // u64 zero
}  // namespace anchor_offset
inline constexpr std::size_t anchor_fixed_bytes = 64;

// ---- Table entries --------------------------------------------------------------------------
// Format 2, chunk views and anchor sections alike:
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

// What a reader found wrong. Each decode error carries one, with a message naming the detail.
enum class fault : std::uint8_t {
  none = 0,
  truncated,        // shorter than its header says (or than a header)
  bad_magic,        // not a chunk / anchor file
  bad_version,      // a version this reader does not know
  bad_header,       // header crc fails, or fields contradict each other
  foreign_engine,   // another fingerprint or grid: sweep, never use
  wrong_line,       // another line than the one asked for
  wrong_prefix,     // a token id or prefix hash differs from the prompt's
  wrong_chunks,     // an anchor's chunk hashes differ from the expected chain
  layout_mismatch,  // a view or section missing, extra, renamed or of another size
  bad_crc,          // a view or section block fails its crc32
};

inline const char* fault_name(fault f) {
  switch (f) {
    case fault::none:
      return "none";
    case fault::truncated:
      return "truncated";
    case fault::bad_magic:
      return "bad_magic";
    case fault::bad_version:
      return "bad_version";
    case fault::bad_header:
      return "bad_header";
    case fault::foreign_engine:
      return "foreign_engine";
    case fault::wrong_line:
      return "wrong_line";
    case fault::wrong_prefix:
      return "wrong_prefix";
    case fault::wrong_chunks:
      return "wrong_chunks";
    case fault::layout_mismatch:
      return "layout_mismatch";
    case fault::bad_crc:
      return "bad_crc";
  }
  return "unknown";
}

// ---- Parsed headers (what a scan reads without the blocks) -----------------------------------
struct entry {
  std::string name;        // format 1: the name it is read as
  std::uint64_t size = 0;  // bytes_per_token (view) or bytes (section)
  std::uint32_t crc = 0;
};

struct chunk_header {
  std::uint32_t version = 0;
  std::uint32_t header_bytes = 0;
  std::uint32_t grid = 0;
  std::uint64_t fingerprint = 0;
  std::uint64_t file_bytes = 0;
  std::uint64_t line = 0;
  std::uint64_t prefix_hash = 0;
  std::uint64_t parent_hash = 0;
  std::uint32_t tokens_crc = 0;
  std::vector<entry> views;
};

struct anchor_header {
  std::uint32_t version = 0;
  std::uint32_t header_bytes = 0;
  std::uint32_t grid = 0;
  std::uint64_t fingerprint = 0;
  std::uint64_t file_bytes = 0;
  std::uint64_t line = 0;
  std::vector<std::uint64_t> chunk_hashes;  // the last one is the anchor's key
  std::vector<entry> sections;
};

}  // namespace anchorage::disk_format
