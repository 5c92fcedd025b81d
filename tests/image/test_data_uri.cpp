// Data URIs and strict base64 (runtime/image/data_uri.hpp): what is a data URI, what parses, and
// the refusals a client sees: not base64, characters outside the alphabet, bad padding, too long.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/image/data_uri.hpp"

using namespace anchorage;

namespace {

// An encoder written here, independent of the decoder under test.
std::string base64(const std::vector<std::uint8_t>& in, bool pad = true) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, in.size() - i);
    std::uint32_t group = std::uint32_t(in[i]) << 16;
    if (n > 1) group |= std::uint32_t(in[i + 1]) << 8;
    if (n > 2) group |= in[i + 2];
    for (std::size_t k = 0; k < 4; ++k) {
      if (k <= n) {
        out += alphabet[(group >> (18 - 6 * k)) & 63];
      } else if (pad) {
        out += '=';
      }
    }
  }
  return out;
}

std::string parse_error(const std::string& uri, std::size_t max_bytes = 1 << 20) {
  auto parsed = parse_data_uri(uri, max_bytes);
  REQUIRE_FALSE(parsed.has_value());
  return parsed.error().error();
}

std::string base64_error(const std::string& text) {
  auto decoded = decode_base64(text);
  REQUIRE_FALSE(decoded.has_value());
  return decoded.error().error();
}

}  // namespace

TEST_CASE("is_data_uri: the data: scheme in any case, nothing else", "[image]") {
  CHECK(is_data_uri("data:image/png;base64,iVBORw0KGgo="));
  CHECK(is_data_uri("DATA:image/png;base64,AAAA"));
  CHECK(is_data_uri("Data:,"));
  CHECK(is_data_uri("data:"));
  CHECK_FALSE(is_data_uri("http://example.com/cat.png"));
  CHECK_FALSE(is_data_uri("https://example.com/data:image/png;base64,AAAA"));
  CHECK_FALSE(is_data_uri("file:///tmp/cat.png"));
  CHECK_FALSE(is_data_uri(" data:image/png;base64,AAAA"));
  CHECK_FALSE(is_data_uri("data"));
  CHECK_FALSE(is_data_uri(""));
}

TEST_CASE("parse_data_uri: the media type and the decoded bytes", "[image]") {
  const std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0xff};
  auto parsed = parse_data_uri("data:image/png;base64," + base64(png), 1024);
  REQUIRE(parsed.has_value());
  CHECK(parsed->media_type == "image/png");
  CHECK(parsed->bytes == png);

  // Parameters before base64, the media type's case, no media type, the scheme's case.
  parsed = parse_data_uri("data:Image/JPEG;name=cat.jpg;charset=x;BASE64,QUJD", 1024);
  REQUIRE(parsed.has_value());
  CHECK(parsed->media_type == "image/jpeg");
  CHECK(parsed->bytes == std::vector<std::uint8_t>{'A', 'B', 'C'});
  parsed = parse_data_uri("DATA:;base64,QQ==", 1024);
  REQUIRE(parsed.has_value());
  CHECK(parsed->media_type.empty());
  CHECK(parsed->bytes == std::vector<std::uint8_t>{'A'});
}

TEST_CASE("decode_base64 round-trips every length, padded or not", "[image]") {
  std::vector<std::uint8_t> data;
  for (int n = 0; n < 70; ++n) {
    for (bool pad : {true, false}) {
      INFO("length " << n << (pad ? " padded" : " unpadded"));
      auto decoded = decode_base64(base64(data, pad));
      REQUIRE(decoded.has_value());
      CHECK(*decoded == data);
    }
    data.push_back(static_cast<std::uint8_t>(n * 97 + 13));
  }
  std::vector<std::uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<std::uint8_t>(i);
  CHECK(*decode_base64(base64(all)) == all);
  CHECK(base64_length(0) == 0);
  CHECK(base64_length(1) == 4);
  CHECK(base64_length(3) == 4);
  CHECK(base64_length(4) == 8);
}

TEST_CASE("parse_data_uri: a data URI that is not base64 is refused saying so", "[image]") {
  CHECK_THAT(parse_error("data:image/png,%89PNG%0D%0A"),
             Catch::Contains("only base64 data URIs are accepted"));
  CHECK_THAT(parse_error("data:image/png;charset=utf-8,abc"), Catch::Contains("only base64"));
  CHECK_THAT(parse_error("data:image/png;base64x,QUJD"), Catch::Contains("only base64"));
  CHECK_THAT(parse_error("data:base64,QUJD"), Catch::Contains("only base64"));  // a media type, not the flag
  CHECK_THAT(parse_error("data:image/png;base64"), Catch::Contains("needs a ','"));
  CHECK_THAT(parse_error("data:image/png;base64,"), Catch::Contains("no data"));
  CHECK_THAT(parse_error("https://example.com/cat.png"), Catch::Contains("not a data URI"));
}

TEST_CASE("decode_base64 refuses any character outside the standard alphabet, naming it", "[image]") {
  CHECK_THAT(base64_error("QUJD QUJD"), Catch::Contains("a space at offset 4"));
  CHECK_THAT(base64_error("QUJD\nQUJD"), Catch::Contains("whitespace (0x0a) at offset 4"));
  CHECK_THAT(base64_error("QUJD\r\n"), Catch::Contains("whitespace (0x0d) at offset 4"));
  CHECK_THAT(base64_error("QUJD-_8A"), Catch::Contains("'-' at offset 4") && Catch::Contains("URL-safe"));
  CHECK_THAT(base64_error("QUJD%3D"), Catch::Contains("'%' at offset 4"));
  CHECK_THAT(base64_error("QU\x80JD"), Catch::Contains("the byte 0x80 at offset 2"));
  CHECK_THAT(base64_error(std::string("QU\0JD", 5)), Catch::Contains("the byte 0x00 at offset 2"));
  CHECK_THAT(base64_error("QQ==QUJD"), Catch::Contains("'=' at offset 2"));
  CHECK_THAT(parse_error("data:image/png;base64,iVBO Rw0K"),
             Catch::Contains("invalid base64: a space at offset 4"));
}

TEST_CASE("decode_base64 refuses padding that does not end a group and a lone last character", "[image]") {
  CHECK_THAT(base64_error("QQ="), Catch::Contains("padding"));
  CHECK_THAT(base64_error("QUJD="), Catch::Contains("padding"));
  CHECK_THAT(base64_error("QUI=="), Catch::Contains("padding"));
  CHECK_THAT(base64_error("QUJD===="), Catch::Contains("'=' at offset"));
  CHECK_THAT(base64_error("="), Catch::Contains("padding"));
  CHECK_THAT(base64_error("QUJDQ"), Catch::Contains("one over"));
  CHECK_THAT(base64_error("Q==="), Catch::Contains("'=' at offset 1"));
  CHECK(decode_base64("").has_value());
}

TEST_CASE("parse_data_uri: the size limit is checked on the encoded length, before decoding", "[image]") {
  const std::vector<std::uint8_t> ten(10, 7);
  CHECK(parse_data_uri("data:image/png;base64," + base64(ten), 10).has_value());
  CHECK_THAT(parse_error("data:image/png;base64," + base64(std::vector<std::uint8_t>(13, 7)), 10),
             Catch::Contains("20 base64 characters, more than the 16 that encode the limit of 10 bytes"));
  // Over the limit and not base64 at all: the length is what is reported, nothing was decoded.
  CHECK_THAT(parse_error("data:image/png;base64," + std::string(1000, ' '), 100),
             Catch::Contains("1000 base64 characters, more than"));
  // Within the encoded length but over the limit once decoded (16 characters are 12 bytes).
  CHECK_THAT(parse_error("data:image/png;base64," + base64(std::vector<std::uint8_t>(12, 7)), 10),
             Catch::Contains("decodes to 12 bytes, more than the limit of 10"));
}
