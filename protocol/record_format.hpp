#pragma once
// What every durable record of the project's stores shares: the disk tier's chunks, anchors and
// generation checkpoints (protocol/disk_format.hpp, protocol/checkpoint_format.hpp) and the
// session spill's blocks, anchors and manifests (protocol/spill_format.hpp). docs/DISK_FORMAT.md
// and docs/SPILL_FORMAT.md describe each kind field by field; this header is the definition of
// the part they have in common.
//
// A record starts with a 40-byte preamble at fixed offsets: its kind's magic, the kind's own
// version, a crc32 of the header from byte 16 on, the header's length, and the engine it belongs
// to (grid and layout fingerprint) and the whole record's length. Every integer is little-endian
// and fixed-width. The kind's own fields follow at byte 40; a reader checks the preamble with one
// set of rules (runtime/store/record.hpp) before it reads anything of the kind's.
#include <cstddef>
#include <cstdint>

namespace anchorage {

// An 8-byte magic as a little-endian u64: the record starts with these ASCII bytes.
constexpr std::uint64_t file_magic_of(const char (&s)[9]) {
  std::uint64_t m = 0;
  for (int i = 7; i >= 0; --i) m = (m << 8) | static_cast<unsigned char>(s[i]);
  return m;
}

namespace record_format {

// ---- The catalog of record kinds: every magic the project writes ------------------------------
inline constexpr std::uint64_t chunk_magic = file_magic_of("ANCR.CHK");           // disk: rows between lines
inline constexpr std::uint64_t anchor_magic = file_magic_of("ANCR.ANC");          // disk: sections at a line
inline constexpr std::uint64_t checkpoint_magic = file_magic_of("ANCR.GEN");      // disk: a generation
inline constexpr std::uint64_t spill_block_magic = file_magic_of("ANCR.SBK");     // spill: rows [a, b)
inline constexpr std::uint64_t spill_anchor_magic = file_magic_of("ANCR.SAN");    // spill: sections at a
inline constexpr std::uint64_t spill_manifest_magic = file_magic_of("ANCR.SMF");  // spill: a conversation

// The kind a magic names, with its article ("a chunk", "a spill manifest"), or nullptr for a
// magic that is none of the project's.
constexpr const char* kind_name(std::uint64_t magic) {
  if (magic == chunk_magic) return "a chunk";
  if (magic == anchor_magic) return "an anchor";
  if (magic == checkpoint_magic) return "a checkpoint";
  if (magic == spill_block_magic) return "a spill block";
  if (magic == spill_anchor_magic) return "a spill anchor";
  if (magic == spill_manifest_magic) return "a spill manifest";
  return nullptr;
}

// ---- The preamble -----------------------------------------------------------------------------
namespace offset {
inline constexpr std::size_t magic = 0;          // u64 the kind's magic
inline constexpr std::size_t version = 8;        // u32 the kind's version
inline constexpr std::size_t header_crc = 12;    // u32 crc32 of bytes [16, header_bytes)
inline constexpr std::size_t header_bytes = 16;  // u32 the fixed header plus its tables
inline constexpr std::size_t grid = 20;          // u32 the engine's grid
inline constexpr std::size_t fingerprint = 24;   // u64 the engine's layout fingerprint
inline constexpr std::size_t file_bytes = 32;    // u64 the whole record's length
}  // namespace offset
// The header crc covers [header_crc_from, header_bytes).
inline constexpr std::size_t header_crc_from = 16;
// The kind's own fields start here.
inline constexpr std::size_t preamble_bytes = 40;

// The preamble as read (the magic and the header crc are checked, not kept).
struct preamble {
  std::uint32_t version = 0;
  std::uint32_t header_bytes = 0;
  std::uint32_t grid = 0;
  std::uint64_t fingerprint = 0;
  std::uint64_t file_bytes = 0;
};

// ---- What a reader found wrong: one set for every kind -----------------------------------------
// Each decode error carries one, with a message naming the detail. The first six are the
// preamble's; the rest belong to the kinds that use them.
enum class fault : std::uint8_t {
  none = 0,
  truncated,        // shorter than its header says (or than a header)
  bad_magic,        // not the kind asked for
  bad_version,      // a version this reader does not know
  bad_header,       // header crc fails, or fields contradict each other or the record's length
  foreign_engine,   // another fingerprint or grid (or views or sections): sweep, never use
  wrong_line,       // disk: another line than the one asked for
  wrong_prefix,     // disk: a token id or prefix hash differs from the prompt's
  wrong_chunks,     // disk: an anchor's chunk hashes differ from the expected chain
  layout_mismatch,  // disk: a view or section missing, extra, renamed or of another size
  bad_crc,          // a block, section, the tokens or the payload fails its crc32
  wrong_place,      // spill: another name, id, a, b, at or end than the one asked for
  wrong_tokens,     // spill: a stored token id differs from the manifest's
  wrong_sums,       // spill: the block sums recomputed over the bytes differ from the manifest's
  bad_payload,      // spill: the manifest's CBOR does not parse or breaks the manifest's rules
};

constexpr const char* fault_name(fault f) {
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
    case fault::wrong_place:
      return "wrong_place";
    case fault::wrong_tokens:
      return "wrong_tokens";
    case fault::wrong_sums:
      return "wrong_sums";
    case fault::bad_payload:
      return "bad_payload";
  }
  return "unknown";
}

}  // namespace record_format
}  // namespace anchorage
