#pragma once
// The disk tier's shared level (issue 28): the chunk and anchor files of a disk_store, copied to
// a Redis (runtime/remote/redis_env.hpp) that several replicas share, below their NVMe.
//
//   push   written behind: after the local store committed a write, its files are copied to
//          Redis, chunks before the anchor that stands on them, so a replica that sees an
//          anchor finds its chain (a file already there is not sent again: its name is its
//          content's hash).
//   fetch  a local miss asks the remote: the anchor names of every grid line of the prompt
//          deeper than what the local store holds are looked up in one round trip; the deepest
//          one present is read, then each chunk of its chain the local store lacks, and all are
//          written locally (atomically) and indexed by the store (disk_store::adopt, which checks
//          each header as a start-up scan does). A restore then reads and verifies them from the
//          NVMe as any other file: every crc and every token id before a byte reaches an engine.
//          A record altered, swapped or evicted in Redis is refused there, never restored.
//
// The session spill's level (remote_spill.cpp): after a spill committed, its blocks and anchors
// (named by content: sent once) and then its manifest (replacing the conversation's earlier one;
// not sent when a file it names was not) go to Redis under disk/<fingerprint>/spill/; a request
// whose session and head name a conversation Redis holds deeper than the floor fetches the
// files its replica's spill folder lacks and the manifest's bytes, which the board's spill store
// adopts (spill_store::adopt: every header checked as its scan does) and reads, verified, as
// any spill.
//
// Remote paths: disk/<fingerprint as 16 hex>/... (the local folder's layout under a fixed root),
// under the redis_env's key namespace, which carries the tenant's salt: two salts never share a
// record.
//
// Failures are the cold path: Redis refusing, slow past the deadline, or missing a file gives
// a fetch of nothing (counted, and logged once per kind of failure until a success), never an
// error to a caller. A fetch stops at its deadline between round trips; each round trip is
// bounded by the redis_env's timeout.
//
// Not thread-safe: one owner, who also owns the local store (the fetch writes into its folder
// and index) and the redis_env.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/disk_messages.hpp"
#include "protocol/disk_types.hpp"
#include "runtime/core/token.hpp"
#include "runtime/disk/disk_names.hpp"
#include "runtime/disk/disk_store.hpp"
#include "runtime/engine/state_layout.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/remote/redis_env.hpp"

namespace anchorage {

struct remote_disk_options {
  int fetch_deadline_ms = 2000;  // a fetch gives up (the cold path) past this
  // A fetch reads at most this many bytes (an anchor and its missing chunks); 0: the local
  // store's budget. Checked against the sizes Redis reports before a byte is copied.
  std::uint64_t fetch_max_bytes = 0;
  // After Redis failed (unreachable, slow, an error), neither fetch nor push asks it again for
  // this long: a Redis that is down costs one timeout per interval, not one per request
  // (counted as backed_off; 0: ask every time).
  int retry_after_ms = 5000;
};

// The counters (the wire's tiers.disk.remote); enabled, target, ns and pushes_out are the
// server's to fill.
using remote_disk_counters = remote_stats;

// The shared tier as a server runs it: --remote-cache redis://..., --cache-salt, --remote-timeout-ms.
struct remote_tier_options {
  redis_options redis;  // host, port, db, user and password from the URL; ns from the salt
  remote_disk_options disk;
};

// The key namespace of a tenant's salt: "anchorage" without one, else "anchorage:" and the
// 16 hex digits of the salt's 64-bit digest (the salt itself never reaches Redis). Two salts
// give two disjoint key spaces.
std::string remote_namespace(const std::string& salt);

// host:port/db of `o`, for logs and stats (never the password).
std::string remote_target(const redis_options& o);

// The files a push of `store`'s anchors of `ns` at `lines` of `tokens` sends: each anchor's
// chunks, then the anchor, for every anchor the store indexes with its whole chain (one evicted
// or replaced meanwhile is left out). Paths in the store's folder.
std::vector<std::string> anchor_files(const disk_store& store, const std::vector<token_id>& tokens,
                                      const std::string& ns, const std::vector<std::size_t>& lines);

// Every file an indexed anchor of `store` stands on (its usable anchors and their chains): what
// a replica pushes of the folder it found at start.
std::vector<std::string> store_files(const disk_store& store);

struct remote_push_report {
  std::size_t written = 0;
  std::size_t skipped = 0;
  std::size_t failed = 0;
  std::string error;  // the first failure
};

struct remote_fetch_report {
  std::size_t line = 0;  // the line now indexed locally for the prompt (0: nothing fetched)
  std::size_t files = 0;
  std::uint64_t bytes = 0;
  std::string error;  // why nothing was fetched, when Redis failed
};

// The fetch's deadline over every Redis call made while it lives (redis_env::set_deadline).
class remote_deadline {
 public:
  remote_deadline(redis_env& r, std::chrono::steady_clock::time_point at) : r_(r) { r_.set_deadline(at); }
  ~remote_deadline() { r_.set_deadline(std::nullopt); }
  remote_deadline(const remote_deadline&) = delete;
  remote_deadline& operator=(const remote_deadline&) = delete;

 private:
  redis_env& r_;
};

class remote_disk {
 public:
  // `remote` must outlive this; `fingerprint` is the engine's layout fingerprint (the remote
  // folder's name, as the local one).
  remote_disk(redis_env& remote, std::uint64_t fingerprint, remote_disk_options options = {});

  // Copies the local store's files at `local_paths` (paths in its folder, as disk_store names
  // them) to Redis, chunk files first; no anchor when a chunk failed (an anchor in Redis always
  // finds its chain). `local` is the env the store wrote them on; it may be another env than the
  // store's own (the pusher's thread), over the same folder.
  remote_push_report push(file_env& local, const std::string& local_folder,
                          const std::vector<std::string>& local_paths);
  // push() of every file an indexed anchor of `store` stands on, whose chain is complete: what a
  // replica writes behind after its writes commit (files Redis holds are skipped by name).
  remote_push_report push_store(disk_store& store);

  // A committed spill's files (paths in `spill_folder`, the spill store's folder): blocks and
  // anchors first (one Redis holds is skipped), then the manifest, sent again each time.
  remote_push_report push_spill(file_env& local, const std::string& spill_folder,
                                const std::vector<std::string>& local_paths);
  // The spilled conversation `session_key` and `prompt`'s head name (spill_conversation_id),
  // when Redis holds one that would start the prompt deeper than `floor` and differs from the
  // folder's own: the block and anchor files `spill_folder` lacks written there through `local`
  // (at most `budget` bytes with the manifest, checked before a byte is copied; 0: no bound),
  // and the manifest's bytes returned for the spill store to adopt. Null on a miss or a
  // failure (counted; `r` says why; what it wrote is removed again).
  std::shared_ptr<fetched_spill> fetch_spill(file_env& local, const std::string& spill_folder,
                                             const state_layout& layout, const std::string& session_key,
                                             const std::vector<token_id>& prompt, std::size_t floor,
                                             std::uint64_t budget, remote_fetch_report& r);

  // Fetches into `store` the deepest anchor of `ns` Redis holds for `prompt` deeper than the
  // store's own (see the header comment). The store must be the only user of its env meanwhile.
  remote_fetch_report fetch(disk_store& store, const std::vector<token_id>& prompt,
                            const std::string& ns = "");

  const remote_disk_counters& counters() const { return counts_; }
  const disk_names& names() const { return names_; }

 private:
  // Sends `parts`, then each of `heads` unless a part failed (a head stands on the parts), each
  // from `local_folder` to the same place under `remote_folder`; a part Redis holds is skipped,
  // a head too unless `replace_heads`.
  remote_push_report push_ordered(file_env& local, const std::string& local_folder,
                                  const std::string& remote_folder, const std::vector<std::string>& parts,
                                  const std::vector<std::string>& heads, bool replace_heads);
  // Reads the whole remote file at `path` into `out`; false with `error` on failure.
  bool read_remote(const std::string& path, std::vector<unsigned char>& out, file_result& error);
  // A fetch that failed: counted, logged once; `redis` (Redis refused, slow or erred, not a
  // record that failed our checks) starts the retry wait.
  void fail(const std::string& what, const file_result& why, remote_fetch_report& r, bool redis = true);
  // Whether Redis failed within retry_after_ms (counted as backed_off); failed() starts the wait.
  bool backing_off();
  void failed();

  redis_env& remote_;
  disk_names names_;
  remote_disk_options options_;
  remote_disk_counters counts_;
  bool warned_ = false;
  std::chrono::steady_clock::time_point failed_at_{};
  bool has_failed_ = false;
};

}  // namespace anchorage
