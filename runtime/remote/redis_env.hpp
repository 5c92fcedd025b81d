#pragma once
// Redis as a file_env (issue 28's shared tier, its first part): the stores' files as Redis keys,
// so that the disk tier's and the spill's stores, their framed records and their verified
// readers run unchanged over a Redis 7 server. What a store reads from here it verifies exactly
// as a read from the NVMe (every crc, every token id, the names that are content hashes): a
// record swapped, damaged or evicted in Redis is refused, never handed to an engine.
//
// The keys, under `ns` (the key namespace, which the caller builds from the tenant's salt):
//   ns:f:<path>   a hash per file: "n" its size in bytes (decimal), "m" its modification time
//                 (seconds since the epoch, decimal), "0", "1", ... its bytes in parts of
//                 part_bytes (the last one shorter), so no value is large;
//   ns:d:<dir>    a set per directory: the names of its files, tmp files included (as list()
//                 promises, so a sweep finds what a dead writer left), and of the directories
//                 make_dir made in it.
// The paths are the stores' own (they hold the engine's fingerprint and the content hashes).
//
// write_atomic: the parts go to ns:f:<dir>/<name>.tmp (its name added to the directory's set
// first), then one MULTI/EXEC renames it over the final key and swaps the names in the set:
// a reader sees the old file or the new one, never a mix; a writer that dies leaves at most the
// tmp key, which list() shows and remove() deletes. Durability is the server's (its AOF or RDB
// settings): "written" means Redis acknowledged the EXEC.
//
// Every failure is a value: a refused connection, a timeout (timeout_ms on connect and on every
// reply), an error reply or a missing key is a file_result failure with an errno (ECONNREFUSED,
// ETIMEDOUT, EIO, ENOENT, ERANGE) and a message naming the step, the key and Redis's words. A
// broken connection is dropped and dialled again on the next call. Nothing here throws.
//
// The asynchronous forms run at once, in submit (file_env allows an env without asynchronous
// I/O to do so); wait returns the result.
//
// Not thread-safe, like every file_env: one connection, one caller at a time.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <chrono>
#include <optional>

#include "runtime/io/file_env.hpp"

struct redisContext;

namespace anchorage {

struct redis_options {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  std::string username;               // an ACL user for AUTH (empty: the default user)
  std::string password;               // AUTH when not empty
  std::string ns = "anchorage";       // the key namespace (a prefix, no ':' at its end)
  std::size_t part_bytes = 4u << 20;  // the largest value of one part
  int timeout_ms = 2000;              // connect and every reply
};

// "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]" into `o`'s host, port (6379 when not named), db
// (0), user and password; an empty string when it parsed (`o` unchanged otherwise), else what is
// wrong with it.
std::string parse_redis_url(const std::string& url, redis_options& o);

class redis_env final : public file_env {
 public:
  // Connects lazily: the first call dials; a failure to connect is that call's result.
  explicit redis_env(redis_options o);
  ~redis_env() override;
  redis_env(const redis_env&) = delete;
  redis_env& operator=(const redis_env&) = delete;

  // PING: ok when the server answers (dialling first when needed).
  file_result ping();
  // A caller's deadline over the calls that follow (a fetch's): each connect and reply waits at
  // most the time left before it (and at most timeout_ms); a call made past it fails at once
  // with ETIMEDOUT, sending nothing. nullopt: timeout_ms per call again.
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) { deadline_ = deadline; }
  const redis_options& options() const { return opts_; }
  // The key of the file at `path` (tests that swap or damage a record in Redis use it).
  std::string file_key(const std::string& path) const { return opts_.ns + ":f:" + path; }

  // Which of `names` the directory `dir` lists, in one round trip (SMISMEMBER, Redis 6.2 or
  // later); nullopt with `error` filled when the server cannot be asked.
  std::optional<std::vector<bool>> has_names(const std::string& dir, const std::vector<std::string>& names,
                                             file_result& error);

  file_result write_atomic(const std::string& dir, const std::string& name,
                           const std::vector<file_piece>& pieces) override;
  file_result read(const std::string& path, std::uint64_t offset, void* dst, std::size_t n) override;
  std::optional<std::uint64_t> size(const std::string& path) override;
  std::vector<std::string> list(const std::string& dir) override;
  bool remove(const std::string& path) override;
  file_result make_dir(const std::string& dir) override;
  // What the server may still take: maxmemory - used_memory; nullopt without a maxmemory (the
  // server's memory is not ours to measure) or when the server cannot be asked.
  std::optional<std::uint64_t> free_bytes(const std::string& dir) override;
  std::optional<std::int64_t> modified_s(const std::string& path) override;
  bool set_modified_s(const std::string& path, std::int64_t seconds) override;

  io_ticket submit_read(const std::string& path, std::size_t n) override;
  file_result wait_read(io_ticket ticket, file_buffer& out) override;
  io_ticket submit_write_atomic(const std::string& dir, const std::string& name,
                                const std::vector<file_piece>& pieces) override;
  file_result wait_write(io_ticket ticket) override;

 private:
  struct reply;
  // One command from its arguments (binary-safe); a null reply with `error` filled on failure.
  reply command(const std::vector<std::string>& args, file_result& error);
  file_result connect();
  void drop();
  // The wait of the next call: timeout_ms, or less before the deadline (0: past it).
  int call_timeout_ms() const;
  // Sets the connection's reply timeout to `ms` when it is not that already.
  bool arm(int ms);
  std::string dir_key(const std::string& dir) const { return opts_.ns + ":d:" + dir; }

  redis_options opts_;
  redisContext* ctx_ = nullptr;
  int armed_ms_ = -1;  // the connection's reply timeout now
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::uint64_t next_ticket_ = 1;
  std::map<std::uint64_t, file_result> writes_;
  std::map<std::uint64_t, std::pair<file_result, file_buffer>> reads_;
};

}  // namespace anchorage
