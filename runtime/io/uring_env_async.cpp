#include "runtime/io/uring_env.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "runtime/io/uring_detail.hpp"

// uring_env's submission ahead (submit_read / wait_read, submit_write_atomic / wait_write): whole
// files in flight on the ring while the caller works, in pieces of the ring's block size.
namespace anchorage {
using namespace uring_detail;

// ---- Submission ahead ---------------------------------------------------------------------------

int uring_env::reap(std::uintptr_t& data, int& res) {
  for (;;) {
    if (const int err = wait_one(ring_.get(), data, res)) return err;
    if (!is_async(data)) return 0;
    on_async(*reinterpret_cast<async_piece*>(data), res);
  }
}

// One completion of an async piece: a failure is the op's first (the rest still complete), a
// short transfer goes again for its remainder.
void uring_env::on_async(async_piece& p, int res) {
  async_op& op = *p.op;
  --op.in_flight;
  --async_in_flight_;
  if (res < 0 || (res == 0 && p.done < p.needed)) {
    if (op.result.ok) {
      op.result = res < 0    ? os_failure(-res, op.write ? "write" : "read", op.path)
                  : op.write ? os_failure(EIO, "write (no progress)", op.path)
                             : os_failure(ERANGE, "read (the file ended early)", op.path);
    }
    return;
  }
  p.done += static_cast<std::size_t>(res);
  if (p.done >= p.needed || !op.result.ok) return;
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  int err = EBUSY;
  if (sqe) {
    char* buf = reinterpret_cast<char*>(op.buf.data()) + p.offset + p.done;
    const std::size_t len = p.length - p.done;
    if (op.write)
      io_uring_prep_write(sqe, op.fd, buf, static_cast<unsigned>(len), p.offset + p.done);
    else
      io_uring_prep_read(sqe, op.fd, buf, static_cast<unsigned>(len), p.offset + p.done);
    io_uring_sqe_set_data(sqe, &p);
    err = submit_one(ring_.get());
  }
  if (err != 0) {
    op.result = os_failure(err, "io_uring_submit", op.path);
    return;
  }
  ++op.in_flight;
  ++async_in_flight_;
}

bool uring_env::submit_async(async_op& op) {
  while (op.result.ok && op.next < op.pieces.size() && async_in_flight_ < options_.queue_depth) {
    async_piece& p = op.pieces[op.next];
    io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());  // null only if the ring is broken
    if (!sqe) {
      abandon_ring(EBUSY, "io_uring_get_sqe", op.path);
      return false;
    }
    char* buf = reinterpret_cast<char*>(op.buf.data()) + p.offset;
    if (op.write)
      io_uring_prep_write(sqe, op.fd, buf, static_cast<unsigned>(p.length), p.offset);
    else
      io_uring_prep_read(sqe, op.fd, buf, static_cast<unsigned>(p.length), p.offset);
    io_uring_sqe_set_data(sqe, &p);
    if (const int err = submit_one(ring_.get())) {
      abandon_ring(err, "io_uring_submit", op.path);
      return false;
    }
    ++op.next;
    ++op.in_flight;
    ++async_in_flight_;
  }
  return true;
}

void uring_env::drain(async_op& op) {
  while (ring_ && (op.in_flight > 0 || (op.result.ok && op.next < op.pieces.size()))) {
    if (!submit_async(op)) return;
    if (op.in_flight == 0 && async_in_flight_ == 0) break;  // nothing can complete
    std::uintptr_t data = 0;
    int res = 0;
    if (const int err = wait_one(ring_.get(), data, res)) {
      abandon_ring(err, "io_uring_wait_cqe", op.path);
      return;
    }
    if (is_async(data)) on_async(*reinterpret_cast<async_piece*>(data), res);
  }
}

io_ticket uring_env::start(std::unique_ptr<async_op> op) {
  if (op->fd >= 0 && op->result.ok && ring_) {
    // The extent in up to queue_depth transfers of at least block_bytes, all in flight at once.
    const std::uint64_t extent = op->direct ? round_up(op->total) : op->total;
    const std::uint64_t depth = options_.queue_depth;
    std::uint64_t piece = std::max<std::uint64_t>(options_.block_bytes, (extent + depth - 1) / depth);
    piece = round_up(piece);
    for (std::uint64_t off = 0; off < extent; off += piece) {
      async_piece p;
      p.op = op.get();
      p.offset = off;
      p.length = static_cast<std::size_t>(std::min(piece, extent - off));
      p.needed =
          op->write ? p.length : static_cast<std::size_t>(std::min<std::uint64_t>(p.length, op->total - off));
      op->pieces.push_back(p);
    }
  }
  const std::uint64_t id = next_ticket_++;
  async_op& placed = *ops_.emplace(id, std::move(op)).first->second;
  if (!placed.pieces.empty()) submit_async(placed);  // in the map first: a ring failure sees it
  return io_ticket{id};
}

io_ticket uring_env::submit_read(const std::string& path, std::size_t n) {
  auto op = std::make_unique<async_op>();
  op->path = path;
  op->total = n;
  try {
    op->buf = file_buffer(n);
  } catch (const std::bad_alloc&) {
    op->result = os_failure(ENOMEM, "allocate a read buffer for", path);
    return start(std::move(op));
  }
  if (!ring_) {
    op->result = read(path, 0, op->buf.data(), n);
    return start(std::move(op));
  }
  op->direct = options_.direct;
  op->fd = open_file(path, O_RDONLY, op->direct);
  if (op->fd < 0) {
    op->result = os_failure(errno, "open", path);
    return start(std::move(op));
  }
  struct stat st {};
  if (::fstat(op->fd, &st) != 0) {
    op->result = os_failure(errno, "fstat", path);
  } else if (n > static_cast<std::uint64_t>(st.st_size)) {
    op->result = os_failure(ERANGE, "read past the end (" + std::to_string(st.st_size) + " bytes) of", path);
  }
  return start(std::move(op));
}

file_result uring_env::wait_read(io_ticket ticket, file_buffer& out) {
  auto it = ops_.find(ticket.id);
  assert(it != ops_.end() && !it->second->write);
  async_op& op = *it->second;
  drain(op);
  if (op.fd >= 0) ::close(op.fd);
  op.fd = -1;
  file_result r = op.result;
  // A file system refusing O_DIRECT on the first transfer: the same read, buffered.
  if (!r && op.direct && r.error == EINVAL && op.buf.data())
    r = read_once(op.path, false, 0, op.buf.data(), op.total);
  out = r ? std::move(op.buf) : file_buffer();
  ops_.erase(it);
  return r;
}

io_ticket uring_env::submit_write_atomic(const std::string& dir, const std::string& name,
                                         const std::vector<file_piece>& pieces) {
  assert(!name.empty() && name.find('/') == std::string::npos);
  auto op = std::make_unique<async_op>();
  op->write = true;
  op->dir = dir;
  op->name = name;
  op->path = join_path(dir, name + tmp_suffix);
  for (const auto& [data, bytes] : pieces) {
    assert(data != nullptr || bytes == 0);
    op->total += bytes;
  }
  if (!ring_) {
    op->result = write_atomic(dir, name, pieces);
    return start(std::move(op));
  }
  const auto total = static_cast<std::size_t>(op->total);
  if (write_spare_.data() && write_spare_.capacity() >= total) {
    op->buf = std::move(write_spare_);  // the last write's buffer, its pages already mapped
    op->buf.set_size(total);
  } else {
    try {
      op->buf = file_buffer(total);
    } catch (const std::bad_alloc&) {
      op->result = os_failure(ENOMEM, "allocate a write buffer for", op->path);
      return start(std::move(op));
    }
  }
  std::size_t at = 0;
  for (const auto& [data, bytes] : pieces) {
    if (bytes > 0) std::memcpy(op->buf.data() + at, data, bytes);
    at += bytes;
  }
  std::memset(op->buf.data() + at, 0, round_up(total) - at);  // O_DIRECT padding of the tail
  op->direct = options_.direct;
  op->fd = open_file(op->path, O_WRONLY | O_CREAT | O_TRUNC, op->direct);
  if (op->fd < 0) op->result = os_failure(errno, "open", op->path);
  return start(std::move(op));
}

// The end of a submitted write: the tail trimmed, fsync, close, rename, the directory's fsync;
// the tmp removed on a failure before the rename.
file_result uring_env::finish_write(async_op& op) {
  file_result r = op.result;
  const bool direct_refused = !r && op.direct && r.error == EINVAL && op.buf.data();
  if (r && op.direct && round_up(op.total) != op.total &&
      ::ftruncate(op.fd, static_cast<off_t>(op.total)) != 0)
    r = os_failure(errno, "ftruncate", op.path);
  if (r) r = sync_file(op.fd, op.path);
  if (op.fd >= 0) {
    const int err = ::close(op.fd) == 0 ? 0 : errno;
    if (r && err != 0) r = os_failure(err, "close", op.path);
    op.fd = -1;
  }
  if (direct_refused) {  // the first transfer refused O_DIRECT: the same bytes, buffered
    r = ensure_buffers();
    if (r) r = write_tmp(op.path, false, {{op.buf.data(), static_cast<std::size_t>(op.total)}}, op.total);
  }
  if (!r) {
    ::unlink(op.path.c_str());  // best effort; ENOENT when open itself failed
    return r;
  }
  const std::string final_path = join_path(op.dir, op.name);
  if (::rename(op.path.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(op.path.c_str());
    return os_failure(err, "rename to " + final_path + " from", op.path);
  }
  return sync_dir(op.dir.empty() ? "." : op.dir);
}

file_result uring_env::wait_write(io_ticket ticket) {
  auto it = ops_.find(ticket.id);
  assert(it != ops_.end() && it->second->write);
  async_op& op = *it->second;
  drain(op);
  // Without a ring the submission did the whole write_atomic.
  const file_result r = op.fd < 0 && op.result.ok ? op.result : finish_write(op);
  // Kept for the next write unless it is large (a buffer the kernel may still own was leaked).
  if (op.buf.data() && op.buf.capacity() <= spare_max_bytes && op.buf.capacity() > write_spare_.capacity())
    write_spare_ = std::move(op.buf);
  ops_.erase(it);
  return r;
}

}  // namespace anchorage
