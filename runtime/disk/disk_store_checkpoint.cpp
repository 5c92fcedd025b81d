#include "runtime/disk/disk_store.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_store_detail.hpp"

namespace anchorage {

using namespace disk_store_detail;

void disk_store::commit_checkpoint(const disk_file_job& f, const checkpoint_meta& meta, std::uint64_t epoch,
                                   const disk_file_result& result, disk_write_report& r) {
  const std::string path = join_path(f.dir, f.name);
  if (!result.ok) {
    r.failed = true;
    r.error = result.error;
    ++write_failures_;
    warn_once(result.error);
    if (paths_.count(checkpoint_id(f.name)) == 0) env_.remove(path);
    return;
  }
  if (epoch != epoch_) {
    env_.remove(path);
    return;
  }
  const std::uint64_t id = checkpoint_id(f.name);
  if (checkpoints_.count(id) == 0) {
    eviction_entry e;
    e.bytes = result.bytes;
    e.tokens_saved = f.line;
    e.last_use_s = clock_.now_s();
    eviction_->add(id, e);
  }
  checkpoints_[id] = checkpoint_entry{meta.key_hash, f.line, result.bytes};
  paths_[id] = path;
  r.bytes_written += result.bytes;
  bytes_written_ += result.bytes;
  ++files_written_;
  // Renamed and durable: the older points of the same generation go now, not before.
  std::vector<std::uint64_t> older;
  for (const auto& [oid, c] : checkpoints_)
    if (oid != id && c.key_hash == meta.key_hash && c.rows < f.line) older.push_back(oid);
  for (std::uint64_t oid : older) {
    drop(oid);
    ++r.superseded;
    ++superseded_;
  }
}

disk_write_plan disk_store::prepare_checkpoint(const staged_write& w, const checkpoint_meta& meta) {
  disk_write_plan p;
  p.epoch = epoch_;
  const std::size_t rows = meta.tokens.empty() ? 0 : meta.tokens.size() - 1;
  if (rows == 0 || w.anchors.size() != 1 || w.anchors[0].line != rows || w.row_lo != 0 || w.row_hi != rows) {
    p.refused = true;
    p.error = "a checkpoint needs its whole state staged";
    ++refusals_;
    return p;
  }
  p.checkpoint = meta;
  p.files.push_back({false, true, rows, 0, folder_, checkpoint_name(meta.key_hash, rows)});
  p.bytes = checkpoint_file_bytes(layout_, meta.tokens.size());
  make_room(p, {});
  return p;
}

bool disk_store::store_checkpoint(const checkpoint_meta& meta, const state_adapter& from) {
  const std::size_t rows = from.valid_length();
  if (meta.tokens.size() != rows + 1)
    throw std::invalid_argument("disk_store::store_checkpoint: the state is at " + std::to_string(rows) +
                                ", the checkpoint has " + std::to_string(meta.tokens.size()) + " ids");
  staged_write w;
  w.tokens = meta.tokens;
  stage_rows(w, from, 0, rows);
  w.anchors.push_back(stage_sections(from, rows));
  const disk_write_plan plan = prepare_checkpoint(w, meta);
  const disk_write_report r = commit(w, plan, execute_disk_write(env_, layout_, w, plan));
  return !r.refused && !r.failed && checkpoints_.count(checkpoint_id(checkpoint_name(meta.key_hash, rows))) != 0;
}

std::optional<disk_store::checkpoint_hit> disk_store::find_checkpoint(std::uint64_t key_hash) const {
  std::optional<checkpoint_hit> best;
  for (const auto& [id, c] : checkpoints_)
    if (c.key_hash == key_hash && (!best || c.rows > best->rows)) best = checkpoint_hit{c.key_hash, c.rows, c.bytes};
  return best;
}

disk_store::restore_result disk_store::restore_checkpoint(const checkpoint_hit& hit, const std::vector<token_id>& prompt,
                                                          state_adapter& into, checkpoint_meta& meta) {
  restore_result res;
  expected<verified_checkpoint> r = read_checkpoint_verified(hit, prompt);
  if (!r) {
    res.error = r.error().error();
    return res;
  }
  apply_checkpoint_verified(*r, into);
  meta = std::move(r->read.meta);
  res.ok = true;
  res.bytes_read = r->bytes_read;
  return res;
}

void disk_store::apply_checkpoint_verified(const verified_checkpoint& read, state_adapter& into) {
  apply_checkpoint(into, read.read);
}

expected<verified_checkpoint> disk_store::read_checkpoint_verified(const checkpoint_hit& hit,
                                                                   const std::vector<token_id>& prompt) {
  const std::uint64_t id = checkpoint_id(checkpoint_name(hit.key_hash, hit.rows));
  auto it = checkpoints_.find(id);
  if (it == checkpoints_.end()) return status::failure("no such checkpoint");
  const std::string path = paths_.at(id);
  std::vector<unsigned char> buf(it->second.bytes);
  const file_result fr = env_.read(path, 0, buf.data(), buf.size());
  auto d = fr ? decode_checkpoint(buf, layout_, prompt, hit.key_hash)
              : decode_result<checkpoint_read>::failure(df::fault::truncated, fr.message);
  if (!d.ok()) {
    ++restore_failures_;
    drop(id);
    return status::failure(path + ": " + d.error);
  }
  verified_checkpoint out;
  out.read = std::move(d.value);
  out.bytes_read = buf.size();
  bytes_read_ += buf.size();
  ++hits_;
  eviction_->touch(id);
  env_.set_modified_s(path, clock_.now_s());
  return expected<verified_checkpoint>(std::move(out));
}

std::size_t disk_store::remove_checkpoints(std::uint64_t key_hash) {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, c] : checkpoints_)
    if (c.key_hash == key_hash) ids.push_back(id);
  std::size_t n = 0;
  for (std::uint64_t id : ids) n += drop(id);
  return n;
}

}  // namespace anchorage
