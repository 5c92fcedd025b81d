// JPEG through TurboJPEG (libjpeg-turbo), the library Pillow decodes with, with Pillow's choices:
// the accurate integer IDCT and fancy upsampling (libjpeg's defaults), full size, no EXIF
// rotation; CMYK and YCCK read as CMYK with Adobe's inverted polarity and made RGB by Pillow's
// cmyk2rgb.
#include <turbojpeg.h>

#include <cstring>
#include <vector>

#include "runtime/image/image_decode_formats.hpp"

namespace anchorage::image_detail {

namespace {

class decompressor {
 public:
  decompressor() : handle_(tjInitDecompress()) {}
  ~decompressor() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }
  decompressor(const decompressor&) = delete;
  decompressor& operator=(const decompressor&) = delete;
  tjhandle get() const { return handle_; }

 private:
  tjhandle handle_;
};

// libjpeg's own words for data that ends before the image does (JWRN_JPEG_EOF): TurboJPEG
// reports it as a warning after filling the rest grey; Pillow refuses such a file as truncated.
// Other warnings (extraneous bytes, a bad Huffman code) leave an image that Pillow returns too.
bool ended_early(const char* message) {
  return std::strstr(message, "Premature end of JPEG file") != nullptr;
}

// Pillow's cmyk2rgb on Adobe-inverted samples (Pillow's "CMYK;I" raw mode): c, m, y, k are
// 255 minus what libjpeg gives; each channel is (255 - k) - round(c * (255 - k) / 255).
std::uint8_t cmyk_channel(std::uint8_t stored_c, std::uint8_t stored_k) {
  const int c = 255 - stored_c;
  const int nk = stored_k;  // 255 - (255 - stored_k)
  const int t = c * nk + 128;
  const int v = nk - ((t + (t >> 8)) >> 8);
  return static_cast<std::uint8_t>(v < 0 ? 0 : v);
}

}  // namespace

expected<rgb_image> decode_jpeg(const std::uint8_t* data, std::size_t size, const image_limits& limits) {
  const decompressor tj;
  if (tj.get() == nullptr) return status::failure("JPEG: TurboJPEG could not start");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.get(), data, static_cast<unsigned long>(size), &width, &height, &subsampling,
                          &colorspace) != 0) {
    return truncated_or_corrupt(image_format::jpeg, tjGetErrorStr2(tj.get()));
  }
  // libjpeg reads a header cut short as one without a frame: no size. (A frame of height 0, whose
  // height a DNL marker would give later, libjpeg cannot decode either.)
  if (width <= 0 || height <= 0) {
    return truncated_or_corrupt(image_format::jpeg, "the data ends before the frame header (SOF)");
  }
  if (status s = check_image_size(image_format::jpeg, static_cast<std::uint64_t>(width),
                                  static_cast<std::uint64_t>(height), limits);
      !s) {
    return s;
  }
  // TJFLAG_LIMITSCANS: a progressive JPEG of more than 500 scans is refused (it costs a scan's
  // work per scan: a few kilobytes could cost minutes).
  const int flags = TJFLAG_ACCURATEDCT | TJFLAG_LIMITSCANS;
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  rgb_image image = blank_image(static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(height));
  std::vector<std::uint8_t> samples(cmyk ? image.rgb.size() / 3 * 4 : 0);
  std::uint8_t* out = cmyk ? samples.data() : image.rgb.data();
  const int pixel_format = cmyk ? TJPF_CMYK : TJPF_RGB;
  if (tjDecompress2(tj.get(), data, static_cast<unsigned long>(size), out, width, 0, height, pixel_format,
                    flags) != 0) {
    const char* message = tjGetErrorStr2(tj.get());
    if (tjGetErrorCode(tj.get()) != TJERR_WARNING || ended_early(message)) {
      return truncated_or_corrupt(image_format::jpeg, message);
    }
  }
  if (cmyk) {
    for (std::size_t p = 0, n = image.rgb.size() / 3; p < n; ++p) {
      const std::uint8_t* s = samples.data() + 4 * p;
      std::uint8_t* d = image.rgb.data() + 3 * p;
      d[0] = cmyk_channel(s[0], s[3]);
      d[1] = cmyk_channel(s[1], s[3]);
      d[2] = cmyk_channel(s[2], s[3]);
    }
  }
  return image;
}

}  // namespace anchorage::image_detail
