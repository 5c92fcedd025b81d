// The image decoder (runtime/image/image_decode.hpp) and the data URI parser
// (runtime/image/data_uri.hpp) on any bytes, three ways: the bytes as an image file; the bytes as
// the text of a data URI, whose data is decoded when it parses; the bytes base64-encoded into a
// data URI, which must parse back to them. Neither throws; a failure says why; a decoded image
// keeps the limits and holds width * height * 3 bytes.
//
// The limits are smaller than a server's (4 MP, 4096 a side) so that an input declaring the
// largest image allowed still decodes in milliseconds: the checks against the limits are the same
// code at any value, and tests/image/test_image_decode.cpp tests them at the defaults.
#include <algorithm>
#include <exception>
#include <string>

#include "fuzz/fuzz_support.hpp"
#include "runtime/image/data_uri.hpp"
#include "runtime/image/image_decode.hpp"

using namespace anchorage;

namespace {

image_limits fuzz_limits() {
  image_limits limits;
  limits.max_bytes = std::size_t{1} << 20;
  limits.max_pixels = std::uint64_t{1} << 22;
  limits.max_side = 4096;
  return limits;
}

void check_decode(const std::uint8_t* data, std::size_t size, const image_limits& limits) {
  try {
    const auto decoded = decode_image(data, size, limits);
    if (!decoded) {
      fuzz::check(!decoded.error().error().empty(), "a failed decode says why");
      return;
    }
    const rgb_image& image = *decoded;
    fuzz::check(image.width > 0 && image.height > 0, "a decoded image has both sides");
    fuzz::check(std::uint64_t{image.width} * image.height <= limits.max_pixels,
                "a decoded image keeps max_pixels");
    fuzz::check(image.width <= limits.max_side && image.height <= limits.max_side,
                "a decoded image keeps max_side");
    fuzz::check(image.rgb.size() == std::size_t{image.width} * image.height * 3, "3 bytes a pixel");
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
}

std::string base64(const std::uint8_t* data, std::size_t size) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < size; i += 3) {
    const std::size_t n = size - i < 3 ? size - i : 3;
    std::uint32_t group = std::uint32_t{data[i]} << 16;
    if (n > 1) group |= std::uint32_t{data[i + 1]} << 8;
    if (n > 2) group |= data[i + 2];
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? alphabet[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const image_limits limits = fuzz_limits();
  check_decode(data, size, limits);
  try {
    // The bytes as a client's data URI.
    const auto uri = parse_data_uri(fuzz::as_text(data, size), limits.max_bytes);
    if (uri) {
      fuzz::check(uri->bytes.size() <= limits.max_bytes, "a parsed data URI keeps max_bytes");
      check_decode(uri->bytes.data(), uri->bytes.size(), limits);
    } else {
      fuzz::check(!uri.error().error().empty(), "a refused data URI says why");
    }
    // The bytes inside a well-formed data URI: they come back as they went in.
    if (size > 0 && size <= limits.max_bytes) {
      const auto wrapped = parse_data_uri("data:image/png;base64," + base64(data, size), limits.max_bytes);
      fuzz::check(wrapped.has_value(), "a well-formed data URI parses");
      fuzz::check(wrapped->media_type == "image/png", "its media type is kept");
      fuzz::check(
          wrapped->bytes.size() == size && std::equal(wrapped->bytes.begin(), wrapped->bytes.end(), data),
          "its bytes come back as they were encoded");
    }
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}
