#pragma once
// The framed record every durable file of the project's stores is (protocol/record_format.hpp):
// how a writer puts the 40-byte preamble and seals the header, and the one set of rules a reader
// checks it with, in this order, before it reads anything of the kind's own:
//   1. read_preamble: the kind's fixed header is all there (truncated), the magic is the kind
//      asked for (bad_magic, naming the kind found when it is one of the catalog's), the version
//      is one this reader knows (bad_version);
//   2. check_header: header_bytes is what the kind's counts make (bad_header), the bytes hold
//      it (truncated) and its crc32 over [16, header_bytes) holds (bad_header);
//   3. check_engine: the record's fingerprint and grid are this engine's (foreign_engine);
//   4. check_length: file_bytes is what the kind's fields make (bad_header) and the record is
//      exactly that long (truncated when shorter, bad_header when longer).
// Each check returns a record_problem: empty when the rule holds, else the fault and a message
// naming the detail. The kinds' codecs (runtime/disk, runtime/spill) add their own checks
// between and after these and carry their results as record_result.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "protocol/record_format.hpp"

namespace anchorage::store {

using record_format::fault;
using record_format::fault_name;

// What a check found wrong: true when it found something.
struct record_problem {
  record_format::fault f = record_format::fault::none;
  std::string why;
  explicit operator bool() const { return f != record_format::fault::none; }
};

// A decoded value, or the fault that stopped the reader and a message "<fault_name>: <detail>".
template <class T>
struct record_result {
  T value{};
  record_format::fault fault = record_format::fault::none;
  std::string error;

  bool ok() const { return fault == record_format::fault::none; }
  static record_result failure(record_format::fault f, std::string why) {
    record_result r;
    r.fault = f;
    r.error = std::string(record_format::fault_name(f)) + ": " + std::move(why);
    return r;
  }
  static record_result failure(record_problem p) { return failure(p.f, std::move(p.why)); }
  // Another result's failure passed on, fault and message unchanged.
  template <class U>
  static record_result from(const record_result<U>& u) {
    record_result r;
    r.fault = u.fault;
    r.error = u.error;
    return r;
  }
};

// ---- Writing ----------------------------------------------------------------------------------
// The preamble's fields at their offsets in `b` (at least preamble_bytes long), the header crc
// left 0 for seal_header.
void put_preamble(std::vector<unsigned char>& b, std::uint64_t magic, std::uint32_t version,
                  std::size_t header_bytes, std::uint32_t grid, std::uint64_t fingerprint,
                  std::uint64_t file_bytes);
// The header crc over [header_crc_from, header_bytes), once every header field is in place.
void seal_header(std::vector<unsigned char>& b, std::size_t header_bytes);

// ---- Reading ----------------------------------------------------------------------------------
// Rule 1: `size` bytes hold the kind's `fixed` header, the magic is `magic`, the version one of
// `known`; fills `p` when they hold.
record_problem read_preamble(const unsigned char* d, std::size_t size, std::size_t fixed, std::uint64_t magic,
                             std::initializer_list<std::uint32_t> known, record_format::preamble& p);
// Rule 2: header_bytes is `expect_hb`, the bytes hold it and its crc holds.
record_problem check_header(const unsigned char* d, std::size_t size, const record_format::preamble& p,
                            std::uint64_t expect_hb);
// Rule 3: the record belongs to the engine of `fingerprint` and `grid`.
record_problem check_engine(const record_format::preamble& p, std::uint64_t fingerprint, std::uint32_t grid);
// Rule 4: file_bytes is `expect`, and `size` is exactly that.
record_problem check_length(std::uint64_t file_bytes, std::uint64_t expect, std::size_t size);

}  // namespace anchorage::store
