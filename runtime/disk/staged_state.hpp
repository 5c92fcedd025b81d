#pragma once
// What the board copies out of the engine for the disk tier's write-behind
// (docs/DISK_TIER.md, "Write-behind"): the sections at each anchor line as the prefill passes it, the rows
// after the prefill. Host bytes the engine no longer owns, so the disk writer can encode and write them while
// the next request runs.
#include <cstddef>
#include <string>
#include <vector>

#include "runtime/engine/state_adapter.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

// The sections at one line.
struct staged_anchor {
  std::size_t line = 0;
  std::vector<std::vector<unsigned char>> sections;  // layout order
};

// One write of the disk tier: host copies of rows [row_lo, row_hi) of every view, the sections
// at each anchor line, and which chunk files to write.
struct staged_write {
  std::vector<token_id> tokens;                  // at least up to the highest line written
  std::string ns;                                // the anchors' namespace
  std::vector<std::size_t> chunks;               // lines whose chunk file to write (skipped when on disk)
  std::vector<staged_anchor> anchors;            // ascending lines
  std::size_t row_lo = 0, row_hi = 0;            // the rows staged
  std::vector<std::vector<unsigned char>> rows;  // per view: (row_hi - row_lo) * bytes_per_token
  bool supersede = false;                        // drop the namespace's anchors each new anchor extends

  // Host bytes held: what the staging pool is charged.
  std::size_t bytes() const;
};

// Copies every section of `from` (which is at `line`) out.
staged_anchor stage_sections(const state_adapter& from, std::size_t line);
// Copies rows [lo, hi) of every view of `from` into w (row_lo, row_hi, rows). Throws
// std::out_of_range past the views' capacity.
void stage_rows(staged_write& w, const state_adapter& from, std::size_t lo, std::size_t hi);
// The bytes stage_sections and stage_rows will take, asked before anything is copied.
std::size_t staged_section_bytes(const state_layout& layout);
std::size_t staged_row_bytes(const state_layout& layout, std::size_t lo, std::size_t hi);

// A read-only state_adapter over a staged write: the rows staged and, when `anchor` is given,
// its sections; valid length = the anchor's line, or row_hi without one. What the codec encodes
// from. Writes (copy_*_in, set_valid_length) throw std::logic_error; rows outside the staged
// range and sections without an anchor throw std::out_of_range.
class staged_state final : public state_adapter {
 public:
  staged_state(const state_layout& layout, const staged_write& w, const staged_anchor* anchor = nullptr)
      : layout_(layout), w_(w), anchor_(anchor) {}

  const state_layout& layout() const override { return layout_; }
  void copy_section_out(std::size_t section, void* dst) const override;
  void copy_section_in(std::size_t section, const void* src) override;
  void copy_rows_out(std::size_t view, std::size_t a, std::size_t b, void* dst) const override;
  void copy_rows_in(std::size_t view, std::size_t a, std::size_t b, const void* src) override;
  std::size_t valid_length() const override { return anchor_ ? anchor_->line : w_.row_hi; }
  void set_valid_length(std::size_t n) override;

 private:
  const state_layout& layout_;
  const staged_write& w_;
  const staged_anchor* anchor_;
};

}  // namespace anchorage
