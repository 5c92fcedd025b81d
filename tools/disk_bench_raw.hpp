#pragma once
// The disk bench's baseline: plain O_DIRECT files written with pwrite and read with pread in
// 4 MiB blocks, and the aligned buffers they need (tools/disk_bench.cpp).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

namespace anchorage::raw_io {

constexpr std::size_t raw_block = 4u << 20;
constexpr std::size_t align = 4096;

inline std::size_t round_up(std::size_t n) { return (n + align - 1) / align * align; }

struct aligned_free {
  void operator()(void* p) const { std::free(p); }
};
using aligned_bytes = std::unique_ptr<unsigned char, aligned_free>;

// nullptr when the allocation failed.
aligned_bytes aligned_alloc_bytes(std::size_t n);
void fill_random(unsigned char* p, std::size_t n, std::uint64_t x);
// One file written sequentially under O_DIRECT (the tail padded, then ftruncate'd), fsync'd.
// `src` is aligned and at least round_up(n) bytes long.
bool raw_write(const std::string& path, const unsigned char* src, std::size_t n);
bool raw_read(const std::string& path, unsigned char* dst, std::size_t n);
// Whether the file system under `dir` takes O_DIRECT: an open and one aligned write and read.
bool o_direct_accepted(const std::string& dir);

}  // namespace anchorage::raw_io
