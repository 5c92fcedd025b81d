#include "runtime/disk/disk_staging.hpp"

#include <algorithm>

#include "runtime/disk/staged_state.hpp"

namespace anchorage {
namespace {

void drop_above(staged_write& w, std::size_t top) {
  w.chunks.erase(std::remove_if(w.chunks.begin(), w.chunks.end(), [top](std::size_t b) { return b > top; }),
                 w.chunks.end());
  w.anchors.erase(std::remove_if(w.anchors.begin(), w.anchors.end(),
                                 [top](const staged_anchor& a) { return a.line > top; }),
                  w.anchors.end());
  w.tokens.resize(std::min(w.tokens.size(), top));
}

}  // namespace

disk_staging::disk_staging(const state_layout& layout, std::uint64_t stage_bytes)
    : layout_(layout), limit_(stage_bytes), grid_(static_cast<std::size_t>(layout.grid)) {}

void disk_staging::begin(const std::vector<token_id>& served, const disk_write_lines& lines) {
  staging_.reset();
  lines_ = lines;
  passed_ = 0;
  if (lines_.chunks.empty()) return;
  staging_ = std::make_unique<disk_submission>();
  const std::size_t top = std::min(served.size(), lines_.chunks.back());
  staging_->write.tokens.assign(served.begin(), served.begin() + static_cast<long>(top));
  staging_->write.chunks = lines_.chunks;
}

void disk_staging::after_prefill_step(const state_adapter& state) {
  const std::size_t len = state.valid_length();
  // Grid lines, and the lines right after an image (the engine ends a chunk there too).
  if (!staging_ || (len % grid_ != 0 && !std::binary_search(lines_.chunks.begin(), lines_.chunks.end(), len)))
    return;
  passed_ = std::max(passed_, len);
  if (std::binary_search(lines_.anchors.begin(), lines_.anchors.end(), len)) {
    const std::uint64_t need = staged_section_bytes(layout_);
    if (staged_bytes_ + staging_->staged_bytes + need > limit_) {
      ++stage_refusals_;  // this anchor is not written; the chunks still are
    } else {
      staging_->write.anchors.push_back(stage_sections(state, len));
      staging_->staged_bytes += need;
    }
  }
  if (len >= lines_.chunks.back()) stage_rows_and_queue(state, lines_.chunks.back());
}

void disk_staging::finish(const state_adapter& state) {
  if (!staging_) return;
  std::size_t top = 0;
  for (std::size_t b : lines_.chunks)
    if (b <= passed_ && b <= state.valid_length()) top = b;
  if (top == 0) return staging_.reset();
  stage_rows_and_queue(state, top);
}

void disk_staging::stage_rows_and_queue(const state_adapter& state, std::size_t top) {
  staged_write& w = staging_->write;
  drop_above(w, top);
  // Only the rows of chunks the disk lacked at planning are copied.
  const std::size_t lo = std::min(lines_.rows_from, top);
  std::uint64_t need = staged_row_bytes(layout_, lo, top);
  if (staged_bytes_ + staging_->staged_bytes + need > limit_) {
    // What fits: the lines up to the highest whose rows the pool can take; anchors above go.
    ++stage_refusals_;
    const std::uint64_t used = staged_bytes_ + staging_->staged_bytes;
    const std::uint64_t room = limit_ > used ? limit_ - used : 0;
    const std::size_t row_bytes = std::max<std::size_t>(1, layout_.row_bytes());
    const std::size_t fit = lo + static_cast<std::size_t>(room / row_bytes) / grid_ * grid_;
    if (fit <= lo) return staging_.reset();
    top = std::min(top, fit);
    const std::size_t before = w.anchors.size();
    drop_above(w, top);
    staging_->staged_bytes -= (before - w.anchors.size()) * staged_section_bytes(layout_);
    need = staged_row_bytes(layout_, lo, top);
  }
  stage_rows(w, state, lo, top);
  staging_->staged_bytes += need;
  staged_bytes_ += staging_->staged_bytes;
  ++submissions_;
  ready_.push_back(disk_submission_ptr(staging_.release()));
}

bool disk_staging::stage_checkpoint(const state_adapter& state, const checkpoint_meta& meta) {
  const std::size_t rows = state.valid_length();
  if (meta.tokens.size() != rows + 1) return false;
  const std::uint64_t need = staged_row_bytes(layout_, 0, rows) + staged_section_bytes(layout_);
  if (staged_bytes_ + need > limit_) {
    ++stage_refusals_;
    return false;
  }
  auto s = std::make_shared<disk_submission>();
  s->write.tokens = meta.tokens;
  stage_rows(s->write, state, 0, rows);
  s->write.anchors.push_back(stage_sections(state, rows));
  s->checkpoint = meta;
  s->staged_bytes = need;
  staged_bytes_ += need;
  ++checkpoints_staged_;
  ready_.push_back(std::move(s));
  return true;
}

std::vector<disk_submission_ptr> disk_staging::take_submissions() {
  std::vector<disk_submission_ptr> out;
  out.swap(ready_);
  return out;
}

void disk_staging::released(std::uint64_t bytes) { staged_bytes_ -= std::min(staged_bytes_, bytes); }

void disk_staging::clear() {
  staging_.reset();
  lines_ = disk_write_lines{};
  // Not handed out yet: dropped here, their bytes with them.
  for (const auto& s : take_submissions()) released(s->staged_bytes);
}

disk_staging_stats disk_staging::stats() const {
  disk_staging_stats s;
  s.staged_bytes = staged_bytes_;
  s.stage_limit_bytes = limit_;
  s.stage_refusals = stage_refusals_;
  s.submissions = submissions_;
  s.checkpoints_staged = checkpoints_staged_;
  return s;
}

}  // namespace anchorage
