#include "runtime/board/image_media.hpp"

#include <optional>
#include <stdexcept>
#include <string>

#include "runtime/image/image_rows.hpp"

namespace anchorage {
namespace {

// Calls f(start, end) for each run of image rows [start, end) of `prompt`, in order.
template <class F>
void for_each_image_run(const std::vector<std::int32_t>& prompt, F&& f) {
  std::size_t i = 0;
  while (i < prompt.size()) {
    if (!is_image_row(prompt[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < prompt.size() && is_image_row(prompt[end])) ++end;
    f(i, end);
    i = end;
  }
}

const prompt_image* image_of(const std::vector<prompt_image>& images, const image_digest& d) {
  const prompt_image* found = nullptr;
  for (const prompt_image& p : images)
    if (p.digest_lo == d.lo && p.digest_hi == d.hi) found = &p;
  return found;
}

}  // namespace

prompt_media image_media(const std::vector<std::int32_t>& prompt, std::size_t from,
                         const std::vector<prompt_image>& images, vision_tower* tower, int d_model,
                         const encoded_rows* ready) {
  std::vector<image_span> spans;
  for_each_image_run(prompt, [&](std::size_t i, std::size_t end) {
    const std::string where = "the image rows at " + std::to_string(i) + ".." + std::to_string(end);
    const auto key = image_key_of_rows(prompt.data() + i, end - i);
    if (!key || key->grid.rows() != end - i) throw std::invalid_argument(where + " are no image's");
    image_span s;
    s.start = i;
    s.grid_h = key->grid.rows_h;
    s.grid_w = key->grid.rows_w;
    if (end > from) {
      const prompt_image* image = image_of(images, key->digest);
      if (!image) throw std::invalid_argument(where + " belong to no image of the request");
      if (!tower) throw std::invalid_argument("the model has no vision tower to read " + where);
      if (tower->config().out_hidden_size != d_model)
        throw std::invalid_argument("the vision tower's output width " +
                                    std::to_string(tower->config().out_hidden_size) + " is not the model's " +
                                    std::to_string(d_model));
      if (ready)
        if (auto it = ready->find({image->digest_lo, image->digest_hi}); it != ready->end())
          s.embeddings = it->second;
      if (!s.embeddings) s.embeddings = tower->embeddings(*image);
    }
    spans.push_back(std::move(s));
  });
  return prompt_media(std::move(spans), d_model);
}

std::vector<prompt_image> images_forwarded(const std::vector<std::int32_t>& prompt, std::size_t from,
                                           const std::vector<prompt_image>& images,
                                           const encoded_rows& ready) {
  std::vector<prompt_image> out;
  for_each_image_run(prompt, [&](std::size_t i, std::size_t end) {
    if (end <= from) return;
    const auto key = image_key_of_rows(prompt.data() + i, end - i);
    if (!key) return;
    const prompt_image* image = image_of(images, key->digest);
    if (image && !ready.count({image->digest_lo, image->digest_hi})) out.push_back(*image);
  });
  return out;
}

}  // namespace anchorage
