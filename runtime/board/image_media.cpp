#include "runtime/board/image_media.hpp"

#include <stdexcept>
#include <string>

#include "runtime/image/image_rows.hpp"

namespace anchorage {

prompt_media image_media(const std::vector<std::int32_t>& prompt, std::size_t from,
                         const std::vector<prompt_image>& images, vision_tower* tower, int d_model) {
  std::vector<image_span> spans;
  std::size_t i = 0;
  while (i < prompt.size()) {
    if (!is_image_row(prompt[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < prompt.size() && is_image_row(prompt[end])) ++end;
    const std::string where = "the image rows at " + std::to_string(i) + ".." + std::to_string(end);
    const auto key = image_key_of_rows(prompt.data() + i, end - i);
    if (!key || key->grid.rows() != end - i) throw std::invalid_argument(where + " are no image's");
    image_span s;
    s.start = i;
    s.grid_h = key->grid.rows_h;
    s.grid_w = key->grid.rows_w;
    if (end > from) {
      const prompt_image* image = nullptr;
      for (const prompt_image& p : images)
        if (p.digest_lo == key->digest.lo && p.digest_hi == key->digest.hi) image = &p;
      if (!image) throw std::invalid_argument(where + " belong to no image of the request");
      if (!tower) throw std::invalid_argument("the model has no vision tower to read " + where);
      if (tower->config().out_hidden_size != d_model)
        throw std::invalid_argument("the vision tower's output width " +
                                    std::to_string(tower->config().out_hidden_size) + " is not the model's " +
                                    std::to_string(d_model));
      s.embeddings = tower->embeddings(*image);
    }
    spans.push_back(std::move(s));
    i = end;
  }
  return prompt_media(std::move(spans), d_model);
}

}  // namespace anchorage
