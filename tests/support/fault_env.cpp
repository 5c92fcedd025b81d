#include "tests/support/fault_env.hpp"

#include <algorithm>
#include <cassert>
#include <cerrno>

namespace anchorage {
namespace {

// The first `keep` bytes of the concatenated pieces, as pieces.
std::vector<file_piece> prefix_of(const std::vector<file_piece>& pieces, std::uint64_t keep) {
  std::vector<file_piece> out;
  for (const auto& [data, bytes] : pieces) {
    if (keep == 0) break;
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, keep));
    out.emplace_back(data, n);
    keep -= n;
  }
  return out;
}

}  // namespace

void fault_env::flip_bit_on_read(std::uint64_t byte_index, unsigned bit) {
  assert(bit < 8);
  flip_byte_ = byte_index;
  flip_bit_ = bit;
}

void fault_env::heal() {
  space_left_.reset();
  read_error_ = 0;
  crash_after_.reset();
  flip_byte_.reset();
  fail_dir_sync_ = false;
  read_fault_path_.clear();
}

file_result fault_env::write_atomic(const std::string& dir, const std::string& name,
                                    const std::vector<file_piece>& pieces) {
  ++counters_.writes;
  std::uint64_t total = 0;
  for (const auto& piece : pieces) total += piece.second;
  const std::string tmp_name = name + tmp_suffix;

  // A full disk: the bytes that fit reach the tmp, then the write fails and the tmp goes, as the
  // real env's cleanup does. Writing the partial tmp under its own atomic write leaves it
  // exactly where a real partial write would.
  if (space_left_ && total > *space_left_) {
    const std::uint64_t fits = *space_left_;
    *space_left_ = 0;
    if (fits > 0 && base_.write_atomic(dir, tmp_name, prefix_of(pieces, fits))) {
      counters_.bytes_written += fits;
    }
    base_.remove(join_path(dir, tmp_name));
    ++counters_.no_space;
    return file_result::failure(ENOSPC,
                                "write " + join_path(dir, tmp_name) + ": No space left on device (injected)");
  }

  // A crash before the rename: the tmp holds what reached it; the final name is not touched.
  if (crash_after_) {
    const std::uint64_t keep = std::min(*crash_after_, total);
    crash_after_.reset();
    file_result r = base_.write_atomic(dir, tmp_name, prefix_of(pieces, keep));
    if (!r) return r;
    counters_.bytes_written += keep;
    ++counters_.crashes;
    return file_result::failure(EIO, "write " + join_path(dir, name) +
                                         ": crashed before the rename (injected), " + std::to_string(keep) +
                                         " of " + std::to_string(total) + " bytes in the tmp");
  }

  file_result r = base_.write_atomic(dir, name, pieces);
  if (r) {
    counters_.bytes_written += total;
    if (space_left_) *space_left_ -= total;
    // The rename happened; the directory's fsync "failed": the file is in place, its name may
    // not survive a power loss, and the caller is told so.
    if (fail_dir_sync_) {
      fail_dir_sync_ = false;
      ++counters_.dir_sync_failures;
      return file_result::failure(
          EIO, "fsync " + dir + ": Input/output error (injected, after the rename of " + name + ")");
    }
  }
  return r;
}

file_result fault_env::read(const std::string& path, std::uint64_t offset, void* dst, std::size_t n) {
  ++counters_.reads;
  const bool faults = read_faults_apply(path);
  if (read_error_ != 0 && faults) {
    ++counters_.read_errors;
    return file_result::failure(read_error_, "read " + path + ": injected error");
  }
  file_result r = base_.read(path, offset, dst, n);
  if (!r) return r;
  counters_.bytes_read += n;
  if (faults && flip_byte_ && *flip_byte_ >= offset && *flip_byte_ - offset < n) {
    static_cast<unsigned char*>(dst)[*flip_byte_ - offset] ^= static_cast<unsigned char>(1u << flip_bit_);
    flip_byte_.reset();
    ++counters_.bit_flips;
  }
  return r;
}

io_ticket fault_env::add(pending p) {
  const std::uint64_t id = next_ticket_++;
  pending_.emplace(id, std::move(p));
  return io_ticket{id};
}

io_ticket fault_env::submit_read(const std::string& path, std::size_t n) {
  ++counters_.reads;
  pending p;
  p.n = n;
  p.path = path;
  if (read_error_ != 0 && read_faults_apply(path)) {
    ++counters_.read_errors;
    p.outcome = file_result::failure(read_error_, "read " + path + ": injected error");
  } else {
    p.base = base_.submit_read(path, n);
  }
  return add(std::move(p));
}

file_result fault_env::wait_read(io_ticket ticket, file_buffer& out) {
  auto it = pending_.find(ticket.id);
  assert(it != pending_.end());
  pending p = std::move(it->second);
  pending_.erase(it);
  if (!p.base) {
    out = file_buffer();
    return p.outcome;
  }
  file_result r = base_.wait_read(p.base, out);
  if (!r) return r;
  counters_.bytes_read += p.n;
  if (read_faults_apply(p.path) && flip_byte_ && *flip_byte_ < p.n) {
    out.data()[*flip_byte_] ^= static_cast<unsigned char>(1u << flip_bit_);
    flip_byte_.reset();
    ++counters_.bit_flips;
  }
  return r;
}

io_ticket fault_env::submit_write_atomic(const std::string& dir, const std::string& name,
                                         const std::vector<file_piece>& pieces) {
  pending p;
  if (write_fault_armed()) {
    p.outcome = write_atomic(dir, name, pieces);
    return add(std::move(p));
  }
  ++counters_.writes;
  for (const auto& piece : pieces) p.n += piece.second;
  p.base = base_.submit_write_atomic(dir, name, pieces);
  return add(std::move(p));
}

file_result fault_env::wait_write(io_ticket ticket) {
  auto it = pending_.find(ticket.id);
  assert(it != pending_.end());
  pending p = std::move(it->second);
  pending_.erase(it);
  if (!p.base) return p.outcome;
  file_result r = base_.wait_write(p.base);
  if (r) counters_.bytes_written += p.n;
  return r;
}

}  // namespace anchorage
