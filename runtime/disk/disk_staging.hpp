#pragma once
// The staging half of the disk tier, on the engine's owner (the board): what a request's prefill
// copies out of the engine for the disk actor to write (seed §13.7, issue 6 item 4). The
// admission plan (disk_write_lines, the disk actor's disk_service::plan_writes) says which lines;
// begin() takes it, after_prefill_step() copies the sections at each anchor line as the prefill
// passes it and, once past the last line, the rows the disk lacks; finish() still stages the
// lines a prefill cut short passed. Generation checkpoints are staged whole.
//
// What leaves is a disk_submission (take_submissions()): host copies only, planned and written
// by the disk actor. Its bytes are charged to the staging pool until released() is told what
// the submission's reply released (or, on an error, its own staged_bytes). Nothing here waits
// for a write, and nothing here touches the disk.
//
// Not thread-safe: one owner (the board).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "protocol/disk_messages.hpp"
#include "runtime/core/token.hpp"
#include "runtime/disk/disk_service.hpp"
#include "runtime/engine/state_adapter.hpp"

namespace anchorage {

class disk_staging {
 public:
  disk_staging(const state_layout& layout, std::uint64_t stage_bytes);

  // A request's prefill begins over `served`, with the lines the disk admitted (empty: it
  // writes nothing). Drops any staging left over.
  void begin(const std::vector<token_id>& served, const disk_write_lines& lines);
  // After each prefill chunk (the state's valid length is where the prefill is).
  void after_prefill_step(const state_adapter& state);
  // The request is over: a prefill cut short still stages the lines it passed.
  void finish(const state_adapter& state);
  // The whole state of a decoding request (rows [0, rows) and the sections; meta.tokens =
  // prompt + output ids, the last pending, so rows = meta.tokens.size() - 1). False when refused
  // (the pool, or a state of another length).
  bool stage_checkpoint(const state_adapter& state, const checkpoint_meta& meta);

  // The submissions staged since the last call.
  std::vector<disk_submission_ptr> take_submissions();
  // A submission's reply came back (or failed): its bytes leave the pool.
  void released(std::uint64_t bytes);
  // A clear: the staging of the running request is dropped (what is out is released as its
  // replies come back).
  void clear();

  disk_staging_stats stats() const;
  std::uint64_t staged_bytes() const { return staged_bytes_; }
  // The lines of the running request (empty chunks when it writes nothing).
  const disk_write_lines& running_lines() const { return lines_; }

 private:
  void stage_rows_and_queue(const state_adapter& state, std::size_t top);

  const state_layout layout_;
  std::uint64_t limit_;
  std::size_t grid_;
  disk_write_lines lines_;
  std::unique_ptr<disk_submission> staging_;  // the running request's, until it leaves
  std::size_t passed_ = 0;                    // the highest line this prefill passed
  std::vector<disk_submission_ptr> ready_;
  std::uint64_t staged_bytes_ = 0;  // of the submissions handed out and not yet released
  long stage_refusals_ = 0, submissions_ = 0, checkpoints_staged_ = 0;
};

}  // namespace anchorage
