// Tests for runtime/model/half_float (the F16/BF16 rounding the checkpoint writer and
// save_safetensors' dtype option use) and safetensors_view's handling of other dtypes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "runtime/model/half_float.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/model/safetensors_view.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace

TEST_CASE("every F16 and BF16 value survives float and back", "[model_dir]") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto x = static_cast<std::uint16_t>(h);
    const bool f16_nan = (x & 0x7c00) == 0x7c00 && (x & 0x3ff) != 0;
    const bool bf16_nan = (x & 0x7f80) == 0x7f80 && (x & 0x7f) != 0;
    if (!f16_nan) REQUIRE(float_to_f16(f16_to_float(x)) == x);
    if (!bf16_nan) REQUIRE(float_to_bf16(bf16_to_float(x)) == x);
    if (f16_nan) REQUIRE(std::isnan(f16_to_float(float_to_f16(f16_to_float(x)))));
    if (bf16_nan) REQUIRE(std::isnan(bf16_to_float(float_to_bf16(bf16_to_float(x)))));
  }
}

TEST_CASE("F16 and BF16 round to nearest, ties to even", "[model_dir]") {
  // 1 + 2^-11 lies halfway between F16 1.0 (0x3c00, even) and 1 + 2^-10 (0x3c01).
  CHECK(float_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // halfway, up to even
  CHECK(float_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);
  CHECK(float_to_f16(65504.0f) == 0x7bff);
  CHECK(float_to_f16(65519.0f) == 0x7bff);
  CHECK(float_to_f16(65520.0f) == 0x7c00);               // halfway to 65536 rounds to infinity
  CHECK(float_to_f16(std::ldexp(1.0f, -24)) == 0x0001);  // the smallest subnormal
  CHECK(float_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // halfway to it, down to even zero
  CHECK(float_to_f16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(float_to_f16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  // BF16: 1 + 2^-8 is halfway between 0x3f80 and 0x3f81.
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(float_to_bf16(from_bits(0x3f808001u)) == 0x3f81);
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
}

TEST_CASE("save_safetensors writes BF16 and F16 that read back as the rounded values", "[model_dir]") {
  temp_dir dir("half");
  const tensor_map w = {{"a", tensor{{3}, {1.0f / 3, -2.5e-6f, 70000.0f}}}, {"b", tensor{{2}, {0.1f, 7.0f}}}};
  safetensors_write_options o;
  o.dtype = safetensors_dtype::bf16;
  o.per_tensor["b"] = safetensors_dtype::f16;
  save_safetensors(dir.file("h.safetensors"), w, {}, o);
  const safetensors_view v = safetensors_view::open(dir.file("h.safetensors"));
  CHECK(v.find("a")->dtype == "BF16");
  CHECK(v.find("b")->dtype == "F16");
  CHECK(v.find("a")->end - v.find("a")->begin == 6);
  const tensor_map back = load_safetensors(dir.file("h.safetensors")).tensors;
  CHECK(back.at("a").data == round_to({{"a", w.at("a")}}, safetensors_dtype::bf16).at("a").data);
  CHECK(back.at("b").data == round_to({{"b", w.at("b")}}, safetensors_dtype::f16).at("b").data);
  CHECK(back.at("b").data[1] == 7.0f);
}

TEST_CASE("safetensors_view lists tensors of any dtype and refuses to convert the others", "[model_dir]") {
  temp_dir dir("half");
  write_raw_safetensors(dir.file("i.safetensors"),
                        {{"i", {{"dtype", "I64"}, {"shape", {2}}, {"data_offsets", {0, 16}}}},
                         {"q", {{"dtype", "Q4_X"}, {"shape", {3}}, {"data_offsets", {16, 18}}}}},
                        std::string(18, '\0'));
  const safetensors_view v = safetensors_view::open(dir.file("i.safetensors"));
  REQUIRE(v.entries().size() == 2);
  CHECK_THROWS_WITH(v.read(*v.find("i")),
                    Catch::Matchers::Contains("i.safetensors") &&
                        Catch::Matchers::Contains("tensor 'i': unsupported dtype 'I64'"));
  CHECK_THROWS_AS(v.read(*v.find("q")), safetensors_error);
  // load_safetensors keeps refusing such a file as a whole.
  CHECK_THROWS_AS(load_safetensors(dir.file("i.safetensors")), safetensors_error);
}
