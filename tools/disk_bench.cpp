// Write and read bandwidth of files through uring_env (write_atomic, then read back) against a
// plain O_DIRECT sequential write and read of the same bytes with pwrite/pread in 4 MiB blocks,
// in the same run, printed as one JSON object with the ratios (the disk tier's goal is >= 0.9).
// The two are interleaved file by file, alternating which goes first, so drift on a shared
// machine falls on both. Both sides fsync each file; write_atomic also renames and syncs the
// directory. Every file read back is compared with what was written (outside the timings).
// Usage: anchorage-bench-disk [--dir /tmp/anchorage-bench-disk] [--size-mb 104] [--files 4]
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/uring_env.hpp"

using namespace anchorage;

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::size_t raw_block = 4u << 20;
constexpr std::size_t align = 4096;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct aligned_free {
  void operator()(void* p) const { std::free(p); }
};
using aligned_bytes = std::unique_ptr<unsigned char, aligned_free>;

aligned_bytes aligned_alloc_bytes(std::size_t n) {
  void* p = nullptr;
  if (::posix_memalign(&p, align, n) != 0) return nullptr;
  return aligned_bytes(static_cast<unsigned char*>(p));
}

[[noreturn]] void die(const std::string& what) {
  std::cerr << "anchorage-bench-disk: " << what << "\n";
  std::exit(1);
}

// The baseline: one file written sequentially with pwrite under O_DIRECT (the tail padded, then
// ftruncate'd), fsync'd. `src` is aligned and at least round_up(n) bytes long.
bool raw_write(const std::string& path, const unsigned char* src, std::size_t n) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const std::size_t padded = (n + align - 1) / align * align;
  bool ok = true;
  for (std::size_t off = 0; ok && off < padded; off += raw_block) {
    const std::size_t len = std::min(raw_block, padded - off);
    ok = ::pwrite(fd, src + off, len, static_cast<off_t>(off)) == static_cast<ssize_t>(len);
  }
  ok = ok && ::ftruncate(fd, static_cast<off_t>(n)) == 0 && ::fsync(fd) == 0;
  return ::close(fd) == 0 && ok;
}

bool raw_read(const std::string& path, unsigned char* dst, std::size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return false;
  const std::size_t padded = (n + align - 1) / align * align;
  bool ok = true;
  for (std::size_t off = 0; ok && off < padded; off += raw_block) {
    const std::size_t len = std::min(raw_block, padded - off);
    const ssize_t got = ::pread(fd, dst + off, len, static_cast<off_t>(off));
    ok = got == static_cast<ssize_t>(std::min(len, n - off));
  }
  return ::close(fd) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp/anchorage-bench-disk";
  std::size_t size_mb = 104;
  std::size_t files = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) die("missing value for " + a);
    if (a == "--dir") dir = argv[++i];
    else if (a == "--size-mb") size_mb = std::stoul(argv[++i]);
    else if (a == "--files") files = std::stoul(argv[++i]);
    else die("unknown flag " + a + " (flags: --dir --size-mb --files)");
  }
  if (size_mb == 0 || files == 0) die("--size-mb and --files must be positive");
  const std::size_t n = size_mb << 20;
  const std::size_t padded = (n + align - 1) / align * align;

  uring_env env;
  if (auto r = env.make_dir(dir); !r) die(r.message);
  const auto free = env.free_bytes(dir);
  if (!free || *free < 2 * files * padded + (256u << 20)) die("not enough free space in " + dir);

  // The bytes: one pseudo-random buffer, aligned so the baseline can write it directly.
  aligned_bytes src = aligned_alloc_bytes(padded), dst = aligned_alloc_bytes(padded);
  if (!src || !dst) die("out of memory");
  std::uint64_t x = 0x2545F4914F6CDD1DULL;
  for (std::size_t i = 0; i < padded; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    src.get()[i] = static_cast<unsigned char>(x >> 32);
  }

  double env_write_s = 0, env_read_s = 0, raw_write_s = 0, raw_read_s = 0;
  bool verified = true;
  auto env_name = [](std::size_t i) { return "env-" + std::to_string(i); };
  auto raw_path = [&](std::size_t i) { return join_path(dir, "raw-" + std::to_string(i)); };

  for (std::size_t i = 0; i < files; ++i) {
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == (i % 2 == 0)) {
        const auto t0 = clock_type::now();
        if (auto r = env.write_atomic(dir, env_name(i), {{src.get(), n}}); !r) die(r.message);
        env_write_s += seconds_since(t0);
      } else {
        const auto t0 = clock_type::now();
        if (!raw_write(raw_path(i), src.get(), n)) die("raw write failed: " + raw_path(i));
        raw_write_s += seconds_since(t0);
      }
    }
  }
  for (std::size_t i = 0; i < files; ++i) {
    for (int side = 0; side < 2; ++side) {
      std::memset(dst.get(), 0, n);
      if ((side == 0) == (i % 2 == 0)) {
        const auto t0 = clock_type::now();
        if (auto r = env.read(join_path(dir, env_name(i)), 0, dst.get(), n); !r) die(r.message);
        env_read_s += seconds_since(t0);
      } else {
        const auto t0 = clock_type::now();
        if (!raw_read(raw_path(i), dst.get(), n)) die("raw read failed: " + raw_path(i));
        raw_read_s += seconds_since(t0);
      }
      verified = verified && std::memcmp(dst.get(), src.get(), n) == 0;
    }
  }
  for (std::size_t i = 0; i < files; ++i) {
    env.remove(join_path(dir, env_name(i)));
    env.remove(raw_path(i));
  }
  ::rmdir(dir.c_str());  // only when empty; a directory the caller filled stays

  const double bytes = static_cast<double>(n) * static_cast<double>(files);
  auto gbps = [&](double s) { return s > 0 ? bytes / s / 1e9 : 0.0; };
  nlohmann::json out = {
      {"dir", dir},
      {"size_mb", size_mb},
      {"files", files},
      {"uses_uring", env.uses_uring()},
      {"verified", verified},
      {"uring_env", {{"write_gbps", gbps(env_write_s)}, {"read_gbps", gbps(env_read_s)}}},
      {"raw_o_direct", {{"write_gbps", gbps(raw_write_s)}, {"read_gbps", gbps(raw_read_s)}}},
      {"ratio",
       {{"write", raw_write_s > 0 ? raw_write_s / env_write_s : 0.0},
        {"read", raw_read_s > 0 ? raw_read_s / env_read_s : 0.0}}},
  };
  std::cout << out.dump(2) << std::endl;
  return verified ? 0 : 1;
}
