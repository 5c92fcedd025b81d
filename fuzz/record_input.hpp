#pragma once
// What the fuzz targets of the framed records (runtime/store/record.hpp: the disk tier's and the
// spill's files) share: the small layout they decode against, the switch that reseals a mutated
// header's crc so that mutations reach the checks behind it, and the writing of seed files.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.hpp"
#include "protocol/record_format.hpp"
#include "runtime/core/little_endian.hpp"
#include "runtime/engine/state_layout.hpp"
#include "runtime/store/record.hpp"

namespace anchorage::fuzz {

// Two views and two sections, grid 4 (every size a multiple of 8, as the engine's are).
inline state_layout record_layout() {
  state_layout l;
  l.grid = 4;
  l.fingerprint = 0x46555a5a4c41594fULL;
  l.views = {{"attn.k", 16, 64}, {"attn.v", 24, 64}};
  l.sections = {{"gdn.S", 64}, {"gdn.conv", 48}};
  return l;
}

// The header crc recomputed over [16, header_bytes) as the preamble gives header_bytes, when the
// bytes hold that much.
inline void reseal_header(std::vector<unsigned char>& b) {
  if (b.size() < record_format::preamble_bytes) return;
  const std::size_t hb = little_endian::get_u32(b.data() + record_format::offset::header_bytes);
  if (hb < record_format::preamble_bytes || hb > b.size()) return;
  store::seal_header(b, hb);
}

// ANCHORAGE_FUZZ_SEEDS=DIR makes a target write its seed files there and exit (see
// docs/FUZZING.md): the seeds are encoded by the project's own writers.
inline const char* seed_dir() { return std::getenv("ANCHORAGE_FUZZ_SEEDS"); }

inline void write_seed(const std::string& name, const std::vector<unsigned char>& switches,
                       const std::vector<unsigned char>& bytes) {
  std::ofstream out(std::string(seed_dir()) + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(switches.data()), static_cast<std::streamsize>(switches.size()));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  check(out.good(), "writing a seed failed");
}

}  // namespace anchorage::fuzz
