#include "runtime/text/template/prompt_images.hpp"

#include <memory>
#include <string>
#include <utility>

#include "runtime/image/image_digest.hpp"
#include "runtime/image/image_preprocess.hpp"
#include "runtime/image/image_rows.hpp"

namespace anchorage {
namespace {

struct image_part_ref {
  const content_part* part;
  std::string param;  // messages[i].content[j]
};

api_error bad(std::string param, std::string message) {
  return api_error{400, "invalid_request_error", std::move(message), std::move(param)};
}

}  // namespace

std::optional<api_error> expand_images(const std::vector<chat_message>& messages,
                                       const image_processor_config& cfg, token_id image_pad,
                                       std::vector<std::int32_t>& prompt, std::vector<prompt_image>& images) {
  std::vector<image_part_ref> parts;
  for (std::size_t i = 0; i < messages.size(); ++i)
    for (std::size_t j = 0; j < messages[i].parts.size(); ++j)
      if (messages[i].parts[j].what == content_part::kind::image)
        parts.push_back({&messages[i].parts[j],
                         "messages[" + std::to_string(i) + "].content[" + std::to_string(j) + "]"});
  std::size_t pads = 0;
  for (std::int32_t t : prompt) pads += t == image_pad ? 1 : 0;
  if (pads != parts.size()) {
    return bad("messages", "the rendered prompt holds " + std::to_string(pads) +
                               " <|image_pad|> tokens for " + std::to_string(parts.size()) +
                               " images: text may not spell the image placeholder token itself");
  }
  if (parts.empty()) return std::nullopt;

  std::vector<std::int32_t> out;
  out.reserve(prompt.size());
  std::size_t k = 0;
  for (std::int32_t t : prompt) {
    if (t != image_pad) {
      out.push_back(t);
      continue;
    }
    const image_part_ref& ref = parts[k++];
    if (!ref.part->image) return bad(ref.param, ref.param + ": the image's pixels are missing");
    expected<image_patches> patches = preprocess(*ref.part->image, cfg);
    if (!patches) return bad(ref.param, ref.param + ": " + patches.error().error());
    const image_grid grid{patches->grid_h / patches->merge_size, patches->grid_w / patches->merge_size};
    if (grid.rows_h > image_max_grid_side || grid.rows_w > image_max_grid_side) {
      return bad(ref.param, ref.param + ": the image's grid of " + std::to_string(grid.rows_h) + " x " +
                                std::to_string(grid.rows_w) + " rows passes the limit of " +
                                std::to_string(image_max_grid_side) + " a side");
    }
    const image_digest digest = digest_of(*patches, image_kind::image);
    prompt_image image;
    image.start = out.size();
    image.grid_t = patches->grid_t;
    image.grid_h = patches->grid_h;
    image.grid_w = patches->grid_w;
    image.merge = patches->merge_size;
    image.digest_lo = digest.lo;
    image.digest_hi = digest.hi;
    const std::vector<token_id> ids = image_row_ids(digest, grid);
    out.insert(out.end(), ids.begin(), ids.end());
    image.patches = std::make_shared<const std::vector<float>>(std::move(patches->values));
    images.push_back(std::move(image));
  }
  prompt = std::move(out);
  return std::nullopt;
}

}  // namespace anchorage
