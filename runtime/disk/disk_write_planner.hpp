#pragma once
// What a staged write of the durable store needs, decided without I/O (runtime/disk/disk_store.hpp
// runs the plan): which files to write, in which order, how many bytes they take, and which
// entries go first to make room for them. Over a disk_index it only reads; testable with no file
// (tests/disk/test_disk_write_planner.cpp).
//
// The rules:
//   - chunks in ascending line order, each one not indexed and not in flight; a hole below (a
//     line neither known nor planned) ends the chunks, since nothing above it could be used; a
//     tail chunk (a line off the grid, right after an image) stands on the grid line below it,
//     and a hole there skips it alone;
//   - then each anchor whose whole chain is known or planned, not indexed and not in flight;
//   - the bytes from the layout alone (chunk_file_bytes, anchor_file_bytes), before anything is
//     encoded;
//   - an entry over the entry cap (or the budget) is refused;
//   - room: disk_eviction's plan for the bytes plus the writes in flight, never evicting the
//     chunks the write stands on; once the store has deleted those, confirm_room() refuses the
//     write when the budget or the free-space floor still has no room.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_index.hpp"
#include "runtime/disk/disk_names.hpp"
#include "runtime/disk/staged_state.hpp"
#include "runtime/engine/state_adapter.hpp"

namespace anchorage {

// One file of a write, as the planner decided it.
struct disk_file_job {
  bool anchor = false;      // an anchor file; otherwise a chunk file (or the checkpoint)
  bool checkpoint = false;  // the plan's generation checkpoint
  std::size_t line = 0;
  std::size_t anchor_index = 0;  // which of the staged anchors (anchor files)
  std::string dir, name;
  std::uint64_t id = 0;  // the index id the file will have
};
// What a plan decided: the files to write, in order.
struct disk_write_plan {
  std::vector<disk_file_job> files;
  std::optional<checkpoint_meta> checkpoint;  // a checkpoint write: its meta (sections staged as
                                              // anchors[0], rows [0, rows) staged)
  std::size_t chunks_present = 0;
  std::uint64_t bytes = 0;
  std::vector<std::uint64_t> evictions;  // the ids to delete first, in order (room)
  std::uint64_t epoch = 0;               // the index's epoch when planned
  std::uint64_t pending = 0;             // bytes counted as in flight until commit()
  bool refused = false;
  std::string error;
};

// The budget a plan must fit.
struct disk_write_limits {
  std::uint64_t budget_bytes = 0;     // every file together (--disk-cache-gb)
  std::uint64_t entry_max_bytes = 0;  // one write's largest size; 0: the budget
  std::uint64_t min_free_bytes = 0;   // free space always left (--disk-free-gb)
};

class disk_write_planner {
 public:
  // Every reference must outlive the planner.
  disk_write_planner(const state_layout& layout, const disk_names& names, const disk_index& index,
                     disk_write_limits limits);

  // The files of `w`, their bytes and the evictions that make room, given the file system's
  // free bytes now. Refused (no files, the reason in `error`) for a namespace that is not
  // valid_ns or a write over the cap.
  disk_write_plan plan(const staged_write& w, std::uint64_t free_bytes) const;
  // The limits later plans fit (an operator's live setting); plans made before keep theirs.
  void set_limits(const disk_write_limits& limits) { limits_ = limits; }
  // The plan of one generation checkpoint staged in `w` (rows [0, rows), sections as
  // anchors[0], rows = meta.tokens.size() - 1). Refused when the whole state is not staged.
  disk_write_plan plan_checkpoint(const staged_write& w, const checkpoint_meta& meta,
                                  std::uint64_t free_bytes) const;
  // After the plan's evictions were deleted: refuses it (files cleared) when the budget or
  // `free_bytes_after` still leave no room for its bytes and the writes in flight; otherwise
  // sets its pending bytes.
  void confirm_room(disk_write_plan& p, std::uint64_t free_bytes_after) const;

  // The bytes a staged write would add: its chunks and anchors not indexed yet.
  std::uint64_t bytes_needed(const staged_write& w) const;
  // The prefix hash at every line the write's tokens reach (grid, 2 grid, ...), in one pass.
  std::vector<std::uint64_t> line_hashes(const staged_write& w) const;

 private:
  void plan_room(disk_write_plan& p, std::uint64_t free_bytes,
                 const std::unordered_set<std::uint64_t>& keep) const;
  // The key of `line` (a grid line's from `hashes`, line_hashes(w); one off the grid hashed) and
  // the chain an anchor there stands on.
  std::uint64_t key_at(const staged_write& w, const std::vector<std::uint64_t>& hashes,
                       std::size_t line) const;
  std::vector<std::uint64_t> chain_at(const staged_write& w, const std::vector<std::uint64_t>& hashes,
                                      std::size_t line) const;

  const state_layout& layout_;
  const disk_names& names_;
  const disk_index& index_;
  disk_write_limits limits_;
  std::size_t grid_;
};

}  // namespace anchorage
