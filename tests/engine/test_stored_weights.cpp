// Weights kept as stored (issue 25): a GGUF's or a safetensors checkpoint's F16, BF16 and
// quantized matrices stay in the file's type and mapping (runtime/model/stored_weight.hpp), the
// engine multiplies by them with the stored kernels (runtime/engine/engine_linear.hpp), and every
// exactness property the caches rely on holds on them: a resume from a grid line equals a cold
// prefill bit for bit, a decode batch equals each slot's solo decode, a verify round equals decode.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine/engine.hpp"
#include "runtime/engine/compute_threads.hpp"
#include "kernels/quantize.hpp"
#include "runtime/engine/engine_batch.hpp"
#include "runtime/engine/engine_linear.hpp"
#include "runtime/engine/engine_options.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/engine/engine_weights.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_gguf.hpp"
#include "runtime/model/qwen35_gguf_tensors.hpp"
#include "runtime/model/qwen35_names.hpp"
#include "runtime/generation/generator.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"
#include "tests/support/process_probe.hpp"
#include "tests/support/product_settings.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A preset's random weights written as `dtype` and loaded back (kept as stored).
loaded_model exported(const temp_dir& d, const model_config& c, gguf_dtype dtype) {
  const std::string path = d.file(std::string("m-") + to_string(dtype) + ".gguf");
  save_qwen35_gguf(path, c, test_weights(c), nullptr, "", dtype);
  loaded_model m = load_model(path);
  m.config.gdn_chunk = c.gdn_chunk;  // the preset's arithmetic, not a checkpoint's defaults
  m.config.grid = c.grid;
  m.config.ctx_size = c.ctx_size;
  return m;
}

// A tiny preset, or qwen35-tiny made wide enough for the K types' blocks ("wide", "wide-mtp").
model_config config_of(const std::string& name) {
  if (name == "wide" || name == "wide-mtp") {
    model_config c = qwen35_wide_config(name == "wide-mtp");
    c.ctx_size = 1024;
    return c;
  }
  return test_config(name, 1024);
}

std::shared_ptr<const engine_weights> weights_of(const loaded_model& m) {
  return std::make_shared<const engine_weights>(m.config, m.weights, m.stored, kernels::backend::cpu,
                                                m.stored_types);
}

loaded_model converted(loaded_model m) {
  convert_stored_to_f32(m);
  return m;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

float max_abs(const std::vector<float>& a) {
  float m = 0;
  for (float v : a) m = std::max(m, std::fabs(v));
  return m;
}

// An engine on `m`'s stored weights against one on the same values converted to float32: the
// logits of a prefill and three decodes (and the draft's) within `tolerance` of their scale, and
// no float copy of a matrix on the stored side.
void check_against_converted(const loaded_model& m, float tolerance) {
  engine stored(weights_of(m));
  const loaded_model f = converted(m);
  engine floats(f.config, f.weights);
  const auto ids = test_tokens(45);
  stored.prefill(ids);
  floats.prefill(ids);
  const float scale = std::max(1.0f, max_abs(floats.last_logits()));
  CHECK(max_abs_diff(stored.last_logits(), floats.last_logits()) < tolerance * scale);
  for (int k = 0; k < 3; ++k) {
    stored.decode(ids[static_cast<std::size_t>(k)]);
    floats.decode(ids[static_cast<std::size_t>(k)]);
    CHECK(max_abs_diff(stored.last_logits(), floats.last_logits()) < tolerance * scale);
  }
  if (m.config.mtp)
    CHECK(max_abs_diff(stored.last_draft_logits(), floats.last_draft_logits()) < tolerance * scale);
  CHECK(stored.weights()->stored_bytes() > 0);
  CHECK(stored.weights()->bytes() < floats.weights()->bytes() / 20);
  CHECK(stored.weights()->digest() != floats.weights()->digest());
}

// A resume from `line` of `prompt` on fresh engines of `w`, against `cold`, which prefilled all of
// it: the logits (and the draft's), every section and row, then 8 greedy tokens and the state
// after them, bit for bit.
void check_resume_from_line(const std::shared_ptr<const engine_weights>& w, const model_config& c,
                            const std::vector<token_id>& prompt, std::size_t line, engine& cold) {
  engine first(w);
  first.prefill(slice(prompt, 0, line));
  const snapshot at_line = take_snapshot(first.cache_state());
  engine resumed(w);
  restore_snapshot(resumed.cache_state(), at_line);
  resumed.prefill(slice(prompt, line, prompt.size()));
  CHECK(same_bytes(resumed.last_logits(), cold.last_logits()));
  if (c.mtp) CHECK(same_bytes(resumed.last_draft_logits(), cold.last_draft_logits()));
  require_same_state(take_snapshot(resumed.cache_state()), take_snapshot(cold.cache_state()), cold.layout());
  generation_request r;
  r.max_tokens = 8;
  CHECK(generator(cold, r).run() == generator(resumed, r).run());
  require_same_state(take_snapshot(resumed.cache_state()), take_snapshot(cold.cache_state()), cold.layout());
}

// Three slots of `w` stepped together by decode_batch against three decoded alone (logits and
// state), then a verify round of `round` on slot 0 against one decode per id on its twin.
void check_batch_and_verify(const std::shared_ptr<const engine_weights>& w,
                            const std::vector<token_id>& round) {
  std::vector<std::unique_ptr<engine>> solo, batched;
  for (int s = 0; s < 3; ++s) {
    const auto p = test_tokens(20 + 7 * static_cast<std::size_t>(s), 11 + static_cast<std::uint64_t>(s));
    solo.push_back(std::make_unique<engine>(w));
    batched.push_back(std::make_unique<engine>(w));
    solo.back()->prefill(p);
    batched.back()->prefill(p);
  }
  const std::vector<token_id> next = {5, 9, 13};
  std::vector<engine*> slots;
  for (auto& e : batched) slots.push_back(e.get());
  decode_batch(slots, next);
  for (std::size_t s = 0; s < 3; ++s) {
    solo[s]->decode(next[s]);
    CHECK(same_bytes(batched[s]->last_logits(), solo[s]->last_logits()));
    require_same_state(take_snapshot(batched[s]->cache_state()), take_snapshot(solo[s]->cache_state()),
                       solo[s]->layout());
  }
  batched[0]->forward(round);
  for (std::size_t i = 0; i < round.size(); ++i) {
    solo[0]->decode(round[i]);
    CHECK(same_bytes(batched[0]->row_logits(i), solo[0]->last_logits()));
  }
}

}  // namespace

TEST_CASE("a GGUF's matrices are kept in the file's type, and convert to what the F32 path loads",
          "[gguf][stored]") {
  temp_dir d;
  const model_config c = test_config("qwen35-tiny-mtp");
  const gguf_dtype dtype =
      GENERATE(gguf_dtype::f32, gguf_dtype::f16, gguf_dtype::bf16, gguf_dtype::q8_0, gguf_dtype::q4_0);
  INFO("type " << to_string(dtype));
  const loaded_model m = exported(d, c, dtype);
  const loaded_model f = converted(m);
  REQUIRE(f.stored.empty());
  std::size_t kept = 0;
  for (const tensor_spec& s : qwen35_weight_specs(m.config)) {
    INFO(s.name);
    const bool matrix = s.shape.size() == 2;
    const std::vector<std::int64_t> gguf_shape = qwen35_to_gguf(s.name, test_weights(c).at(s.name), c).shape;
    const bool f32_in_file = qwen35_gguf_tensor_type(s.name, gguf_shape, c, dtype) == ggml_type::f32;
    if (matrix) {  // every matrix, float32 ones too (mapped, not copied)
      REQUIRE(m.stored.count(s.name) == 1);
      CHECK(m.weights.count(s.name) == 0);
      CHECK((m.stored.at(s.name).type == kernels::weight_type::f32) == f32_in_file);
      ++kept;
      // to_f32 (the value heads put back in grouped order) is the F32 path's tensor, bit for bit.
      const tensor t = to_f32(m.stored.at(s.name));
      CHECK(t.shape == f.weights.at(s.name).shape);
      CHECK(std::memcmp(t.data.data(), f.weights.at(s.name).data.data(), t.data.size() * sizeof(float)) == 0);
    } else {
      CHECK(m.stored.count(s.name) == 0);
      CHECK(m.weights.count(s.name) == 1);
    }
  }
  CHECK(kept >= 20);
  // In place: the stored bytes are the file's, not a copy (they lie inside its mapping's range
  // of addresses, one after another in file order).
  const stored_weight& q = m.stored.at("model.layers.0.linear_attn.in_proj_qkv.weight");
  CHECK(q.order.along == v_head_order::axis::rows);  // hv = 2 hk: the GGUF's tiled value heads
  CHECK(m.stored.at("model.layers.0.linear_attn.out_proj.weight").order.along == v_head_order::axis::columns);
  CHECK(m.stored.at("model.layers.0.mlp.up_proj.weight").order.along == v_head_order::axis::none);
}

TEST_CASE("an engine on stored weights computes the converted engine's logits within rounding",
          "[gguf][stored][engine]") {
  // Both engines multiply the same values; only the order of the float sums differs (the stored
  // kernels' fixed order against BLAS's), so the logits agree to rounding. A value head read in
  // the file's tiled order, a part of gate_up put in the other's place or a row of the wrong
  // type would move them by the logits' own size.
  temp_dir d;
  struct variant {
    const char* preset;
    gguf_dtype dtype;
  };
  const variant v =
      GENERATE(variant{"qwen35-tiny-mtp", gguf_dtype::bf16}, variant{"qwen35-tiny-mtp", gguf_dtype::q8_0},
               variant{"qwen35-tiny", gguf_dtype::q4_0}, variant{"wide-mtp", gguf_dtype::q4_k_m},
               variant{"wide", gguf_dtype::q5_k}, variant{"wide", gguf_dtype::q6_k});
  INFO(v.preset << " " << to_string(v.dtype));
  const model_config c = config_of(v.preset);
  const loaded_model m = exported(d, c, v.dtype);
  REQUIRE(!m.stored.empty());
  activations_as f32(product_activations::f32);  // as they are, the default (8 bits: below)
  check_against_converted(m, 2e-4f);  // and the weights are held as stored: no float copy of a matrix
}

TEST_CASE("an F32 GGUF's matrices are read in the file's mapping, with the converted floats' products",
          "[gguf][stored][engine]") {
  // A float32 matrix in the file's order is multiplied exactly as the same floats converted (the
  // one float32 path, pointed at the mapping); a GGUF's tiled value heads (in_proj_qkv, z, a, b,
  // out_proj) go through the stored kernels with their permutation, so the logits agree to
  // rounding, and not further: a head read in the tiled order would move them by their own size.
  temp_dir d;
  const model_config c = config_of(GENERATE(as<std::string>{}, "qwen35-tiny-mtp", "qwen35moe-tiny-mtp"));
  const loaded_model m = exported(d, c, gguf_dtype::f32);
  REQUIRE(!m.stored.empty());
  CHECK(m.stored_types.empty());  // float32 is what the digest always assumed
  for (const auto& [name, w] : m.stored) CHECK(w.type == kernels::weight_type::f32);
  check_against_converted(m, 2e-5f);
}

TEST_CASE("on stored weights a resume from a grid line equals a cold prefill bit for bit",
          "[exact][stored][engine]") {
  temp_dir d;
  const std::string preset = GENERATE(as<std::string>{}, "qwen35-tiny-mtp", "wide-mtp");
  INFO(preset);
  const model_config c = config_of(preset);
  const loaded_model m = exported(d, c, preset == "wide-mtp" ? gguf_dtype::q4_k_m : gguf_dtype::q8_0);
  const auto w = weights_of(m);
  const std::size_t n = 3 * c.grid + 9, line = 2 * c.grid;
  const auto prompt = test_tokens(n);
  engine cold(w);
  cold.prefill(prompt);
  check_resume_from_line(w, c, prompt, line, cold);
}

TEST_CASE("on stored weights a decode batch and a verify round are each slot's solo decode bit for bit",
          "[exact][stored][batch][engine]") {
  temp_dir d;
  const model_config c = config_of("qwen35-tiny-mtp");
  const loaded_model m = exported(d, c, gguf_dtype::q4_0);
  check_batch_and_verify(weights_of(m), {7, 3, 21});
}

TEST_CASE(
    "with 8-bit activations a resume from a grid line equals a cold prefill bit for bit, "
    "on one core or two",
    "[exact][stored][int8][engine]") {
  temp_dir d;
  const std::string preset = GENERATE(as<std::string>{}, "qwen35-tiny-mtp", "wide-mtp");
  INFO(preset);
  model_config c = config_of(preset);
  c.grid = 64;  // chunks of 32 rows or more: the prefill form, where the activations are rounded
  const loaded_model m = exported(d, c, preset == "wide-mtp" ? gguf_dtype::q4_k_m : gguf_dtype::q8_0);
  const auto w = weights_of(m);
  const std::size_t n = 3 * c.grid + 9, line = 2 * c.grid;
  const auto prompt = test_tokens(n);

  engine floats(w);  // the default: float activations
  floats.prefill(prompt);
  activations_as q8(product_activations::q8);
  engine cold(w);
  {
    threads_as one(1);
    cold.prefill(prompt);
  }
  // The rounding ran: other logits than float activations give, by more than float rounding,
  // and another fingerprint.
  const float scale = std::max(1.0f, max_abs(floats.last_logits()));
  CHECK(max_abs_diff(cold.last_logits(), floats.last_logits()) > 1e-4f * scale);
  CHECK(max_abs_diff(cold.last_logits(), floats.last_logits()) < 5e-2f * scale);
  CHECK(cold.layout().fingerprint != floats.layout().fingerprint);

  threads_as two(2);
  check_resume_from_line(w, c, prompt, line, cold);
}

TEST_CASE("8-bit activations: a decode batch and a verify round are each slot's solo decode bit for bit",
          "[exact][stored][batch][int8][engine]") {
  temp_dir d;
  const model_config c = config_of("wide-mtp");
  const loaded_model m = exported(d, c, gguf_dtype::q4_k_m);
  activations_as q8(product_activations::q8);
  check_batch_and_verify(weights_of(m), {7, 3, 21, 2, 8, 30});  // past few_rows' four rows
}

TEST_CASE(
    "8-bit activations: the converted engine's logits within the rounding, float32 weights "
    "untouched, the flag",
    "[stored][int8][engine]") {
  temp_dir d;
  model_config c = config_of("wide");
  c.grid = 64;
  const gguf_dtype dtype = GENERATE(gguf_dtype::q8_0, gguf_dtype::q4_0, gguf_dtype::q5_k, gguf_dtype::q4_k_m);
  INFO(to_string(dtype));
  const loaded_model m = exported(d, c, dtype);
  const loaded_model f = converted(m);
  engine floats(f.config, f.weights);
  const auto ids = test_tokens(2 * c.grid + 5);
  floats.prefill(ids);
  activations_as q8(product_activations::q8);
  engine floats_q8(f.config, f.weights);
  engine stored(weights_of(m));
  stored.prefill(ids);
  const std::vector<float> q8_prefill = stored.last_logits();
  // Rounding each activation to 8 bits moves a product by up to half a step per value, as in
  // llama.cpp's CPU path: about 1% of the logits' scale here, against 2e-4 with float activations
  // (the case above), over a prefill and decodes.
  const float scale = std::max(1.0f, max_abs(floats.last_logits()));
  CHECK(max_abs_diff(stored.last_logits(), floats.last_logits()) < 3e-2f * scale);
  floats_q8.prefill(ids);  // float32 weights never take the 8-bit form: the same bits either way
  CHECK(same_bytes(floats_q8.last_logits(), floats.last_logits()));
  for (int k = 0; k < 3; ++k) {
    stored.decode(ids[static_cast<std::size_t>(k)]);
    floats_q8.decode(ids[static_cast<std::size_t>(k)]);
    CHECK(max_abs_diff(stored.last_logits(), floats_q8.last_logits()) < 3e-2f * scale);
  }

  engine_options o;
  CHECK(o.activations == "f32");
  CHECK_THROWS_WITH(o.parse("--activations", "int4"), Catch::Contains("--activations"));
  REQUIRE(o.parse("--activations", "f32"));
  (void)o.load();
  CHECK(current_product_activations() == product_activations::f32);
  REQUIRE(o.parse("--activations", "q8"));
  (void)o.load();
  CHECK(current_product_activations() == product_activations::q8);
  REQUIRE(o.parse("--activations", "auto"));
  (void)o.load();
  CHECK(current_product_activations() ==
        (kernels::cpu::int8_vectors() ? product_activations::q8 : product_activations::f32));
  for (const auto a : {product_activations::f32, product_activations::q8, product_activations::automatic})
    CHECK(product_activations_named(to_string(a)) == a);
  CHECK(std::string(to_string(product_activations::automatic)) == "auto");
  CHECK_FALSE(product_activations_named("q4"));
  // An engine keeps the setting it was built under, whatever is set later.
  engine built_q8(weights_of(m));
  set_product_activations(product_activations::f32);
  engine built_f32(weights_of(m));
  CHECK(built_q8.layout().fingerprint != built_f32.layout().fingerprint);
  set_product_activations(product_activations::q8);
  built_q8.prefill(ids);
  built_f32.prefill(ids);
  CHECK(same_bytes(built_q8.last_logits(), q8_prefill));
  CHECK(max_abs_diff(built_f32.last_logits(), q8_prefill) > 0.0f);
}

TEST_CASE("weights kept as stored, converted to F32 or stored in another type digest apart",
          "[stored][gguf]") {
  temp_dir d;
  const model_config c = test_config("qwen35-tiny");
  const loaded_model q8 = exported(d, c, gguf_dtype::q8_0);
  const auto stored = weights_of(q8);
  const loaded_model f = converted(q8);
  const auto as_f32 = weights_of(f);
  CHECK(stored->digest() != as_f32->digest());
  CHECK(weights_of(exported(d, c, gguf_dtype::q8_0))->digest() == stored->digest());
  CHECK(weights_of(exported(d, c, gguf_dtype::q4_0))->digest() != stored->digest());
  // The fingerprint the caches key on follows the digest.
  CHECK(engine(stored).layout().fingerprint != engine(as_f32).layout().fingerprint);
}

TEST_CASE("the flag --weight-storage f32 converts at load, and another value is refused", "[stored][gguf]") {
  temp_dir d;
  const model_config c = test_config("qwen35-tiny");
  const std::string path = d.file("m.gguf");
  save_qwen35_gguf(path, c, test_weights(c), nullptr, "", gguf_dtype::bf16);
  engine_options o;
  REQUIRE(o.parse("--model", path));
  CHECK(!o.load().stored.empty());
  REQUIRE(o.parse("--weight-storage", "f32"));
  const loaded_model m = o.load();
  CHECK(m.stored.empty());
  CHECK(m.stored_types.at("model.layers.0.mlp.up_proj.weight") == "BF16");
  CHECK_THROWS_WITH(o.parse("--weight-storage", "q4"), Catch::Contains("--weight-storage is stored or f32"));
}

TEST_CASE("a stored model's resident memory is its file, not a float copy", "[stored][memory]") {
  // qwen35-small in Q8_0 (about a quarter of its F32 size): after loading it and running a
  // prefill, which reads every matrix, the process holds the file's pages once (mapped) plus the
  // engine's own buffers (state, activations, the few float tensors): within 10% of that sum. The
  // same file converted to F32 costs four times the matrices. An F32 file the same: its matrices
  // are read in the mapping, not copied (once, the float copy beside the mapped pages cost 1.8x).
#if defined(__SANITIZE_ADDRESS__) || defined(ANCHORAGE_TESTS_UNDER_ASAN)
  // AddressSanitizer's shadow memory and quarantine of freed blocks are resident too: the
  // resident set says nothing of the weights there. The figure is checked in the plain build.
  SUCCEED("resident memory is not measured under AddressSanitizer");
  return;
#endif
  temp_dir d;
  model_config c = test_config("qwen35-small", 512);
  c.grid = 64;
  const gguf_dtype dtype = GENERATE(gguf_dtype::q8_0, gguf_dtype::f32);
  INFO(to_string(dtype));
  const std::string path = d.file(std::string("small-") + to_string(dtype) + ".gguf");
  save_qwen35_gguf(path, c, test_weights(c), nullptr, "", dtype);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  const auto file = static_cast<std::size_t>(st.st_size);

  const std::size_t before = resident_bytes();
  std::size_t engine_own = 0, stored_growth = 0;
  {
    loaded_model m = load_model(path);
    m.config.gdn_chunk = c.gdn_chunk;  // the preset's arithmetic, not a checkpoint's defaults
    m.config.grid = c.grid;
    m.config.ctx_size = c.ctx_size;
    engine e(weights_of(m));
    e.prefill(test_tokens(100));
    stored_growth = resident_bytes() - before;
    // What the engine holds of its own: float tensors, state sections, K/V rows for the context
    // and activation buffers for a chunk (a generous bound: every buffer it allocated).
    const state_layout& l = e.layout();
    const std::size_t state = l.section_bytes() + l.row_bytes() * static_cast<std::size_t>(c.ctx_size);
    engine_own = e.weights()->bytes() + 2 * state + (8u << 20);
    std::fprintf(
        stderr,
        "stored memory: qwen35-small %s file %zu B, resident growth %zu B, engine's own bound %zu B\n",
        to_string(dtype), file, stored_growth, engine_own);
    CHECK(stored_growth <= static_cast<std::size_t>(1.1 * static_cast<double>(file + engine_own)));
    CHECK(stored_growth >= file / 2);  // the mapping's pages are there: this measured something
    CHECK(e.weights()->stored_bytes() > file * 9 / 10);
  }
  loaded_model m = load_model(path);
  convert_stored_to_f32(m);
  m.config.gdn_chunk = c.gdn_chunk;  // the preset's arithmetic, not a checkpoint's defaults
  m.config.grid = c.grid;
  m.config.ctx_size = c.ctx_size;
  const auto w = weights_of(m);
  if (dtype == gguf_dtype::q8_0) CHECK(w->bytes() > 3 * file);
  if (dtype == gguf_dtype::f32) CHECK(w->bytes() > file * 9 / 10);  // converted: a float copy of it all
}

TEST_CASE("a child of fork runs stored products alone, with the parent's bits", "[stored][fork]") {
  // The stored products split their rows over a pool of threads started by the first product
  // big enough for it; a child of fork() has none of those threads. A product in the child must
  // still finish (the pool would wait for workers that are not there) with the same bits.
  const int m = 8, n = 256, kd = 512;
  std::vector<float> w(static_cast<std::size_t>(n) * kd), x(static_cast<std::size_t>(m) * kd);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * static_cast<float>(i));
  const auto row = static_cast<std::size_t>(kernels::row_bytes(kernels::weight_type::q8_0, kd).value());
  std::vector<unsigned char> q(row * n);
  for (int r = 0; r < n; ++r)
    kernels::quantize_row(kernels::weight_type::q8_0, w.data() + static_cast<std::size_t>(r) * kd,
                          q.data() + row * r, kd);
  linear_weight lw;
  lw.parts.push_back({kernels::weight_type::q8_0, q.data(), n, v_head_order{}});
  const kernels::ops& k = kernels::ops_for(kernels::backend::cpu);
  linear_scratch scratch;
  std::vector<float> parent(static_cast<std::size_t>(m) * n);
  linear(k, false, m, n, kd, x.data(), kd, lw, 0.0f, parent.data(), n, scratch);  // starts the pool

  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(20);  // a product waiting for the parent's threads ends the child here
    std::vector<float> got(parent.size());
    linear_scratch s;
    linear(k, false, m, n, kd, x.data(), kd, lw, 0.0f, got.data(), n, s);
    ::_exit(std::memcmp(got.data(), parent.data(), got.size() * sizeof(float)) == 0 ? 0 : 3);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  INFO("child status " << status);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // And the parent's pool still serves it.
  std::vector<float> again(parent.size());
  linear(k, false, m, n, kd, x.data(), kd, lw, 0.0f, again.data(), n, scratch);
  CHECK(std::memcmp(again.data(), parent.data(), again.size() * sizeof(float)) == 0);
}
