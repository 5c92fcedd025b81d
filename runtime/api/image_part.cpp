#include "runtime/api/image_part.hpp"

#include <memory>
#include <string_view>
#include <utility>

#include "runtime/image/data_uri.hpp"
#include "runtime/image/image_decode.hpp"

namespace anchorage::request_fields {
namespace {

const image_limits limits;

// The decoded image into `out`, or a 400 naming `param`.
failure decoded(const std::vector<std::uint8_t>& bytes, const std::string& param, content_part& out) {
  expected<rgb_image> image = decode_image(bytes.data(), bytes.size(), limits);
  if (!image) return invalid(param, param + ": " + image.error().error());
  out.what = content_part::kind::image;
  out.text.clear();
  out.image = std::make_shared<const rgb_image>(std::move(*image));
  return std::nullopt;
}

}  // namespace

failure read_image_url(const json& url, const std::string& param, content_part& out) {
  if (!url.is_string()) return wrong_type(param, "a string (the image as a data URI)", url);
  const std::string& text = url.get_ref<const std::string&>();
  if (!is_data_uri(text)) {
    return invalid(param, param +
                              ": this server fetches no image URLs; send the image inline as a base64 data "
                              "URI (data:image/png;base64,...)");
  }
  expected<data_uri> uri = parse_data_uri(text, limits.max_bytes);
  if (!uri) return invalid(param, param + ": " + uri.error().error());
  return decoded(uri->bytes, param, out);
}

failure read_image_source(const json& source, const std::string& param, content_part& out) {
  if (!source.is_object()) return wrong_type(param, "an object (the image's source)", source);
  const json* type = field(source, "type");
  if (!type || !type->is_string())
    return invalid(param + ".type", param + ".type must be a string: base64 is the one this server reads");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "url") {
    return invalid(param + ".url", param +
                                       ": this server fetches no image URLs; send the image as a base64 "
                                       "source ({\"type\": \"base64\", \"media_type\": ..., \"data\": ...})");
  }
  if (t != "base64") {
    return invalid(param + ".type", param + ".type '" + t + "' is not supported: base64 sources are");
  }
  const json* data = field(source, "data");
  if (!data || !data->is_string()) return invalid(param + ".data", param + ".data must be a base64 string");
  const std::string& text = data->get_ref<const std::string&>();
  if (text.size() > base64_length(limits.max_bytes)) {
    return invalid(param + ".data", param + ".data holds more than the " +
                                        std::to_string(limits.max_bytes >> 20) + " MiB an image may have");
  }
  expected<std::vector<std::uint8_t>> bytes = decode_base64(text);
  if (!bytes) return invalid(param + ".data", param + ".data: " + bytes.error().error());
  return decoded(*bytes, param, out);
}

}  // namespace anchorage::request_fields
