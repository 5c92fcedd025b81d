#include "runtime/disk/disk_admission.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/core/image_end.hpp"
#include "runtime/disk/disk_codec.hpp"

namespace anchorage {

disk_admission::disk_admission(disk_admission_options options) : options_(options) {
  if (options_.capacity == 0) throw std::invalid_argument("disk_admission: capacity must be >= 1");
}

admission_plan disk_admission::plan(const std::vector<token_id>& tokens, const admission_request& req) {
  if (req.grid == 0) throw std::invalid_argument("disk_admission: grid must be > 0");
  admission_plan out;
  const std::size_t g = req.grid;
  const std::size_t n = tokens.size();
  if (n < options_.min_tokens) return out;

  const std::size_t full_last = n / g * g;                       // the prompt's own last line, taint aside
  const std::size_t clean = std::min(n, req.taint.value_or(n));  // no row at or above it is written
  const std::size_t last = clean / g * g;
  const std::size_t first = req.resume / g * g + g;  // the smallest line > resume

  // Rule 4: right after each image the prefill forwards, a chunk and an anchor (off the grid, a
  // tail chunk holding the rows from the grid line below).
  std::vector<std::size_t> image_ends;
  for (std::size_t p = req.resume + 1; p < n && p <= clean; ++p)
    if (image_ends_at(tokens, p)) image_ends.push_back(p);
  auto with_image_ends = [&](admission_plan& plan) {
    for (std::size_t p : image_ends) {
      plan.chunks.push_back(p);
      plan.anchors.push_back(p);
    }
    for (auto* v : {&plan.chunks, &plan.anchors}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    return plan;
  };
  if (full_last == 0 || first > last) return with_image_ends(out);

  // keys[i] is the key of line (i + 1) * g.
  const std::vector<std::uint64_t> keys = chunk_hashes(tokens, full_last, g);
  auto key_at = [&](std::size_t b) { return keys[b / g - 1]; };

  std::vector<std::size_t> anchors;
  std::size_t longest_twice = 0;
  for (std::size_t b = first; b <= last; b += g) {
    out.chunks.push_back(b);
    entry& e = touch(key_at(b));
    ++e.count;
    if (e.count >= 2) longest_twice = b;
    if (b + g <= full_last) {
      const std::uint64_t next = key_at(b + g);
      if (e.next && *e.next != next) anchors.push_back(b);  // rule 3: a branch at b
      e.next = next;
    }
  }
  if (longest_twice != 0) anchors.push_back(longest_twice);  // rule 1

  if (req.first_request && req.user_start) {  // rule 2
    std::size_t b = std::min(*req.user_start, n) / g * g;
    for (std::size_t k = 0; k < options_.first_request_anchors && b >= g; ++k, b -= g)
      if (b >= first && b <= last) anchors.push_back(b);
  }

  out.anchors = std::move(anchors);
  return with_image_ends(out);
}

std::size_t disk_admission::count_of(std::uint64_t key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? 0 : it->second->count;
}

void disk_admission::clear() {
  lru_.clear();
  index_.clear();
}

disk_admission::entry& disk_admission::touch(std::uint64_t key) {
  const auto it = index_.find(key);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return lru_.front();
  }
  if (index_.size() >= options_.capacity) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front(entry{key, 0, std::nullopt});
  index_.emplace(key, lru_.begin());
  return lru_.front();
}

}  // namespace anchorage
