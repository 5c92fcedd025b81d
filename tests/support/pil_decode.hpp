#pragma once
// Pillow's decode of image files, as tests/support/pil_decode.py makes it (the processors' RGB
// rule: Pillow's RGB as it is, anything else composited over white), for comparing a decoder with
// it byte for byte. All the files go through one Python run.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include "protocol/image_input.hpp"
#include "tests/support/python_with.hpp"
#include "tests/support/temp_dir.hpp"

namespace anchorage::test {

// A file's result: the image, or Pillow's error ("UnidentifiedImageError: ...").
using pil_result = std::variant<rgb_image, std::string>;

// One result per file, in order; empty when no Python has PIL (the caller WARNs and skips).
inline std::vector<pil_result> pil_decode(const std::vector<std::vector<std::uint8_t>>& files) {
  const std::string python = python_with("PIL");
  if (python.empty()) return {};
  const anchorage::testing::temp_dir dir("anchorage-pil-decode");
  std::string command = python + " " ANCHORAGE_SOURCE_DIR "/tests/support/pil_decode.py";
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::ofstream(dir.file("in" + std::to_string(i)), std::ios::binary)
        .write(reinterpret_cast<const char*>(files[i].data()), static_cast<std::streamsize>(files[i].size()));
    command += " " + dir.file("in" + std::to_string(i)) + " " + dir.file("out" + std::to_string(i));
  }
  REQUIRE(std::system(command.c_str()) == 0);
  std::vector<pil_result> results;
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::ifstream in(dir.file("out" + std::to_string(i)), std::ios::binary);
    const std::vector<std::uint8_t> out((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
    if (out.size() >= 4 && std::equal(out.begin(), out.begin() + 4, "ERR:")) {
      results.emplace_back(std::string(out.begin() + 4, out.end()));
      continue;
    }
    REQUIRE(out.size() >= 8);
    const auto le32 = [&](std::size_t at) {
      return std::uint32_t{out[at]} | std::uint32_t{out[at + 1]} << 8 | std::uint32_t{out[at + 2]} << 16 |
             std::uint32_t{out[at + 3]} << 24;
    };
    results.emplace_back(rgb_image{le32(0), le32(4), std::vector<std::uint8_t>(out.begin() + 8, out.end())});
  }
  return results;
}

}  // namespace anchorage::test
