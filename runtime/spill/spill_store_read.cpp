// The spill store's read in three parts: the plan (the store's index: which files, no I/O), the
// read itself (every file read with submission ahead and verified, on any thread with an env
// of its own: the spill reader actor), and the finish (the index again: a hit counted, or the
// file that failed deleted with every manifest naming it).
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "runtime/io/clock.hpp"
#include "runtime/spill/spill_codec.hpp"
#include "runtime/spill/spill_store.hpp"

namespace anchorage {

spill_fetch_ptr spill_store::plan_read(std::uint64_t id) const {
  const auto* e = index_.find(id);
  if (!e) return nullptr;
  auto f = std::make_shared<spill_fetch>();
  f->id = id;
  f->epoch = epoch_;
  f->layout = layout_;
  f->manifest = e->manifest;
  f->encoded = e->encoded;
  const spill_manifest& m = e->manifest;
  // The manifest first (its bytes must be the indexed ones), then the blocks, then the anchors.
  f->files.push_back({manifest_path(id), e->encoded.size(), {}, true});
  for (const auto& b : m.blocks) {
    const spill_file_key k{spill_file_kind::block, b.name};
    f->files.push_back(
        {path_of(k), static_cast<std::size_t>(spill_block_file_bytes(layout_, b.a, b.b)), k, false});
  }
  for (const auto& a : m.anchors) {
    const spill_file_key k{spill_file_kind::anchor, a.name};
    f->files.push_back({path_of(k), static_cast<std::size_t>(spill_anchor_file_bytes(layout_)), k, false});
  }
  return f;
}

namespace {

// Verifies file i of `f`, its bytes in `buf`, and keeps what it holds in f.read (a block's
// buffer itself, an anchor's sections copied); empty on success, else what failed. Files fill
// disjoint parts of f.read: two threads may verify two files at once.
std::string verify_file(spill_fetch& f, std::size_t i, file_buffer buf) {
  const state_layout& layout = f.layout;
  const spill_manifest& m = f.manifest;
  spill_read& out = f.read;
  const auto& file = f.files[i];
  const unsigned char* d = buf.data();
  if (file.manifest) {
    if (std::memcmp(d, f.encoded.data(), f.encoded.size()) != 0)
      return "the manifest's bytes differ from the ones indexed";
    return {};
  }
  if (i <= m.blocks.size()) {
    const spill_block_ref& ref = m.blocks[i - 1];
    auto v = verify_spill_block(d, file.bytes, layout, ref, m.tokens);
    if (!v.ok()) return v.error;
    spill_read_block& b = out.blocks[i - 1];
    b.a = ref.a;
    b.b = ref.b;
    b.rows = std::move(v.value.rows);
    b.bytes = std::move(buf);  // the rows point into it; moving the buffer keeps its memory
    return {};
  }
  const std::size_t ai = i - 1 - m.blocks.size();
  auto v = verify_spill_anchor(d, file.bytes, layout, m.anchors[ai]);
  if (!v.ok()) return v.error;
  for (std::size_t s = 0; s < layout.sections.size(); ++s)
    out.anchors[ai].emplace_back(v.value.sections[s], v.value.sections[s] + layout.sections[s].bytes);
  return {};
}

// A second core's share of the verification: the files handed to it, in order.
class verifier {
 public:
  explicit verifier(spill_fetch& f) : f_(f), errors_(f.files.size()), thread_([this] { run(); }) {}
  verifier(const verifier&) = delete;
  verifier& operator=(const verifier&) = delete;
  ~verifier() { finish(); }

  void hand(std::size_t i, file_buffer buf) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      work_.emplace_back(i, std::move(buf));
    }
    cv_.notify_one();
  }
  // Waits for every file handed so far; then errors() holds what failed.
  void finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  void run() {
    for (;;) {
      std::pair<std::size_t, file_buffer> next;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return done_ || !work_.empty(); });
        if (work_.empty()) return;
        next = std::move(work_.front());
        work_.pop_front();
      }
      errors_[next.first] = verify_file(f_, next.first, std::move(next.second));
    }
  }

  spill_fetch& f_;
  std::vector<std::string> errors_;  // by file; each written by one thread, read after join
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::size_t, file_buffer>> work_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

void execute_spill_read(file_env& env, spill_fetch& f) {
  const std::int64_t t0 = steady_ns();
  const state_layout& layout = f.layout;
  const spill_manifest& m = f.manifest;
  spill_read& out = f.read;
  out = spill_read{};
  out.manifest = m;
  // The rows stay in the blocks' read buffers (prefaulted by file_buffer): sizing fresh rows for
  // the whole conversation and copying into them took about three times the read itself
  // (docs/BENCHMARKS.md).
  out.blocks.resize(m.blocks.size());
  for (const auto& v : layout.views) out.row_bytes.push_back(v.bytes_per_token);
  out.anchors.resize(m.anchors.size());
  f.failure.clear();
  f.failed_at = 0;
  const auto& files = f.files;
  if (files.empty()) {
    f.failure = "nothing to read";
    return;
  }

  // Up to `ahead` files in flight while earlier ones are verified, every other file on a second
  // core: the device stays busy and the checks keep up with it.
  constexpr std::size_t ahead = 4;
  std::vector<std::string> mine(files.size());
  std::size_t read_fail = files.size();  // the first file whose read failed
  std::string read_error;
  {
    verifier other(f);
    std::deque<io_ticket> flight;
    std::size_t next = 0;
    auto top_up = [&] {
      while (read_fail == files.size() && next < files.size() && flight.size() < ahead) {
        flight.push_back(env.submit_read(files[next].path, files[next].bytes));
        ++next;
      }
    };
    top_up();
    for (std::size_t i = 0; !flight.empty(); ++i) {
      file_buffer buf;
      const file_result r = env.wait_read(flight.front(), buf);
      flight.pop_front();
      if (read_fail < files.size()) continue;  // draining what is in flight after a failure
      if (!r) {
        read_fail = i;
        read_error = r.message;
        continue;
      }
      out.bytes_read += files[i].bytes;
      top_up();
      if (i % 2 == 1) {
        other.hand(i, std::move(buf));
      } else {
        mine[i] = verify_file(f, i, std::move(buf));
      }
    }
    other.finish();
    for (std::size_t i = 0; i < files.size(); ++i)
      if (mine[i].empty() && !other.errors()[i].empty()) mine[i] = other.errors()[i];
  }
  // The first file that failed, in file order (a read failure, or a check).
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i == read_fail) {
      f.failure = files[i].path + ": " + read_error;
      f.failed_at = i;
      break;
    }
    if (!mine[i].empty()) {
      f.failure = files[i].path + ": " + mine[i];
      f.failed_at = i;
      break;
    }
  }
  if (!f.failure.empty()) f.read = spill_read{};
  f.read_s = static_cast<double>(steady_ns() - t0) / 1e9;
}

std::vector<std::vector<unsigned char>> spill_read::rows() const {
  const std::size_t n = manifest.tokens.size();
  std::vector<std::vector<unsigned char>> out(row_bytes.size());
  for (std::size_t v = 0; v < row_bytes.size(); ++v) {
    out[v].resize(n * row_bytes[v]);
    for (const auto& b : blocks)
      std::memcpy(out[v].data() + b.a * row_bytes[v], b.rows[v], (b.b - b.a) * row_bytes[v]);
  }
  return out;
}

expected<spill_read> spill_store::finish_read(spill_fetch& f) {
  const auto* e = index_.find(f.id);
  if (f.failure.empty()) {
    // Verified against the manifest the plan copied; that manifest must still be the one indexed
    // (a clear or a newer spill of the conversation in between makes the bytes stale for it).
    if (!e || f.epoch != epoch_ || e->encoded != f.encoded)
      return status::failure("the spill of " + spill_manifest_file(f.id) + " changed while it was read");
    ++counts_.reads;
    counts_.bytes_read += f.read.bytes_read;
    touch(f.id);
    return std::move(f.read);
  }
  ++counts_.restore_failures;
  const std::string why = "the spill of " + spill_manifest_file(f.id) + " failed its read: " + f.failure;
  if (f.epoch != epoch_ || f.failed_at >= f.files.size()) return status::failure(why);
  const spill_fetch::file bad = f.files[f.failed_at];
  if (bad.manifest) {
    if (e && e->encoded == f.encoded) drop_manifest(f.id);
  } else {
    // The file goes, and every conversation that needs it.
    for (std::uint64_t other : index_.manifests_naming(bad.key)) drop_manifest(other);
    env_.remove(bad.path);
    index_.erase_file(bad.key);
  }
  return status::failure(why);
}

expected<spill_read> spill_store::read_verified(std::uint64_t id) {
  spill_fetch_ptr f = plan_read(id);
  if (!f) return status::failure("no spilled conversation " + spill_manifest_file(id) + " is indexed");
  execute_spill_read(env_, *f);
  return finish_read(*f);
}

}  // namespace anchorage
