// The Qwen3.5 image processor against its references: smart_resize against hand-computed sizes
// and Python evaluating HF's formula; the bicubic resize against Pillow, byte for byte; the
// whole preprocess (resize, rescale, normalise, patches) against numpy doing what HF's slow
// Qwen2VLImageProcessor._preprocess does (tests/support/qwen_image_processor.py). The reference
// comparisons skip, saying why, only when no python3 with numpy and PIL is found.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/image/image_preprocess.hpp"
#include "runtime/image/image_processor_config.hpp"
#include "runtime/image/resize_bicubic.hpp"
#include "runtime/image/smart_resize.hpp"
#include "tests/support/python_with.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::temp_dir;
namespace fs = std::filesystem;

namespace {

const fs::path source_dir = ANCHORAGE_SOURCE_DIR;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void spill(const std::string& path, const void* data, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  REQUIRE(out.good());
}

int run(const std::string& command) { return std::system((command + " >/dev/null").c_str()); }

rgb_image random_image(std::uint32_t width, std::uint32_t height, std::uint32_t seed) {
  std::mt19937 rng(seed);
  rgb_image im;
  im.width = width;
  im.height = height;
  im.rgb.resize(std::size_t{width} * height * 3);
  for (auto& b : im.rgb) b = static_cast<std::uint8_t>(rng() & 0xff);
  return im;
}

// Black and white squares of `cell` pixels: the cubic's negative lobes overshoot both ends, so
// the clamp to 0..255 is exercised.
rgb_image checkerboard(std::uint32_t width, std::uint32_t height, std::uint32_t cell) {
  rgb_image im;
  im.width = width;
  im.height = height;
  im.rgb.resize(std::size_t{width} * height * 3);
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      const std::uint8_t v = ((x / cell + y / cell) % 2) ? 255 : 0;
      std::uint8_t* px = &im.rgb[(std::size_t{y} * width + x) * 3];
      px[0] = v;
      px[1] = static_cast<std::uint8_t>(255 - v);
      px[2] = static_cast<std::uint8_t>((x * 7 + y * 13) & 0xff);
    }
  }
  return im;
}

image_processor_config small_config() {
  image_processor_config cfg;
  cfg.min_pixels = 5 * 32 * 32;  // the least check_image_processor_config allows
  cfg.max_pixels = 64 * 32 * 32;
  return cfg;
}

std::string size_of(const expected<resized_size>& r) {
  if (!r) return "error";
  return std::to_string(r->height) + " " + std::to_string(r->width);
}

}  // namespace

TEST_CASE("image processor config: defaults and a Hugging Face preprocessor_config.json", "[image]") {
  REQUIRE(check_image_processor_config(image_processor_config{}));
  // Qwen3-VL's published file, as Qwen3.5's reads.
  const auto cfg = image_processor_config_from_json(R"({
    "size": {"longest_edge": 16777216, "shortest_edge": 65536},
    "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast",
    "do_rescale": true, "rescale_factor": 0.00392156862745098, "resample": 3})");
  REQUIRE(cfg);
  CHECK(cfg->patch_size == 16);
  CHECK(cfg->merge_size == 2);
  CHECK(cfg->temporal_patch_size == 2);
  CHECK(cfg->min_pixels == 65536);
  CHECK(cfg->max_pixels == 16777216);
  CHECK(cfg->mean[1] == 0.5f);
  CHECK(cfg->std[2] == 0.5f);

  // Qwen2-VL style: top-level min/max_pixels override size; CLIP constants become floats.
  const auto old = image_processor_config_from_json(R"({
    "size": {"shortest_edge": 3136, "longest_edge": 12845056}, "min_pixels": 6000, "max_pixels": 1003520,
    "patch_size": 14, "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711]})");
  REQUIRE(old);
  CHECK(old->min_pixels == 6000);
  CHECK(old->max_pixels == 1003520);
  CHECK(old->patch_size == 14);
  CHECK(old->mean[0] == static_cast<float>(0.48145466));
  CHECK(old->std[2] == static_cast<float>(0.27577711));
  // One number for all channels.
  const auto scalar = image_processor_config_from_json(R"({"image_mean": 0.25, "image_std": 2})");
  REQUIRE(scalar);
  CHECK(scalar->mean[2] == 0.25f);
  CHECK(scalar->std[0] == 2.0f);
}

TEST_CASE("image processor config: nonsense is refused with a message", "[image]") {
  struct bad_case {
    const char* json;
    const char* says;
  };
  const bad_case cases[] = {
      {"{", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"patch_size": 0})", "patch_size"},
      {R"({"patch_size": 16.5})", "patch_size"},
      {R"({"patch_size": "16"})", "patch_size"},
      {R"({"merge_size": -2})", "merge_size"},
      {R"({"temporal_patch_size": 100})", "temporal_patch_size"},
      {R"({"image_std": [0.5, 0, 0.5]})", "image_std"},
      {R"({"image_std": [0.5, 0.5]})", "image_std"},
      {R"({"image_mean": [0.5, "a", 0.5]})", "image_mean"},
      {R"({"size": {"shortest_edge": 65536}})", "size"},
      {R"({"size": 5})", "size"},
      {R"({"min_pixels": 5119})", "min_pixels"},  // below 5 merged rows of 32 x 32
      {R"({"min_pixels": 100000, "max_pixels": 90000})", "max_pixels"},
      {R"({"min_pixels": 5120, "max_pixels": 20479})", "max_pixels"},  // a capped image could get 4 rows
      {R"({"max_pixels": 1e12})", "max_pixels"},
      {R"({"do_normalize": false})", "do_normalize"},
      {R"({"do_resize": false})", "do_resize"},
      {R"({"rescale_factor": 0.5})", "rescale_factor"},
      {R"({"resample": 2})", "resample"},
  };
  for (const auto& c : cases) {
    INFO(c.json);
    const auto r = image_processor_config_from_json(c.json);
    REQUIRE_FALSE(r);
    CHECK(r.error().error().find(c.says) != std::string::npos);
  }
  // The minimum that still gives 5 merged rows is accepted.
  CHECK(image_processor_config_from_json(R"({"min_pixels": 5120, "max_pixels": 20480})"));
}

TEST_CASE("smart_resize: hand-computed sizes", "[image]") {
  const image_processor_config def;
  const image_processor_config small = small_config();
  // Ties round half to even: 80 / 32 = 2.5 -> 2, 112 / 32 = 3.5 -> 4; 64 * 128 is in range.
  CHECK(size_of(smart_resize(80, 112, small)) == "64 128");
  CHECK(size_of(smart_resize(48, 208, small)) == "64 192");  // 1.5 -> 2, 6.5 -> 6
  // In range already, a multiple of 32: unchanged.
  CHECK(size_of(smart_resize(512, 512, def)) == "512 512");
  CHECK(size_of(smart_resize(480, 640, def)) == "480 640");
  // Over max_pixels: beta = sqrt(8192^2 / 2^24) = 2, each side 8192 / 2 = 4096.
  CHECK(size_of(smart_resize(8192, 8192, def)) == "4096 4096");
  // Under min_pixels: beta = sqrt(65536 / 128^2) = 2, each side ceil(256 / 32) * 32.
  CHECK(size_of(smart_resize(128, 128, def)) == "256 256");
  // Sides below the factor are not refused: 10 x 10 -> 0 x 0 rounded, then the min branch.
  CHECK(size_of(smart_resize(10, 10, def)) == "256 256");
  // The aspect ratio: 200 passes, above 200 is an error result.
  CHECK(smart_resize(1, 200, def));
  CHECK(smart_resize(3, 600, def));
  const auto wide = smart_resize(1, 201, def);
  REQUIRE_FALSE(wide);
  CHECK(wide.error().error().find("aspect ratio") != std::string::npos);
  CHECK_FALSE(smart_resize(1000, 4, def));
  CHECK_FALSE(smart_resize(0, 10, def));
  CHECK_FALSE(smart_resize(10, 0, def));
}

TEST_CASE("smart_resize: the least pixel bounds allowed still give image_key_rows merged rows", "[image]") {
  image_processor_config cfg;
  cfg.min_pixels = 5 * 32 * 32;
  cfg.max_pixels = 4 * 5 * 32 * 32;
  REQUIRE(check_image_processor_config(cfg));
  std::size_t sizes = 0;
  for (std::int64_t h = 1; h < 4000; h += 7) {
    for (std::int64_t w = 1; w < 4000; w += 5) {
      const auto r = smart_resize(h, w, cfg);
      if (!r) continue;  // the aspect ratio
      ++sizes;
      if (r->height * r->width < 5 * 32 * 32) FAIL_CHECK(h << " x " << w << " -> " << size_of(r));
    }
  }
  CHECK(sizes > 100000);
}

TEST_CASE("smart_resize equals Python evaluating HF's formula", "[image]") {
  const std::string python = anchorage::test::python_with("numpy, PIL");
  if (python.empty()) {
    WARN("skipped: no python3 with numpy and PIL for tests/support/qwen_image_processor.py");
    return;
  }
  struct limits {
    std::int64_t factor, min_pixels, max_pixels;
  };
  const limits configs[] = {{32, 65536, 16777216}, {32, 5120, 65536}, {28, 3136, 1003520}, {32, 5120, 20480}};
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {
      {1, 1},        {1, 200},     {200, 1},     {1, 201},     {3, 601},     {3, 600},
      {10, 10},      {16, 48},     {48, 16},     {80, 112},    {48, 208},    {224, 224},
      {336, 336},    {480, 640},   {720, 1280},  {1080, 1920}, {4000, 3000}, {8192, 8192},
      {12345, 6789}, {4097, 4097}, {100, 20000}, {20000, 100}, {17, 3400},   {0, 5},
  };
  std::mt19937 rng(20260814);
  for (int i = 0; i < 300; ++i) {
    const std::int64_t h = 1 + static_cast<std::int64_t>(rng() % 6000);
    const std::int64_t w = 1 + static_cast<std::int64_t>(rng() % 6000);
    sizes.emplace_back(h, w);
  }
  // Exact ties: odd multiples of half the factor.
  for (std::int64_t k = 1; k < 40; k += 2) sizes.emplace_back(16 * k, 16 * (k + 2));
  temp_dir dir("image-smart-resize");
  std::ostringstream cases;
  std::vector<std::string> mine;
  for (const limits& l : configs) {
    image_processor_config cfg;
    cfg.patch_size = static_cast<int>(l.factor / 2);
    cfg.min_pixels = l.min_pixels;
    cfg.max_pixels = l.max_pixels;
    for (const auto& [h, w] : sizes) {
      cases << h << " " << w << " " << l.factor << " " << l.min_pixels << " " << l.max_pixels << "\n";
      mine.push_back(size_of(smart_resize(h, w, cfg)));
    }
  }
  spill(dir.file("cases.txt"), cases.str().data(), cases.str().size());
  REQUIRE(run(python + " '" + (source_dir / "tests/support/qwen_image_processor.py").string() +
              "' smart_resize '" + dir.file("cases.txt") + "' '" + dir.file("out.txt") + "'") == 0);
  std::istringstream theirs(slurp(dir.file("out.txt")));
  std::istringstream lines(cases.str());
  std::size_t n = 0;
  for (std::string line, want; std::getline(theirs, want); ++n) {
    std::getline(lines, line);
    INFO("h w factor min max: " << line);
    REQUIRE(n < mine.size());
    CHECK(mine[n] == want);
  }
  CHECK(n == mine.size());
}

TEST_CASE("resize_bicubic equals Pillow's BICUBIC resize byte for byte", "[image]") {
  const std::string python = anchorage::test::python_with("numpy, PIL");
  if (python.empty()) {
    WARN("skipped: no python3 with numpy and PIL for tests/support/pil_resize.py");
    return;
  }
  struct resize_case {
    const char* name;
    rgb_image in;
    std::uint32_t out_w, out_h;
  };
  const std::vector<resize_case> cases = {
      {"down_noninteger", random_image(97, 61, 1), 40, 25},
      {"down_noninteger_big", random_image(300, 200, 2), 123, 77},
      {"down_by_many", random_image(1000, 9, 3), 7, 2},
      {"up", random_image(13, 7, 4), 64, 32},
      {"up_noninteger", random_image(5, 9, 5), 37, 50},
      {"down_up_mixed", random_image(100, 10, 6), 33, 40},
      {"width_unchanged_down", random_image(64, 40, 7), 64, 17},
      {"width_unchanged_up", random_image(20, 30, 8), 20, 77},
      {"height_unchanged_down", random_image(50, 30, 9), 23, 30},
      {"height_unchanged_up", random_image(9, 12, 10), 40, 12},
      {"same_size", random_image(17, 11, 11), 17, 11},
      {"one_by_n", random_image(1, 5, 12), 32, 32},
      {"n_by_one", random_image(7, 1, 13), 2, 1},
      {"one_pixel", random_image(1, 1, 14), 3, 3},
      {"two_by_two_up", random_image(2, 2, 15), 32, 64},
      {"two_by_two_down", random_image(2, 2, 16), 1, 1},
      {"checker_down", checkerboard(120, 90, 3), 37, 29},
      {"checker_up", checkerboard(16, 16, 1), 96, 160},
      {"photo_sized", random_image(640, 427, 17), 640, 416},
  };
  temp_dir dir("image-pil-resize");
  std::ostringstream list;
  for (const auto& c : cases) {
    spill(dir.file(std::string(c.name) + ".in"), c.in.rgb.data(), c.in.rgb.size());
    list << c.name << " " << c.in.width << " " << c.in.height << " " << c.out_w << " " << c.out_h << "\n";
  }
  spill(dir.file("cases.txt"), list.str().data(), list.str().size());
  REQUIRE(run(python + " '" + (source_dir / "tests/support/pil_resize.py").string() + "' '" + dir.str() +
              "'") == 0);
  for (const auto& c : cases) {
    INFO(c.name << ": " << c.in.width << "x" << c.in.height << " -> " << c.out_w << "x" << c.out_h);
    const rgb_image mine = resize_bicubic(c.in, c.out_h, c.out_w);
    const std::string theirs = slurp(dir.file(std::string(c.name) + ".out"));
    REQUIRE(mine.width == c.out_w);
    REQUIRE(mine.height == c.out_h);
    REQUIRE(theirs.size() == mine.rgb.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      differing += static_cast<std::uint8_t>(theirs[i]) != mine.rgb[i];
    }
    CHECK(differing == 0);
  }
}

TEST_CASE("preprocess equals numpy doing what HF's Qwen2VLImageProcessor._preprocess does", "[image]") {
  const std::string python = anchorage::test::python_with("numpy, PIL");
  if (python.empty()) {
    WARN("skipped: no python3 with numpy and PIL for tests/support/qwen_image_processor.py");
    return;
  }
  struct preprocess_case {
    const char* name;
    rgb_image image;
    const char* config;
  };
  const char* qwen = R"({"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16,
    "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]})";
  const char* small = R"({"size": {"longest_edge": 40960, "shortest_edge": 5120}, "patch_size": 16,
    "merge_size": 2, "temporal_patch_size": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]})";
  const char* clip = R"({"min_pixels": 3920, "max_pixels": 200704, "patch_size": 14, "merge_size": 2,
    "temporal_patch_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711]})";
  const std::vector<preprocess_case> cases = {
      {"min_branch_upscale", random_image(97, 61, 21), qwen},
      {"exact_size_no_resize", random_image(320, 224, 22), qwen},
      {"round_branch", random_image(300, 250, 23), qwen},
      {"max_branch", random_image(400, 300, 24), small},
      {"tall_thin", checkerboard(40, 700, 5), small},
      {"clip_constants_patch14", random_image(150, 100, 25), clip},
  };
  temp_dir dir("image-preprocess");
  const std::string script = (source_dir / "tests/support/qwen_image_processor.py").string();
  float worst = 0;
  for (const auto& c : cases) {
    INFO(c.name << " " << c.image.width << "x" << c.image.height);
    const auto cfg = image_processor_config_from_json(c.config);
    REQUIRE(cfg);
    const auto mine = preprocess(c.image, *cfg);
    REQUIRE(mine);
    const std::string in = dir.file(std::string(c.name) + ".rgb");
    const std::string config = dir.file(std::string(c.name) + ".json");
    const std::string values = dir.file(std::string(c.name) + ".f32");
    const std::string grid = dir.file(std::string(c.name) + ".grid");
    spill(in, c.image.rgb.data(), c.image.rgb.size());
    spill(config, c.config, std::string(c.config).size());
    REQUIRE(run(python + " '" + script + "' preprocess '" + in + "' " + std::to_string(c.image.width) + " " +
                std::to_string(c.image.height) + " '" + config + "' '" + values + "' '" + grid + "'") == 0);
    std::istringstream g(slurp(grid));
    int grid_t = 0, grid_h = 0, grid_w = 0;
    g >> grid_t >> grid_h >> grid_w;
    CHECK(mine->grid_t == grid_t);
    CHECK(mine->grid_h == grid_h);
    CHECK(mine->grid_w == grid_w);
    CHECK(mine->row_values() == static_cast<std::size_t>(3 * 2 * cfg->patch_size * cfg->patch_size));
    CHECK(mine->merged_rows() == static_cast<std::size_t>(grid_t * grid_h * grid_w / 4));
    CHECK(mine->merged_rows() >= 5);
    const std::string bytes = slurp(values);
    REQUIRE(bytes.size() == mine->values.size() * sizeof(float));
    std::vector<float> theirs(mine->values.size());
    std::memcpy(theirs.data(), bytes.data(), bytes.size());  // the test hosts are little-endian
    float max_diff = 0;
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(theirs[i] - mine->values[i]));
    }
    CHECK(max_diff <= 1e-6f);
    worst = std::max(worst, max_diff);
  }
  // The arithmetic is HF's, operation for operation: it matches exactly.
  CHECK(worst == 0.0f);
}

TEST_CASE("preprocess: layout of a still image's patches, and its errors", "[image]") {
  image_processor_config cfg;
  // A 64 x 96 image of distinct pixels, already at a smart_resize size for min_pixels 5120.
  cfg.min_pixels = 5120;
  rgb_image im;
  im.width = 96;
  im.height = 64;
  im.rgb.resize(96 * 64 * 3);
  for (std::size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = static_cast<std::uint8_t>((i * 31) % 251);
  const auto p = preprocess(im, cfg);
  REQUIRE(p);
  CHECK(p->grid_t == 1);
  CHECK(p->grid_h == 4);
  CHECK(p->grid_w == 6);
  CHECK(p->merged_rows() == 6);
  REQUIRE(p->values.size() == 24 * 1536);
  auto norm = [&](std::size_t y, std::size_t x, std::size_t c) {
    const float v = static_cast<float>(static_cast<double>(im.rgb[(y * 96 + x) * 3 + c]) * (1.0 / 255.0));
    return (v - 0.5f) / 0.5f;
  };
  // Row 3 is merge block (0, 0)'s in_row 1, in_col 1: patch (1, 1), pixels from (16, 16).
  // Row 4 starts block (0, 1): patch (0, 2), pixels from (0, 32).
  const float* row3 = &p->values[3 * 1536];
  const float* row4 = &p->values[4 * 1536];
  for (std::size_t c = 0; c < 3; ++c) {
    for (std::size_t t = 0; t < 2; ++t) {  // both frames hold the same image
      CHECK(row3[c * 512 + t * 256 + 0] == norm(16, 16, c));
      CHECK(row3[c * 512 + t * 256 + 5 * 16 + 7] == norm(21, 23, c));
      CHECK(row4[c * 512 + t * 256 + 15 * 16 + 15] == norm(15, 47, c));
    }
  }
  // Row 12 starts block row 1 (patch rows 2-3): block (1, 0), patch (2, 0), pixels from (32, 0).
  CHECK(p->values[12 * 1536] == norm(32, 0, 0));

  rgb_image wrong = im;
  wrong.rgb.pop_back();
  CHECK_FALSE(preprocess(wrong, cfg));
  rgb_image wide = random_image(402, 2, 30);
  const auto refused = preprocess(wide, cfg);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().error().find("aspect ratio") != std::string::npos);
  image_processor_config bad;
  bad.min_pixels = 1024;
  CHECK_FALSE(preprocess(im, bad));
}
