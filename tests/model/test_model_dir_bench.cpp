// How long loading a ~110 MB BF16 checkpoint directory takes (hidden: run it on purpose).
//
//   ANCHORAGE_MODEL_DIR_BENCH=/tmp/ckpt-bench anchorage_tests "[model_dir_bench]"
//
// writes the checkpoint there when the directory has no config.json yet (so that a second run
// measures the load alone, in a process whose peak memory is the load's), then loads it and
// prints the load time and the process's peak resident set.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "runtime/model/model_dir.hpp"
#include "runtime/model/model_weights.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("load time of a ~110 MB BF16 checkpoint", "[.][model_dir_bench]") {
  model_config c = preset_config("qwen35-tiny");
  c.vocab = 4096;
  c.d_model = 768;
  c.mlp_hidden = 2048;
  c.gdn_hk = 4;
  c.gdn_hv = 8;
  c.gdn_dk = 64;
  c.gdn_dv = 64;
  c.n_q = 4;
  c.n_kv = 2;
  c.head_dim = 64;
  c.rope_dims = 16;
  c.mtp = true;
  c.validate();

  std::unique_ptr<temp_dir> scratch;
  const char* env = std::getenv("ANCHORAGE_MODEL_DIR_BENCH");
  std::string dir;
  if (env != nullptr) {
    dir = env;
  } else {
    scratch = std::make_unique<temp_dir>("model-dir-bench");
    dir = scratch->str();
  }
  if (!std::filesystem::exists(std::filesystem::path(dir) / "config.json")) {
    checkpoint_options o;
    o.shards = 4;
    write_checkpoint(dir, c, random_weights(c, 1), o);
  }
  std::uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") bytes += e.file_size();

  const auto t0 = std::chrono::steady_clock::now();
  const loaded_model m = load_model_dir(dir);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::int64_t values = 0;
  for (const auto& [name, t] : m.weights) values += t.numel();
  for (const auto& [name, w] : m.stored) values += w.rows() * w.cols();
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  std::cout << "{\"checkpoint_bytes\": " << bytes << ", \"parameters\": " << values << ", \"load_ms\": " << ms
            << ", \"MB_per_s\": " << static_cast<double>(bytes) / 1e6 / (ms / 1e3)
            << ", \"float_weights_MB\": " << static_cast<double>(values) * 4 / 1e6
            << ", \"peak_rss_MB\": " << static_cast<double>(ru.ru_maxrss) / 1e3 << "}\n";
  CHECK(values * 2 <= static_cast<std::int64_t>(bytes));
  CHECK(m.weights.size() + m.stored.size() == weight_specs(m.config).size());
}
