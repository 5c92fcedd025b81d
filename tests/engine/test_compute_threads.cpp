// --threads (runtime/engine/compute_threads.hpp): the products use as many cores as asked and give
// the same bits however many that is.
#include <catch2/catch.hpp>

#include <thread>

#include "runtime/engine/compute_threads.hpp"
#include "runtime/engine/engine_batch.hpp"
#include "runtime/engine/engine_options.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/qwen35_gguf.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("the flag --threads is parsed, refused below 1 and applied when the model loads",
          "[engine][threads]") {
  const int before = compute_threads();
  engine_options o;
  CHECK_THROWS_WITH(o.parse("--threads", "0"), Catch::Contains("--threads"));
  CHECK_THROWS_WITH(o.parse("--threads", "two"), Catch::Contains("--threads"));
  REQUIRE(o.parse("--threads", "1"));
  o.preset = "tiny";
  (void)o.load();
  CHECK(compute_threads() == 1);
  set_compute_threads(1000);
  CHECK(compute_threads() == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  set_compute_threads(before);
}

TEST_CASE("a model's weights kept as stored give the same logits on one thread and on every core",
          "[engine][threads][stored]") {
  const int before = compute_threads();
  temp_dir d("threads");
  const model_config c = qwen35_wide_config(false);
  save_qwen35_gguf(d.file("q8.gguf"), c, test_weights(c), nullptr, "", gguf_dtype::q8_0);
  loaded_model m = load_model(d.file("q8.gguf"));
  REQUIRE_FALSE(m.stored.empty());
  const auto w = std::make_shared<const engine_weights>(m.config, m.weights, m.stored, kernels::backend::cpu,
                                                        m.stored_types);
  const std::vector<token_id> ids = test_tokens(80);
  std::vector<std::vector<float>> logits;
  for (int t : {1, 2}) {
    set_compute_threads(t);
    engine e(w);
    e.prefill(ids);
    e.decode(5);
    logits.push_back(e.last_logits());
  }
  CHECK(logits[0] == logits[1]);
  set_compute_threads(before);
}

TEST_CASE("float32 weights give the same decode and batch logits on one thread and on every core",
          "[engine][threads]") {
  const int before = compute_threads();
  // An MLP wide enough that its products pass the pool's threshold (a million multiply-adds), so
  // two threads do split a decode's rows.
  model_config c = qwen35_wide_config(false);
  c.n_layers = 4;
  c.pattern = "GGGA";
  c.mlp_hidden = 4096;
  c.validate();
  const auto w = std::make_shared<const engine_weights>(c, random_weights(c, 7), kernels::backend::cpu);
  const std::vector<token_id> ids = test_tokens(80);
  std::vector<std::vector<float>> logits, batch;
  for (int t : {1, 2}) {
    set_compute_threads(t);
    engine e(w), f(w);
    e.prefill(ids);
    f.prefill(ids);
    e.decode(5);
    logits.push_back(e.last_logits());
    decode_batch({&e, &f}, {7, 9});
    batch.push_back(e.last_logits());
    batch.push_back(f.last_logits());
  }
  CHECK(logits[0] == logits[1]);
  CHECK(batch[0] == batch[2]);
  CHECK(batch[1] == batch[3]);
  set_compute_threads(before);
}
