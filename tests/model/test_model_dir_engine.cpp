// A checkpoint directory loaded and run: the engine built from it produces the same logits, bit
// for bit, as the engine built from the weights that were written. Skips (with a warning) while
// the engine refuses the qwen35 layout; it runs as soon as the engine accepts it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_weights.hpp"
#include "runtime/model/model_dir.hpp"
#include "runtime/model/model_weights.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("a loaded checkpoint generates what its weights generate", "[model_dir][model_dir_engine]") {
  for (const std::string preset : {"qwen35-tiny", "qwen35-tiny-mtp"}) {
    INFO(preset);
    const model_config c = preset_config(preset);
    const tensor_map rounded = round_to(random_weights(c, 31), safetensors_dtype::bf16);
    checkpoint_options o;
    o.max_position = 4096;
    temp_dir dir("model-dir-engine");
    write_checkpoint(dir.str(), c, rounded, o);
    const loaded_model m = load_model_dir(dir.str());
    REQUIRE(!m.stored.empty());  // the BF16 matrices kept as stored

    // Converted at load (--weight-storage f32): the rounded weights' own logits, bit for bit.
    auto from_dir = std::make_unique<engine>(m.config, testing::as_f32(m));
    engine from_weights(m.config, rounded);
    const std::vector<token_id> prompt = {1, 5, 9, 200, 3, 77, 12, 0, 255, 31, 64};
    from_dir->prefill(prompt);
    from_weights.prefill(prompt);
    std::vector<token_id> a, b;
    for (int step = 0; step < 8; ++step) {
      CHECK(from_dir->last_logits() == from_weights.last_logits());
      CHECK(from_dir->last_draft_logits() == from_weights.last_draft_logits());
      CHECK(from_dir->last_draft_logits().empty() == !c.mtp);
      auto argmax = [](const std::vector<float>& l) {
        return static_cast<token_id>(std::max_element(l.begin(), l.end()) - l.begin());
      };
      a.push_back(argmax(from_dir->last_logits()));
      b.push_back(argmax(from_weights.last_logits()));
      from_dir->decode(a.back());
      from_weights.decode(b.back());
    }
    CHECK(a == b);

    // Kept as stored (the default): the same values through the stored kernels, whose sums run
    // in another order than BLAS's: the logits agree to rounding.
    engine stored(std::make_shared<const engine_weights>(m.config, m.weights, m.stored, kernels::backend::cpu,
                                                         m.stored_types));
    engine floats(m.config, rounded);
    stored.prefill(prompt);
    floats.prefill(prompt);
    float scale = 1.0f, worst = 0.0f;
    for (std::size_t i = 0; i < floats.last_logits().size(); ++i) {
      scale = std::max(scale, std::fabs(floats.last_logits()[i]));
      worst = std::max(worst, std::fabs(stored.last_logits()[i] - floats.last_logits()[i]));
    }
    CHECK(worst < 2e-4f * scale);
  }
}
