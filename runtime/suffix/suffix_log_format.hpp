#pragma once
// The suffix store's file format (docs/SUFFIX_STORE.md), next to the constants that define it.
// All integers little-endian.
//
//   header, 32 bytes:
//     [0, 8)    magic "ANCSUFX\0"
//     [8, 12)   version (1)
//     [12, 16)  header bytes (32)
//     [16, 24)  the tokenizer's digest (the caller's 64-bit value; also the file's name)
//     [24, 28)  reserved, 0
//     [28, 32)  crc32 of bytes [0, 28)
//   then records, each 12 + 4 * count bytes:
//     [0, 4)    count: ids in the record, >= 1
//     [4, 8)    flags: bit 0 set when the record continues the previous record's segment
//     [8, 8 + 4 * count)  the ids, each a u32 below 2^31 (text ids only: never an image's rows)
//     then      crc32 of everything before it in the record
//
// A segment is a run of ids the engine read or wrote in that order: one record, or a record and
// the records that continue it. Matches never cross a segment's end.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage::suffix_log {

inline constexpr unsigned char magic[8] = {'A', 'N', 'C', 'S', 'U', 'F', 'X', 0};
inline constexpr std::uint32_t version = 1;
inline constexpr std::size_t header_bytes = 32;
inline constexpr std::size_t record_overhead = 12;  // count, flags, crc
inline constexpr std::uint32_t flag_continues = 1;

// The bytes a record of `ids` ids takes.
inline constexpr std::uint64_t record_bytes(std::uint64_t ids) { return record_overhead + 4 * ids; }

// The log's name for a tokenizer: "suffix-<digest, 16 hex>.log".
std::string file_name(std::uint64_t tokenizer_digest);

std::vector<unsigned char> encode_header(std::uint64_t tokenizer_digest);

// Appends one record to `out`.
void encode_record(std::vector<unsigned char>& out, const token_id* ids, std::size_t count, bool continues);

// A log's bytes read back.
struct parsed_log {
  enum class header_state {
    ok,
    short_file,
    bad_magic,
    bad_version,
    bad_crc,
    foreign
  } header = header_state::ok;
  std::uint64_t digest = 0;             // the header's, when it parsed
  std::vector<token_id> ids;            // every id of every whole record, in order
  std::vector<std::size_t> seg_starts;  // where each segment starts in ids
  std::uint64_t whole_bytes = 0;        // header + whole records: where a torn tail is cut
  std::size_t records = 0;
  bool torn = false;  // bytes after the last whole record (a partial record or a bad crc)
};

// Parses a log's bytes against the digest its name says. A header that fails any check is
// reported and nothing else is read; records are read up to the first one that is partial, has
// a count of 0, fails its crc or holds an id >= 2^31 (negative as an int32: an image row's key,
// which suffix_store::add never writes and the index cannot hold), and everything from there on
// is the torn tail.
parsed_log parse(const unsigned char* bytes, std::size_t n, std::uint64_t expected_digest);

const char* describe(parsed_log::header_state s);

}  // namespace anchorage::suffix_log
