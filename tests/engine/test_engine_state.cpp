// The state adapter's layout and contract, the engine's input checks and the fingerprint.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "runtime/engine/engine.hpp"
#include "runtime/model/model_weights.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::vector<std::string> names_of(const std::vector<section_info>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.name);
  return out;
}
std::vector<std::string> names_of(const std::vector<view_info>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.name);
  return out;
}

}  // namespace

TEST_CASE("the two presets expose different layouts", "[engine][state]") {
  const std::string family = GENERATE(as<std::string>{}, "", "qwen35-");
  INFO("presets " << family << "tiny, " << family << "tiny-mtp");
  const model_config plain = test_config(family + "tiny", 1000);
  const model_config draft = test_config(family + "tiny-mtp", 1000);
  auto a = make_engine(plain);
  auto b = make_engine(draft);
  const auto& la = a->layout();
  const auto& lb = b->layout();
  CHECK(names_of(la.sections) == std::vector<std::string>{"gdn.S", "gdn.conv"});
  CHECK(names_of(la.views) == std::vector<std::string>{"K", "V"});
  CHECK(names_of(lb.sections) == std::vector<std::string>{"gdn.S", "gdn.conv", "mtp.h_last"});
  CHECK(names_of(lb.views) == std::vector<std::string>{"K", "V", "mtp.K", "mtp.V"});

  const int ng = plain.count_gdn(), na = plain.count_attention();
  CHECK(la.sections[0].bytes == sizeof(float) * ng * plain.gdn_hv * plain.gdn_dk * plain.gdn_dv);
  CHECK(la.sections[1].bytes == sizeof(float) * ng * (plain.conv_kernel - 1) * plain.conv_channels());
  CHECK(la.views[0].bytes_per_token == sizeof(float) * na * plain.n_kv * plain.head_dim);
  CHECK(la.views[0].capacity == 1000);
  CHECK(lb.sections[2].bytes == sizeof(float) * draft.d_model);
  CHECK(lb.views[2].bytes_per_token == sizeof(float) * draft.n_kv * draft.head_dim);
  CHECK(la.grid == plain.grid);
  CHECK(la.section_index("gdn.conv") == std::optional<std::size_t>(1));
  CHECK_FALSE(la.view_index("mtp.K").has_value());
  CHECK(la.fingerprint != lb.fingerprint);
}

TEST_CASE("the fingerprint follows weights, grid and layout, not capacity", "[engine][state]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  model_config c = test_config(preset, 512);
  const auto f = make_engine(c)->layout().fingerprint;
  CHECK(make_engine(c)->layout().fingerprint == f);  // stable
  model_config bigger = c;
  bigger.ctx_size = 2048;
  CHECK(make_engine(bigger)->layout().fingerprint == f);  // capacity is not arithmetic
  CHECK(make_engine(c, 8)->layout().fingerprint != f);    // other weights
  model_config other_grid = c;
  other_grid.grid = 64;
  CHECK(make_engine(other_grid)->layout().fingerprint != f);
}

TEST_CASE("the adapter refuses copies outside the buffers", "[engine][state]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  auto e = make_engine(test_config(preset, 100));
  auto& s = e->cache_state();
  std::vector<unsigned char> buf(s.layout().views[0].bytes_per_token * 101);
  CHECK_THROWS_AS(s.copy_rows_out(0, 0, 101, buf.data()), std::out_of_range);
  CHECK_THROWS_AS(s.copy_rows_in(0, 5, 4, buf.data()), std::out_of_range);
  CHECK_THROWS_AS(s.copy_rows_out(9, 0, 1, buf.data()), std::out_of_range);
  CHECK_THROWS_AS(s.copy_section_out(9, buf.data()), std::out_of_range);
  CHECK_THROWS_AS(s.set_valid_length(101), std::out_of_range);
  CHECK_NOTHROW(s.copy_rows_out(0, 0, 100, buf.data()));
  CHECK_NOTHROW(s.set_valid_length(100));
}

TEST_CASE("rows and sections round-trip through the adapter byte for byte", "[engine][state]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny-mtp", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  auto e = make_engine(test_config(preset, 256));
  e->prefill(test_tokens(70));
  auto& s = e->cache_state();
  for (std::size_t v = 0; v < s.layout().views.size(); ++v) {
    const std::size_t row = s.layout().views[v].bytes_per_token;
    std::vector<unsigned char> out(row * 30), back(row * 30);
    s.copy_rows_out(v, 20, 50, out.data());
    std::vector<unsigned char> noise(out.size(), 0xAB);
    s.copy_rows_in(v, 20, 50, noise.data());
    s.copy_rows_out(v, 20, 50, back.data());
    CHECK(back == noise);
    s.copy_rows_in(v, 20, 50, out.data());
    s.copy_rows_out(v, 20, 50, back.data());
    CHECK(back == out);
  }
}

TEST_CASE("the engine checks its input before running anything", "[engine]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  auto e = make_engine(test_config(preset, 64));
  e->prefill(test_tokens(10));
  const auto before = take_snapshot(e->cache_state());
  CHECK_THROWS_AS(e->prefill({1, 2, 272}), std::invalid_argument);
  CHECK_THROWS_AS(e->prefill({-1}), std::invalid_argument);
  CHECK_THROWS_AS(e->prefill(test_tokens(55)), std::length_error);
  CHECK_THROWS_AS(e->decode(300), std::invalid_argument);
  const auto after = take_snapshot(e->cache_state());
  CHECK(after.length == 10);
  CHECK(after.sections == before.sections);
  CHECK(after.views == before.views);
  CHECK_NOTHROW(e->prefill(test_tokens(54)));
  CHECK(e->length() == 64);
  CHECK_THROWS_AS(e->decode(1), std::length_error);
}

TEST_CASE("a prefill in steps runs one chunk per step, ending on lines", "[engine]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  const model_config c = test_config(preset, 512);
  auto e = make_engine(c);
  e->prefill(test_tokens(c.grid + 5));  // now off the grid
  e->begin_prefill(test_tokens(2 * c.grid + 3, 9));
  std::vector<std::size_t> ends;
  while (e->prefill_step()) ends.push_back(e->length());
  ends.push_back(e->length());
  const std::size_t g = static_cast<std::size_t>(c.grid);
  CHECK(ends == std::vector<std::size_t>{2 * g, 3 * g, 3 * g + 8});
  CHECK(e->prefill_remaining() == 0);
}

TEST_CASE("invalid grids and presets are refused with a message", "[engine]") {
  model_config c = preset_config("tiny");
  c.grid = 40;  // not a multiple of the delta rule's sub-chunk
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("multiple of 16"));
  CHECK_THROWS_WITH(preset_config("huge"), Catch::Contains("tiny"));
}

TEST_CASE("weights saved to safetensors load into an identical engine", "[engine][weights]") {
  const std::string family = GENERATE(as<std::string>{}, "", "qwen35-");
  INFO("presets " << family << "tiny-mtp, " << family << "tiny");
  const model_config c = test_config(family + "tiny-mtp", 256);
  const auto dir =
      std::filesystem::temp_directory_path() / ("anchorage-w-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "w.safetensors").string();
  save_weights(path, test_weights(c), c);
  engine loaded(c, load_weights(path, c));
  auto original = make_engine(c);
  const auto prompt = test_tokens(50);
  loaded.prefill(prompt);
  original->prefill(prompt);
  CHECK(loaded.last_logits() == original->last_logits());
  CHECK(loaded.layout().fingerprint == original->layout().fingerprint);

  // a file of the other preset lacks the draft layer: the error names the missing tensors
  const model_config plain = test_config(family + "tiny", 256);
  save_weights(path, test_weights(plain), plain);
  const std::string missing = family.empty() ? "mtp.in" : "mtp.fc.weight";
  CHECK_THROWS_WITH(load_weights(path, c), Catch::Contains("missing tensor '" + missing + "'"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("random weights are a pure function of the seed", "[engine][weights]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  const model_config c = test_config(preset, 64);
  CHECK(weights_digest(random_weights(c, 3)) == weights_digest(random_weights(c, 3)));
  CHECK(weights_digest(random_weights(c, 3)) != weights_digest(random_weights(c, 4)));
}
