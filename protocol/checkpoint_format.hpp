#pragma once
// The disk tier's third file format: the generation checkpoint, a self-contained durable copy of
// an in-flight generation's whole state (every section, every view's rows, the prompt and the
// output ids), so a generation cut by a restart resumes with the same tokens.
// docs/DISK_FORMAT.md ("Generation checkpoint files") describes it field by field; the constants
// below are the definition. Conventions, table entries and faults are the chunk and anchor
// files' (protocol/disk_format.hpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/disk_format.hpp"

namespace anchorage::disk_format {

inline constexpr std::uint64_t checkpoint_magic = record_format::checkpoint_magic;
// Checkpoint files have their own version sequence: 1 is the only one.
inline constexpr std::uint32_t checkpoint_version = 1;

// Bits of the flags field; every other bit is zero.
inline constexpr std::uint32_t checkpoint_flag_seed_explicit = 1u;  // the client sent the seed
inline constexpr std::uint32_t checkpoint_known_flags = checkpoint_flag_seed_explicit;

// ---- Generation checkpoint file -------------------------------------------------------------
// [0, checkpoint_fixed_bytes)         the fixed header (offsets below)
// then section_count entries          entry_bytes each: one per section
// then view_count entries             entry_bytes each: one per view (size = bytes_per_token,
//                                     crc = crc32 of the view's rows block)
// then the tokens block               token_count int32 ids: the prompt, then every output id
// then one block per section          its bytes, whole: the state at position rows
// then one block per view             rows * bytes_per_token bytes: rows [0, rows)
namespace checkpoint_offset {
inline constexpr std::size_t magic = 0;           // u64 checkpoint_magic
inline constexpr std::size_t version = 8;         // u32 1
inline constexpr std::size_t header_crc = 12;     // u32 crc32 of bytes [16, header_bytes)
inline constexpr std::size_t header_bytes = 16;   // u32 checkpoint_fixed_bytes
                                                  //     + (section_count + view_count) * entry_bytes
inline constexpr std::size_t grid = 20;           // u32 the engine's grid
inline constexpr std::size_t fingerprint = 24;    // u64 the engine's layout fingerprint
inline constexpr std::size_t file_bytes = 32;     // u64 the whole file's length
inline constexpr std::size_t key_hash = 40;       // u64 XXH3-64 of the request's key string
inline constexpr std::size_t seed = 48;           // u64 the sampler's seed
inline constexpr std::size_t prompt_tokens = 56;  // u64 the prompt's length, at least 1
inline constexpr std::size_t token_count = 64;    // u64 ids stored: prompt + every output id,
                                                  //     the last one the pending token
inline constexpr std::size_t rows = 72;           // u64 token_count - 1: the state's length
inline constexpr std::size_t flags = 80;          // u32 checkpoint_flag_* bits
inline constexpr std::size_t section_count = 84;  // u32
inline constexpr std::size_t view_count = 88;     // u32
inline constexpr std::size_t tokens_crc = 92;     // u32 crc32 of the tokens block
inline constexpr std::size_t reserved = 96;       // u64 zero
}  // namespace checkpoint_offset
inline constexpr std::size_t checkpoint_fixed_bytes = 104;
static_assert(checkpoint_offset::file_bytes == record_format::offset::file_bytes &&
                  checkpoint_offset::key_hash == record_format::preamble_bytes,
              "a checkpoint starts with the record's preamble");

// ---- Parsed header (what a scan reads without the blocks) ------------------------------------
struct checkpoint_header : record_format::preamble {
  std::uint64_t key_hash = 0;
  std::uint64_t seed = 0;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t token_count = 0;
  std::uint64_t rows = 0;  // token_count - 1
  std::uint32_t flags = 0;
  std::uint32_t tokens_crc = 0;
  std::vector<entry> sections;
  std::vector<entry> views;  // size: bytes_per_token; crc: the rows block's
};

}  // namespace anchorage::disk_format
