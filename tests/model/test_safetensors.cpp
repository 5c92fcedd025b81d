// Tests for runtime/safetensors: round trips, exact bytes, half decoding, malformed files,
// check_tensors messages and crash-safe saving.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/model/safetensors.hpp"

namespace fs = std::filesystem;
using namespace anchorage;

namespace {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    std::ostringstream name;
    name << "anchorage_safetensors_" << std::hex << rd() << rd();
    path = fs::temp_directory_path() / name.str();
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

std::string le16s(const std::vector<std::uint16_t>& values) {
  std::string s;
  for (std::uint16_t v : values) {
    s += static_cast<char>(v & 0xff);
    s += static_cast<char>(v >> 8);
  }
  return s;
}

// A safetensors file image: length field, header as given (no padding), data.
std::string make_file(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The message of the safetensors_error that loading `path` throws; fails the test if none.
std::string load_error(const std::string& path) {
  try {
    load_safetensors(path);
  } catch (const safetensors_error& e) {
    return e.what();
  }
  FAIL("load_safetensors('" << path << "') did not throw safetensors_error");
  return "";
}

}  // namespace

TEST_CASE("shape_string formats dimensions", "[safetensors]") {
  CHECK(shape_string({64, 128}) == "[64, 128]");
  CHECK(shape_string({}) == "[]");
  CHECK(shape_string({7}) == "[7]");
  CHECK(tensor{{}, {1.0f}}.numel() == 1);
  CHECK(tensor{{3, 0, 2}, {}}.numel() == 0);
}

TEST_CASE("tensors and metadata round trip bit for bit", "[safetensors]") {
  temp_dir dir;
  const std::string path = dir.file("model.safetensors");
  tensor_map tensors;
  tensor& w = tensors["layers.0.attn.wq"];
  w.shape = {3, 4};
  for (int i = 0; i < 12; ++i) w.data.push_back(0.5f * static_cast<float>(i) - 1.25f);
  tensors["scalar"] = tensor{{}, {3.25f}};
  tensors["empty"] = tensor{{0, 5}, {}};
  tensors["special"] =
      tensor{{6},
             {-0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
              std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::quiet_NaN(),
              std::numeric_limits<float>::max()}};
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"step", "1200"}};

  save_safetensors(path, tensors, metadata);
  CHECK_FALSE(fs::exists(path + ".tmp"));
  const safetensors_file loaded = load_safetensors(path);

  CHECK(loaded.metadata == metadata);
  REQUIRE(loaded.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    INFO("tensor " << name);
    const auto it = loaded.tensors.find(name);
    REQUIRE(it != loaded.tensors.end());
    CHECK(it->second.shape == t.shape);
    REQUIRE(it->second.data.size() == t.data.size());
    for (std::size_t i = 0; i < t.data.size(); ++i) CHECK(bits_of(it->second.data[i]) == bits_of(t.data[i]));
  }

  SECTION("no metadata gives empty metadata, and saving again replaces the file") {
    tensors.erase("special");
    save_safetensors(path, tensors);
    const safetensors_file again = load_safetensors(path);
    CHECK(again.metadata.empty());
    CHECK(again.tensors.size() == 3);
    CHECK(again.tensors.count("special") == 0);
    CHECK_FALSE(fs::exists(path + ".tmp"));
  }
}

TEST_CASE("saved bytes follow the format exactly", "[safetensors]") {
  temp_dir dir;
  const std::string path = dir.file("tiny.safetensors");
  save_safetensors(path, {{"a", tensor{{2}, {1.0f, -2.0f}}}});

  std::string header = R"({"a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})";
  REQUIRE(header.size() == 54);
  header += "  ";  // padded to 56, a multiple of 8
  const std::string expected =
      std::string("\x38\0\0\0\0\0\0\0", 8) + header + std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);
  CHECK(read_bytes(path) == expected);
}

TEST_CASE("saved header lays tensors out contiguously in name order", "[safetensors]") {
  temp_dir dir;
  const std::string path = dir.file("layout.safetensors");
  tensor_map tensors = {{"b", tensor{{2, 3}, std::vector<float>(6, 1.0f)}},
                        {"a", tensor{{}, {2.0f}}},
                        {"c", tensor{{0}, {}}},
                        {"d", tensor{{1}, {4.0f}}}};
  save_safetensors(path, tensors, {{"k", "v"}});
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 8);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  CHECK(n % 8 == 0);
  REQUIRE(bytes.size() == 8 + n + 4 * (1 + 6 + 0 + 1));
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(header["__metadata__"] == nlohmann::json{{"k", "v"}});
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    INFO("tensor " << name);
    const auto& entry = header.at(name);
    CHECK(entry.at("dtype") == "F32");
    CHECK(entry.at("shape").get<std::vector<std::int64_t>>() == t.shape);
    const std::uint64_t end = offset + 4 * t.data.size();
    CHECK(entry.at("data_offsets") == nlohmann::json::array({offset, end}));
    offset = end;
  }
}

TEST_CASE("F16 and BF16 tensors decode exactly", "[safetensors]") {
  temp_dir dir;
  const std::string path = dir.file("half.safetensors");
  const std::vector<std::uint16_t> f16 = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x0400,
                                          0x7C00, 0xFC00, 0x8000, 0x3555, 0x7E00};
  const std::vector<std::uint16_t> bf16 = {0x3F80, 0xC000, 0x477F, 0x0001, 0x7F80, 0x7F7F};
  const std::string header = R"({"h": {"dtype": "F16", "shape": [11], "data_offsets": [0, 22]},)"
                             R"( "b": {"shape": [2, 3], "data_offsets": [22, 34], "dtype": "BF16"}})";
  write_bytes(path, make_file(header, le16s(f16) + le16s(bf16)));

  const safetensors_file file = load_safetensors(path);
  const std::vector<float>& h = file.tensors.at("h").data;
  REQUIRE(h.size() == 11);
  CHECK(h[0] == 1.0f);
  CHECK(h[1] == -2.0f);
  CHECK(h[2] == 65504.0f);
  CHECK(h[3] == std::ldexp(1.0f, -24));     // smallest subnormal
  CHECK(h[4] == std::ldexp(1023.0f, -24));  // largest subnormal
  CHECK(h[5] == std::ldexp(1.0f, -14));     // smallest normal
  CHECK(h[6] == std::numeric_limits<float>::infinity());
  CHECK(h[7] == -std::numeric_limits<float>::infinity());
  CHECK(bits_of(h[8]) == 0x80000000u);  // -0.0
  CHECK(h[9] == 0.333251953125f);
  CHECK(std::isnan(h[10]));

  const tensor& b = file.tensors.at("b");
  CHECK(b.shape == std::vector<std::int64_t>{2, 3});
  REQUIRE(b.data.size() == 6);
  CHECK(b.data[0] == 1.0f);
  CHECK(b.data[1] == -2.0f);
  CHECK(b.data[2] == 65280.0f);
  CHECK(b.data[3] == std::ldexp(1.0f, -133));  // subnormal
  CHECK(b.data[4] == std::numeric_limits<float>::infinity());
  CHECK(b.data[5] == std::ldexp(255.0f, 120));  // largest finite
}

TEST_CASE("malformed files throw safetensors_error naming the problem", "[safetensors]") {
  temp_dir dir;
  struct bad_case {
    std::string label, bytes, needle;
  };
  const std::string four(4, '\0');
  const std::vector<bad_case> cases = {
      {"empty file", "", "shorter than the 8-byte header length"},
      {"short file", "abc", "shorter than the 8-byte header length"},
      {"header beyond file", le64(1000) + "{}", "header length 1000 goes beyond the end of the file"},
      {"not json", make_file(R"({"a": )"), "header is not valid JSON"},
      {"not an object", make_file("[1, 2]"), "header is not a JSON object"},
      {"entry not an object", make_file(R"({"w": 3})"), "tensor 'w': entry is not a JSON object"},
      {"missing dtype", make_file(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", four),
       "tensor 'w': missing 'dtype'"},
      {"missing shape", make_file(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", four),
       "tensor 'w': missing 'shape'"},
      {"missing offsets", make_file(R"({"w": {"dtype": "F32", "shape": [1]}})", four),
       "tensor 'w': missing 'data_offsets'"},
      {"unsupported dtype",
       make_file(R"({"w": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]}})", four),
       "tensor 'w': unsupported dtype 'I32'"},
      {"negative dim",
       make_file(R"({"w": {"dtype": "F32", "shape": [-1, 2], "data_offsets": [0, 4]}})", four),
       "tensor 'w': negative dimension -1"},
      {"non-integer dim",
       make_file(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", four),
       "tensor 'w': 'shape' holds a non-integer"},
      {"offsets not a pair", make_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", four),
       "tensor 'w': 'data_offsets' is not a pair"},
      {"negative offset",
       make_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", four),
       "tensor 'w': 'data_offsets' is not a pair of non-negative integers"},
      {"offsets out of range",
       make_file(R"({"w": {"dtype": "F32", "shape": [100], "data_offsets": [0, 400]}})", four),
       "tensor 'w': data_offsets [0, 400] go beyond the data buffer (4 bytes)"},
      {"end before begin",
       make_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", four),
       "tensor 'w': data_offsets [4, 0] end before they begin"},
      {"length mismatch", make_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", four),
       "tensor 'w': data_offsets [0, 4] span 4 bytes, but shape [2] of dtype F32 needs 8"},
      {"metadata not strings", make_file(R"({"__metadata__": {"k": 1}})"),
       "__metadata__ value for 'k' is not a string"},
      {"metadata not an object", make_file(R"({"__metadata__": [1]})"), "__metadata__ is not a JSON object"},
  };
  for (const bad_case& c : cases) {
    INFO(c.label);
    const std::string path = dir.file("bad.safetensors");
    write_bytes(path, c.bytes);
    const std::string message = load_error(path);
    CHECK_THAT(message, Catch::Matchers::Contains(path));
    CHECK_THAT(message, Catch::Matchers::Contains(c.needle));
  }

  const std::string missing = dir.file("does_not_exist.safetensors");
  const std::string message = load_error(missing);
  CHECK_THAT(message, Catch::Matchers::Contains(missing));
  CHECK_THAT(message, Catch::Matchers::Contains("cannot open"));
}

TEST_CASE("check_tensors lists every problem in one message", "[safetensors]") {
  const tensor_map got = {{"x", tensor{{3, 4}, std::vector<float>(12)}},
                          {"y", tensor{{1}, {0.0f}}},
                          {"ok", tensor{{2}, {1.0f, 2.0f}}}};
  const std::vector<tensor_spec> expected = {
      {"layers.0.attn.wq", {8, 8}}, {"x", {4, 4}}, {"ok", {2}}, {"layers.0.attn.wk", {8, 8}}};
  try {
    check_tensors(got, expected, "model.safetensors");
    FAIL("check_tensors did not throw");
  } catch (const safetensors_error& e) {
    const std::string m = e.what();
    CHECK(m.rfind("model.safetensors: ", 0) == 0);
    CHECK_THAT(m, Catch::Matchers::Contains("missing tensor 'layers.0.attn.wq'"));
    CHECK_THAT(m, Catch::Matchers::Contains("missing tensor 'layers.0.attn.wk'"));
    CHECK_THAT(m, Catch::Matchers::Contains("tensor 'x' has shape [3, 4], expected [4, 4]"));
    CHECK_THAT(m, Catch::Matchers::Contains("unexpected tensor 'y'"));
    CHECK_THAT(m, !Catch::Matchers::Contains("'ok'"));
    CHECK_THAT(m, Catch::Matchers::Contains("4 tensor problems"));
  }

  CHECK_NOTHROW(check_tensors(got, {{"x", {3, 4}}, {"y", {1}}, {"ok", {2}}}, "m"));
  CHECK_THROWS_WITH(check_tensors({{"x", tensor{{2}, {1.0f}}}}, {{"x", {2}}}, "src"),
                    Catch::Matchers::Contains("tensor 'x' holds 1 values, but its shape [2] needs 2"));
}

TEST_CASE("failed saves throw and leave no tmp file", "[safetensors]") {
  temp_dir dir;
  const tensor_map tensors = {{"w", tensor{{2}, {1.0f, 2.0f}}}};

  SECTION("directory does not exist") {
    const fs::path missing_dir = dir.path / "no_such_dir";
    const std::string path = (missing_dir / "model.safetensors").string();
    CHECK_THROWS_WITH(save_safetensors(path, tensors),
                      Catch::Matchers::Contains(path) && Catch::Matchers::Contains(std::strerror(ENOENT)));
    CHECK_FALSE(fs::exists(missing_dir));
    CHECK_FALSE(fs::exists(path + ".tmp"));
  }

  SECTION("rename over a directory fails after the tmp file was written") {
    const std::string path = dir.file("model.safetensors");
    fs::create_directory(path);
    CHECK_THROWS_AS(save_safetensors(path, tensors), std::runtime_error);
    CHECK_FALSE(fs::exists(path + ".tmp"));
    CHECK(fs::is_directory(path));
  }

  SECTION("inconsistent tensors are rejected before anything is written") {
    const std::string path = dir.file("model.safetensors");
    CHECK_THROWS_AS(save_safetensors(path, {{"w", tensor{{3}, {1.0f}}}}), std::invalid_argument);
    CHECK_THROWS_AS(save_safetensors(path, {{"__metadata__", tensor{{}, {1.0f}}}}), std::invalid_argument);
    CHECK_FALSE(fs::exists(path));
    CHECK_FALSE(fs::exists(path + ".tmp"));
  }
}

TEST_CASE("a header number past a double's range is refused as invalid JSON, not thrown through",
          "[safetensors]") {
  // The fuzz phase's find (fuzz/regressions/safetensors/number_overflow): nlohmann's parser
  // throws out_of_range for a number like 2444444444E0000000000000000000000599770, which
  // safetensors_view::open must report as a safetensors_error naming the file.
  temp_dir dir;
  const std::string path = dir.file("overflow.safetensors");
  write_bytes(path, make_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 2E999999]}})",
                              std::string(4, '\0')));
  const std::string message = load_error(path);
  CHECK_THAT(message, Catch::Matchers::Contains(path));
  CHECK_THAT(message, Catch::Matchers::Contains("header is not valid JSON"));

  std::ifstream in(std::string(ANCHORAGE_SOURCE_DIR) + "/fuzz/regressions/safetensors/number_overflow",
                   std::ios::binary);
  REQUIRE(in);
  const std::string found((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_bytes(path, found);
  CHECK_THAT(load_error(path), Catch::Matchers::Contains("header is not valid JSON"));
}
