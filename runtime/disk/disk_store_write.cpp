#include "runtime/disk/disk_store.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/disk/disk_codec.hpp"

namespace anchorage {

// ---- Planning ---------------------------------------------------------------------------------

void disk_store::make_room(disk_write_plan& p) {
  if (!p.refused) {
    for (std::uint64_t id : p.evictions)
      if (index_.contains(id)) counts_.evictions += static_cast<long>(drop(id));
    planner_.confirm_room(p, env_.free_bytes(folder()).value_or(~std::uint64_t{0} / 4));
  }
  if (p.refused) {
    ++counts_.refusals;
    return;
  }
  index_.add_pending(p.pending);
}

disk_write_plan disk_store::prepare(const staged_write& w) {
  disk_write_plan p = planner_.plan(w, env_.free_bytes(folder()).value_or(~std::uint64_t{0} / 4));
  make_room(p);
  if (p.refused) return p;
  for (const auto& f : p.files) index_.mark_in_flight(f.id);
  return p;
}

// ---- Encoding and writing (no index) ----------------------------------------------------------

namespace {

// A file of the plan as pieces: a head (header, ids) encoded over the staged bytes, then the
// staged rows or sections themselves. Throws std::out_of_range when what it needs is not staged.
std::vector<file_piece> encode_file(const state_layout& layout, const staged_write& w,
                                    const disk_write_plan& plan, const disk_file_job& f,
                                    std::vector<unsigned char>& head) {
  const std::size_t grid = static_cast<std::size_t>(layout.grid);
  std::vector<file_piece> pieces;
  if (f.checkpoint) {
    head = encode_checkpoint(staged_state(layout, w, &w.anchors.at(0)), plan.checkpoint.value());
  } else if (f.anchor) {
    const staged_anchor& a = w.anchors.at(f.anchor_index);
    std::vector<const unsigned char*> sections;
    for (std::size_t i = 0; i < layout.sections.size(); ++i) {
      if (i >= a.sections.size() || a.sections[i].size() != layout.sections[i].bytes)
        throw std::out_of_range("section " + std::to_string(i) + " of line " + std::to_string(a.line));
      sections.push_back(a.sections[i].data());
    }
    head = encode_anchor_head(layout, f.line, chunk_hashes(w.tokens, f.line, grid), sections);
    for (std::size_t i = 0; i < sections.size(); ++i)
      pieces.push_back({sections[i], layout.sections[i].bytes});
  } else {
    const std::size_t r = disk_format::chunk_rows(f.line, grid);
    if (f.line < r || f.line - r < w.row_lo || f.line > w.row_hi || w.rows.size() != layout.views.size())
      throw std::out_of_range("rows below line " + std::to_string(f.line) + " are not staged");
    std::vector<const unsigned char*> rows;
    for (std::size_t v = 0; v < layout.views.size(); ++v)
      rows.push_back(w.rows[v].data() + (f.line - r - w.row_lo) * layout.views[v].bytes_per_token);
    head = encode_chunk_head(layout, f.line, w.tokens, rows);
    for (std::size_t v = 0; v < rows.size(); ++v)
      pieces.push_back({rows[v], r * layout.views[v].bytes_per_token});
  }
  pieces.insert(pieces.begin(), {head.data(), head.size()});
  return pieces;
}

}  // namespace

std::vector<disk_file_result> execute_disk_write(file_env& env, const state_layout& layout,
                                                 const staged_write& w, const disk_write_plan& plan) {
  std::vector<disk_file_result> out;
  // File i is on the env's ring (submitted, its bytes copied) while file i + 1 is encoded here,
  // so the encoding's crcs overlap the I/O; the wait for file i comes before file i + 1 is
  // submitted, so a failure stops everything above it.
  io_ticket writing;
  std::uint64_t writing_bytes = 0;
  auto collect = [&]() {
    const file_result fr = env.wait_write(writing);
    writing = io_ticket{};
    out.push_back(fr ? disk_file_result(writing_bytes) : disk_file_result(status::failure(fr.message)));
    return fr.ok;
  };
  std::vector<unsigned char> head;
  for (const auto& f : plan.files) {
    std::vector<file_piece> pieces;
    try {
      pieces = encode_file(layout, w, plan, f, head);
    } catch (const std::exception& e) {
      if (writing && !collect()) return out;
      out.push_back(status::failure(std::string("not staged: ") + e.what()));
      return out;
    }
    if (writing && !collect()) return out;  // the file below failed: nothing above
    if (f.anchor || f.checkpoint) {
      if (const file_result d = env.make_dir(f.dir); !d) {
        out.push_back(status::failure(d.message));
        return out;
      }
    }
    writing_bytes = 0;
    for (const auto& p : pieces) writing_bytes += p.second;
    writing = env.submit_write_atomic(f.dir, f.name, pieces);  // copies the pieces
  }
  if (writing) collect();
  return out;
}

// ---- Committing -------------------------------------------------------------------------------

void disk_store::discard_failed(std::uint64_t id, const std::string& path, const disk_file_result& result,
                                disk_write_report& r) {
  r.failed = true;
  r.error = result.error().error();
  ++counts_.write_failures;
  warn_once(r.error);
  // A failure after the rename (the directory's fsync) leaves the file: not durable, not ours.
  if (!index_.path(id)) env_.remove(path);
}

disk_write_report disk_store::commit(const staged_write& w, const disk_write_plan& plan,
                                     const std::vector<disk_file_result>& results) {
  disk_write_report r;
  r.refused = plan.refused;
  r.chunks_present = plan.chunks_present;
  if (plan.refused) r.error = plan.error;
  index_.release_pending(plan.pending);
  const std::int64_t now = clock_.now_s();
  const std::vector<std::uint64_t> hashes =
      plan.checkpoint ? std::vector<std::uint64_t>{} : planner_.line_hashes(w);
  for (std::size_t i = 0; i < plan.files.size(); ++i) {
    const disk_file_job& f = plan.files[i];
    if (f.checkpoint) {
      if (i < results.size()) commit_checkpoint(f, *plan.checkpoint, plan.epoch, results[i], r);
      continue;
    }
    index_.release_in_flight(f.id);
    if (i >= results.size()) continue;  // not written: an earlier file failed
    const std::string path = join_path(f.dir, f.name);
    if (!results[i]) {
      discard_failed(f.id, path, results[i], r);
      continue;
    }
    const std::uint64_t bytes = *results[i];
    // Indexed only when everything it stands on still is (an eviction, a failed restore or a
    // clear may have taken a part meanwhile); otherwise it could never be used.
    const std::size_t below = f.line - disk_format::chunk_rows(f.line, grid_);  // a chunk's parent line
    const bool usable =
        plan.epoch == index_.epoch() &&
        (f.anchor
             ? index_.add_anchor(w.ns, chunk_hashes(w.tokens, f.line, grid_), bytes, now, path)
             : index_.add_chunk(f.id, f.line, below > 0 ? hashes[below / grid_ - 1] : 0, bytes, now, path));
    if (!usable) {
      env_.remove(path);
      continue;
    }
    r.bytes_written += bytes;
    counts_.bytes_written += bytes;
    ++counts_.files_written;
    if (!f.anchor) {
      ++r.chunks_written;
      continue;
    }
    ++r.anchors_written;
    if (!w.supersede) continue;
    // Only once the new anchor is durable: the namespace's anchors on its chain below it.
    for (std::uint64_t oid : index_.superseded_by(f.id)) {
      drop(oid);
      ++r.superseded;
      ++counts_.superseded;
    }
  }
  return r;
}

disk_write_report disk_store::write(const staged_write& w) {
  const disk_write_plan plan = prepare(w);
  return commit(w, plan, execute_disk_write(env_, layout_, w, plan));
}

bool disk_store::store(const std::vector<token_id>& tokens, const state_adapter& from,
                       const std::string& ns) {
  const std::size_t line = from.valid_length();
  if (line == 0 || line % grid_ != 0 || tokens.size() < line)
    throw std::invalid_argument("disk_store::store: the state is at " + std::to_string(line) +
                                ", not a line of the grid within the " + std::to_string(tokens.size()) +
                                " tokens");
  staged_write w;
  w.tokens.assign(tokens.begin(), tokens.begin() + static_cast<long>(line));
  w.ns = ns;
  w.supersede = true;
  for (std::size_t b = grid_; b <= line; b += grid_) w.chunks.push_back(b);
  // Only the rows whose chunk is missing are copied.
  std::size_t lo = line;
  for (std::size_t b = grid_; b <= line; b += grid_)
    if (!index_.has_chunk(prefix_hash(w.tokens.data(), b))) {
      lo = b - grid_;
      break;
    }
  stage_rows(w, from, lo, line);
  w.anchors.push_back(stage_sections(from, line));
  const disk_write_report r = write(w);
  if (r.refused || r.failed) return false;
  return index_.has_anchor(disk_names::anchor_id(ns, prefix_hash(w.tokens.data(), line)));
}

}  // namespace anchorage
