// The spill store's read: every file of one conversation read with submission ahead, verified,
// and assembled; a file that fails goes with every manifest naming it.
#include <cstring>

#include "runtime/spill/spill_codec.hpp"
#include "runtime/spill/spill_store.hpp"

namespace anchorage {

expected<spill_read> spill_store::read_verified(std::uint64_t id) {
  const auto* e = index_.find(id);
  if (!e) return status::failure("no spilled conversation " + spill_manifest_file(id) + " is indexed");
  const spill_manifest& m = e->manifest;
  const std::size_t n = m.tokens.size();

  // The manifest first (its bytes must be the indexed ones), then the blocks, then the anchors.
  struct to_read {
    std::string path;
    std::size_t bytes;
    spill_file_key key;
    bool manifest;
  };
  std::vector<to_read> files;
  files.push_back({manifest_path(id), e->encoded.size(), {}, true});
  for (const auto& b : m.blocks) {
    const spill_file_key k{spill_file_kind::block, b.name};
    files.push_back(
        {path_of(k), static_cast<std::size_t>(spill_block_file_bytes(layout_, b.a, b.b)), k, false});
  }
  for (const auto& a : m.anchors) {
    const spill_file_key k{spill_file_kind::anchor, a.name};
    files.push_back({path_of(k), static_cast<std::size_t>(spill_anchor_file_bytes(layout_)), k, false});
  }

  spill_read out;
  out.manifest = m;
  out.rows.resize(layout_.views.size());
  for (std::size_t v = 0; v < layout_.views.size(); ++v)
    out.rows[v].resize(n * layout_.views[v].bytes_per_token);
  out.anchors.resize(m.anchors.size());

  // File i + 1 is submitted before file i is verified: the crc and sum work overlaps the I/O.
  std::string failure;
  std::size_t failed_at = 0;
  io_ticket ahead = env_.submit_read(files[0].path, files[0].bytes);
  for (std::size_t i = 0; i < files.size(); ++i) {
    file_buffer buf;
    const file_result r = env_.wait_read(ahead, buf);
    ahead = r && i + 1 < files.size() ? env_.submit_read(files[i + 1].path, files[i + 1].bytes) : io_ticket{};
    auto stop = [&](const std::string& what) {
      failure = files[i].path + ": " + what;
      failed_at = i;
    };
    if (!r) {
      stop(r.message);
      break;
    }
    out.bytes_read += files[i].bytes;
    const unsigned char* d = buf.data();
    if (files[i].manifest) {
      if (std::memcmp(d, e->encoded.data(), e->encoded.size()) != 0) {
        stop("the manifest's bytes differ from the ones indexed");
        break;
      }
    } else if (i <= m.blocks.size()) {
      const spill_block_ref& ref = m.blocks[i - 1];
      auto v = verify_spill_block(d, files[i].bytes, layout_, ref, m.tokens);
      if (!v.ok()) {
        stop(v.error);
        break;
      }
      for (std::size_t k = 0; k < layout_.views.size(); ++k) {
        const std::size_t bpt = layout_.views[k].bytes_per_token;
        std::memcpy(out.rows[k].data() + ref.a * bpt, v.value.rows[k], (ref.b - ref.a) * bpt);
      }
    } else {
      const std::size_t ai = i - 1 - m.blocks.size();
      auto v = verify_spill_anchor(d, files[i].bytes, layout_, m.anchors[ai]);
      if (!v.ok()) {
        stop(v.error);
        break;
      }
      for (std::size_t s = 0; s < layout_.sections.size(); ++s)
        out.anchors[ai].emplace_back(v.value.sections[s], v.value.sections[s] + layout_.sections[s].bytes);
    }
  }
  if (ahead) {  // the env is idle again before anything is deleted
    file_buffer discard;
    env_.wait_read(ahead, discard);
  }

  if (failure.empty()) {
    ++hits_;
    bytes_read_ += out.bytes_read;
    touch(id);
    return out;
  }
  ++restore_failures_;
  const to_read bad = files[failed_at];
  if (bad.manifest) {
    drop_manifest(id);
  } else {
    // The file goes, and every conversation that needs it.
    for (std::uint64_t other : index_.manifests_naming(bad.key)) drop_manifest(other);
    env_.remove(bad.path);
    index_.erase_file(bad.key);
  }
  return status::failure("the spill of " + spill_manifest_file(id) + " failed its read: " + failure);
}

}  // namespace anchorage
