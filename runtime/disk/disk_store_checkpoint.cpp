#include "runtime/disk/disk_store.hpp"

#include "runtime/disk/checkpoint_codec.hpp"

namespace anchorage {

void disk_store::commit_checkpoint(const disk_file_job& f, const checkpoint_meta& meta, std::uint64_t epoch,
                                   const disk_file_result& result, disk_write_report& r) {
  const std::string path = join_path(f.dir, f.name);
  if (!result) {
    discard_failed(f.id, path, result, r);
    return;
  }
  if (epoch != index_.epoch() ||
      !index_.add_checkpoint(meta.key_hash, f.line, *result, clock_.now_s(), path)) {
    env_.remove(path);
    return;
  }
  r.bytes_written += *result;
  counts_.bytes_written += *result;
  ++counts_.files_written;
  // Renamed and durable: the older points of the same generation go now, not before.
  for (std::uint64_t oid : index_.older_checkpoints(meta.key_hash, f.line)) {
    drop(oid);
    ++r.superseded;
    ++counts_.superseded;
  }
}

disk_write_plan disk_store::prepare_checkpoint(const staged_write& w, const checkpoint_meta& meta) {
  disk_write_plan p =
      planner_.plan_checkpoint(w, meta, env_.free_bytes(folder()).value_or(~std::uint64_t{0} / 4));
  make_room(p);
  return p;
}

expected<checkpoint_meta> disk_store::restore_checkpoint(const checkpoint_hit& hit,
                                                         const std::vector<token_id>& prompt,
                                                         state_adapter& into) {
  auto read = read_checkpoint_verified(hit, prompt);
  if (!read) return read.error();
  apply_checkpoint_verified(*read, into);
  return std::move(read->read.meta);
}

expected<verified_checkpoint> disk_store::read_checkpoint_verified(const checkpoint_hit& hit,
                                                                   const std::vector<token_id>& prompt) {
  const std::uint64_t id = disk_names::checkpoint_id(hit.key_hash, hit.rows);
  const disk_checkpoint_entry* c = index_.checkpoint(id);
  if (!c) {
    ++counts_.restore_failure_reasons.missing;
    return status::failure("no such checkpoint");
  }
  const disk_read_file file{*index_.path(id), static_cast<std::size_t>(c->bytes)};
  disk_read_failure failure;
  auto read = reader_.read_checkpoint(file, prompt, hit.key_hash, failure);
  if (!read) {
    if (failure.gone)
      ++counts_.restore_failure_reasons.missing;
    else
      counts_.restore_failure_reasons.count(failure.fault);
    drop(id);
    return read.error();
  }
  counts_.bytes_read += file.bytes;
  ++counts_.hits;
  index_.touch(id);
  env_.set_modified_s(file.path, clock_.now_s());
  verified_checkpoint out;
  out.read = std::move(*read);
  out.bytes_read = file.bytes;
  return out;
}

void disk_store::apply_checkpoint_verified(const verified_checkpoint& read, state_adapter& into) {
  apply_checkpoint(into, read.read);
}

std::size_t disk_store::remove_checkpoints(std::uint64_t key_hash) {
  std::size_t n = 0;
  for (std::uint64_t id : index_.checkpoints_of(key_hash)) n += drop(id);
  return n;
}

}  // namespace anchorage
