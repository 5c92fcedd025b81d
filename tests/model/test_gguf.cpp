// Tests for runtime/model/gguf_file: the GGUF v3 writer and the mmap reader (round trips of every
// metadata type, alignment, exact header bytes, F16 rounding, quantized and truncated files).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/weight_type.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/model/half_float.hpp"
#include "runtime/model/loaded_model.hpp"
#include "tests/support/gguf_bytes.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::slurp;
using anchorage::testing::spit;
using anchorage::testing::temp_dir;

namespace {

std::uint64_t le(const std::string& b, std::size_t at, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

tensor make(std::vector<std::int64_t> shape, float scale) {
  tensor t;
  t.shape = std::move(shape);
  t.data.resize(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = scale * (static_cast<float>(i) - 3.25f);
  return t;
}

// Writes a small file with one tensor of each kind; returns its path.
std::string write_sample(const temp_dir& d, std::uint32_t alignment = 32) {
  static tensor a = make({3, 5}, 0.37f), b = make({7}, -1.0f / 3.0f);
  std::vector<std::pair<std::string, gguf_value>> kv = {
      {"general.architecture", gguf_value::str("test")},
      {"general.alignment", gguf_value::u32(alignment)},
      {"t.i32", gguf_value::i32(-7)},
      {"t.f32", gguf_value::f32(0.125f)},
      {"t.bool", gguf_value::boolean(true)},
      {"t.strings", gguf_value::str_array({"a", "", "é ü", std::string("x\0y", 3)})},
      {"t.ints", gguf_value::int_array(gguf_type::int32, {1, -2, 3})},
      {"t.u8s", gguf_value::int_array(gguf_type::uint8, {0, 255})},
      {"t.i64s", gguf_value::int_array(gguf_type::int64, {-(1LL << 40)})},
      {"t.bools", gguf_value::bool_array({true, false, true})},
  };
  gguf_value u64;
  u64.type = gguf_type::uint64;
  u64.i = 1LL << 50;
  kv.emplace_back("t.u64", u64);
  gguf_value f64;
  f64.type = gguf_type::float64;
  f64.f = 1.0 / 3.0;
  kv.emplace_back("t.f64", f64);
  const std::string path = d.file("sample.gguf");
  save_gguf(path, kv, {{"a.weight", &a, ggml_type::f32}, {"b", &b, ggml_type::f16}});
  return path;
}

}  // namespace

TEST_CASE("gguf: every metadata type and both tensor types round-trip", "[gguf]") {
  temp_dir d("gguf");
  const std::string path = write_sample(d);
  gguf_reader r(path);
  CHECK(r.version() == 3);
  CHECK(r.alignment() == 32);
  CHECK(r.find("general.architecture")->s == "test");
  CHECK(r.find("t.i32")->type == gguf_type::int32);
  CHECK(r.find("t.i32")->i == -7);
  CHECK(r.find("t.f32")->f == 0.125);
  CHECK(r.find("t.bool")->i == 1);
  CHECK(r.find("t.u64")->i == (1LL << 50));
  CHECK(r.find("t.f64")->f == 1.0 / 3.0);
  CHECK(r.find("t.strings")->elem == gguf_type::string);
  CHECK(r.find("t.strings")->strings == std::vector<std::string>{"a", "", "é ü", std::string("x\0y", 3)});
  CHECK(r.find("t.ints")->ints == std::vector<std::int64_t>{1, -2, 3});
  CHECK(r.find("t.u8s")->ints == std::vector<std::int64_t>{0, 255});
  CHECK(r.find("t.i64s")->ints == std::vector<std::int64_t>{-(1LL << 40)});
  CHECK(r.find("t.bools")->ints == std::vector<std::int64_t>{1, 0, 1});
  CHECK(r.find("absent") == nullptr);

  REQUIRE(r.tensors().size() == 2);
  const gguf_tensor_info* a = r.find_tensor("a.weight");
  REQUIRE(a != nullptr);
  CHECK(a->ne == std::vector<std::int64_t>{5, 3});  // reversed PyTorch shape
  CHECK(a->type == 0);
  const tensor at = r.read("a.weight");
  CHECK(at.shape == std::vector<std::int64_t>{3, 5});
  CHECK(at.data == make({3, 5}, 0.37f).data);  // F32 bit-exact
  const tensor bt = r.read("b");
  CHECK(r.find_tensor("b")->type == 1);
  CHECK(r.find_tensor("b")->offset % 32 == 0);
  const tensor b = make({7}, -1.0f / 3.0f);
  for (std::size_t i = 0; i < b.data.size(); ++i) {
    CHECK(bt.data[i] == f16_to_float(float_to_f16(b.data[i])));
    CHECK(std::fabs(bt.data[i] - b.data[i]) <= std::fabs(b.data[i]) * 1.0f / 2048.0f);
  }
}

TEST_CASE("gguf: the header bytes follow the format and the data start is aligned", "[gguf]") {
  temp_dir d("gguf");
  for (std::uint32_t alignment : {32u, 64u}) {
    const std::string bytes = slurp(write_sample(d, alignment));
    CHECK(bytes.substr(0, 4) == "GGUF");
    CHECK(le(bytes, 4, 4) == 3);    // version
    CHECK(le(bytes, 8, 8) == 2);    // tensors
    CHECK(le(bytes, 16, 8) == 12);  // metadata entries
    CHECK(le(bytes, 24, 8) == std::string("general.architecture").size());
    CHECK(bytes.substr(32, 20) == "general.architecture");
    CHECK(le(bytes, 52, 4) == 8);  // GGUF_TYPE_STRING
    CHECK(le(bytes, 56, 8) == 4);
    CHECK(bytes.substr(64, 4) == "test");
    gguf_reader r(d.file("sample.gguf"));
    CHECK(r.alignment() == alignment);
    // The file ends with the last tensor padded to the alignment; the F32 tensor is first.
    CHECK(bytes.size() % alignment == 0);
    auto up = [&](std::size_t n) { return (n + alignment - 1) / alignment * alignment; };
    const std::size_t data_start = bytes.size() - up(60) - up(14);  // a: 15 F32, b: 7 F16, each padded
    float first;
    std::memcpy(&first, bytes.data() + data_start, 4);
    CHECK(first == make({3, 5}, 0.37f).data[0]);
  }
}

TEST_CASE("gguf: half conversion rounds to nearest even and keeps specials", "[gguf]") {
  CHECK(float_to_f16(1.0f) == 0x3c00);
  CHECK(float_to_f16(-2.0f) == 0xc000);
  CHECK(float_to_f16(65504.0f) == 0x7bff);
  CHECK(float_to_f16(1e6f) == 0x7c00);
  CHECK(float_to_f16(1.0f + 1.0f / 2048.0f) == 0x3c00);  // a tie rounds to even
  CHECK(float_to_f16(1.0f + 3.0f / 2048.0f) == 0x3c02);  // a tie rounds to even (up)
  CHECK(float_to_f16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(float_to_f16(std::ldexp(1.0f, -26)) == 0x0000);  // below half of it
  CHECK(std::isnan(f16_to_float(float_to_f16(std::nanf("")))));
  for (std::uint32_t h = 0; h < 0x7c00; h += 7)
    CHECK(float_to_f16(f16_to_float(static_cast<std::uint16_t>(h))) == h);
}

TEST_CASE("gguf: a quantized tensor is refused by name and type", "[gguf]") {
  temp_dir d("gguf");
  std::string bytes = slurp(write_sample(d));
  // Patch tensor "b"'s type (after its name, n_dims and one ne) to 12 (Q4_K).
  const std::size_t at = bytes.find(std::string("\x01\0\0\0\0\0\0\0b", 9));
  REQUIRE(at != std::string::npos);
  const std::size_t type_at = at + 9 + 4 + 8;
  REQUIRE(le(bytes, type_at, 4) == 1);
  bytes[type_at] = 12;
  spit(d.file("q.gguf"), bytes);
  gguf_reader r(d.file("q.gguf"));
  CHECK(r.read("a.weight").data.size() == 15);
  CHECK_THROWS_WITH(r.read("b"), Catch::Contains("tensor 'b' has type Q4_K"));
  CHECK_THROWS_WITH(r.read("zz"), Catch::Contains("missing tensor 'zz'"));
}

TEST_CASE("gguf: truncated and malformed files are errors naming the file", "[gguf]") {
  temp_dir d("gguf");
  const std::string bytes = slurp(write_sample(d));
  // Every cut inside the header or the data is detected.
  for (std::size_t cut : {std::size_t(0), std::size_t(3), std::size_t(10), std::size_t(30), std::size_t(100),
                          bytes.size() / 2, bytes.size() - 40}) {
    spit(d.file("cut.gguf"), bytes.substr(0, cut));
    CHECK_THROWS_AS(gguf_reader(d.file("cut.gguf")), model_load_error);
    CHECK_THROWS_WITH(gguf_reader(d.file("cut.gguf")), Catch::Contains("cut.gguf"));
  }
  std::string bad = bytes;
  bad[0] = 'X';
  spit(d.file("magic.gguf"), bad);
  CHECK_THROWS_WITH(gguf_reader(d.file("magic.gguf")), Catch::Contains("bad magic"));
  bad = bytes;
  bad[4] = 9;
  spit(d.file("version.gguf"), bad);
  CHECK_THROWS_WITH(gguf_reader(d.file("version.gguf")), Catch::Contains("version 9"));
  CHECK_THROWS_WITH(gguf_reader(d.file("absent.gguf")), Catch::Contains("cannot open"));
}

TEST_CASE("gguf: the writer refuses duplicates and mis-shaped tensors, writing nothing", "[gguf]") {
  temp_dir d("gguf");
  tensor t = make({2, 2}, 1.0f);
  tensor bad = t;
  bad.data.pop_back();
  const std::string p = d.file("x.gguf");
  CHECK_THROWS_AS(save_gguf(p, {{"k", gguf_value::u32(1)}, {"k", gguf_value::u32(2)}}, {}),
                  std::invalid_argument);
  CHECK_THROWS_AS(save_gguf(p, {}, {{"t", &t, ggml_type::f32}, {"t", &t, ggml_type::f32}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(save_gguf(p, {}, {{"t", &bad, ggml_type::f32}}), std::invalid_argument);
  CHECK_THROWS_AS(save_gguf(p, {}, {{"t", &t, ggml_type::q8_0}}),
                  std::invalid_argument);  // ne0 2 fills no block
  CHECK_FALSE(std::filesystem::exists(p));
  CHECK_FALSE(std::filesystem::exists(p + ".tmp"));
}

TEST_CASE("gguf: sizes that would wrap 64 bits are refused at open (fuzz finds)", "[gguf]") {
  // fuzz/regressions/gguf: an F32 tensor whose ne0 (7.8e18) made row_bytes overflow, and one of ne
  // [0, 7.2e16, 2.2e17] whose dimensions' product overflows before the zero is met (tensor::numel
  // in read()). Each is refused when the file is opened, naming the tensor, and nothing is read.
  for (const char* name : {"row_bytes_overflow", "dims_product_overflow"}) {
    INFO(name);
    const std::string path = std::string(ANCHORAGE_SOURCE_DIR) + "/fuzz/regressions/gguf/" + name;
    CHECK_THROWS_WITH(gguf_reader(path), Catch::Contains("has more than 2^61 values"));
  }
  // row_bytes itself: a byte count past 2^63 is no size.
  CHECK_FALSE(kernels::row_bytes(kernels::weight_type::f32, std::int64_t{1} << 62).has_value());
  CHECK(kernels::row_bytes(kernels::weight_type::f32, std::int64_t{1} << 60) == std::int64_t{1} << 62);
  CHECK_FALSE(kernels::row_bytes(kernels::weight_type::f16, std::int64_t{1} << 62).has_value());
  CHECK(kernels::row_bytes(kernels::weight_type::q4_k, std::int64_t{1} << 62) ==
        (std::int64_t{1} << 54) * 144);
}
