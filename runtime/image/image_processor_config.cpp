#include "runtime/image/image_processor_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "runtime/image/image_rows.hpp"

namespace anchorage {

namespace {

constexpr std::int64_t max_pixels_cap = std::int64_t{1} << 28;

std::string bad(const std::string& key, const std::string& why) {
  return "preprocessor_config.json: " + key + " " + why;
}

// An integer value: a JSON integer, or a number with no fractional part, within [lo, hi].
expected<std::int64_t> integer_of(const nlohmann::json& v, const std::string& key, std::int64_t lo,
                                  std::int64_t hi) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
      return status::failure(bad(key, "is " + v.dump() + ", above " + std::to_string(hi)));
    }
    const std::int64_t i = v.get<std::int64_t>();
    if (i < lo || i > hi) {
      return status::failure(bad(key, "is " + std::to_string(i) + ", outside [" + std::to_string(lo) + ", " +
                                          std::to_string(hi) + "]"));
    }
    return i;
  }
  if (!v.is_number_float()) return status::failure(bad(key, "must be a number, got " + v.dump()));
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
    return status::failure(bad(key, "must be an integer in [" + std::to_string(lo) + ", " +
                                        std::to_string(hi) + "], got " + v.dump()));
  }
  return static_cast<std::int64_t>(d);
}

// image_mean / image_std: three numbers, or one number for all channels (HF accepts both).
status channels_of(const nlohmann::json& v, const std::string& key, float out[3]) {
  if (v.is_number()) {
    out[0] = out[1] = out[2] = static_cast<float>(v.get<double>());
    return status::ok();
  }
  if (!v.is_array() || v.size() != 3) {
    return status::failure(bad(key, "must be 3 numbers (R, G, B) or one number, got " + v.dump()));
  }
  for (std::size_t c = 0; c < 3; ++c) {
    if (!v[c].is_number()) return status::failure(bad(key, "must hold numbers, got " + v.dump()));
    // As HF does: np.array(mean, dtype=np.float32), the nearest float to the file's double.
    out[c] = static_cast<float>(v[c].get<double>());
  }
  return status::ok();
}

}  // namespace

status check_image_processor_config(const image_processor_config& cfg) {
  auto range = [](const char* key, std::int64_t v, std::int64_t lo, std::int64_t hi) -> status {
    if (v >= lo && v <= hi) return status::ok();
    return status::failure(bad(key, "is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " +
                                        std::to_string(hi) + "]"));
  };
  if (auto s = range("patch_size", cfg.patch_size, 1, 256); !s) return s;
  if (auto s = range("merge_size", cfg.merge_size, 1, 16); !s) return s;
  if (auto s = range("temporal_patch_size", cfg.temporal_patch_size, 1, 16); !s) return s;
  if (auto s = range("max_pixels (size.longest_edge)", cfg.max_pixels, 1, max_pixels_cap); !s) return s;
  const std::int64_t row_pixels = std::int64_t{cfg.factor()} * cfg.factor();
  const std::int64_t least_min = static_cast<std::int64_t>(image_key_rows) * row_pixels;
  if (cfg.min_pixels < least_min) {
    return status::failure(bad("min_pixels (size.shortest_edge)",
                               "is " + std::to_string(cfg.min_pixels) + ": every image needs at least " +
                                   std::to_string(image_key_rows) +
                                   " merged rows to carry its whole digest in its key ids, so at least " +
                                   std::to_string(image_key_rows) +
                                   " * (patch_size * merge_size)^2 = " + std::to_string(least_min)));
  }
  const std::int64_t least_max = std::max(cfg.min_pixels, 4 * least_min);
  if (cfg.max_pixels < least_max) {
    return status::failure(
        bad("max_pixels (size.longest_edge)",
            "is " + std::to_string(cfg.max_pixels) + ", below " + std::to_string(least_max) +
                " (min_pixels, and 4 * " + std::to_string(image_key_rows) +
                " merged rows: a capped image must still have " + std::to_string(image_key_rows) + ")"));
  }
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(cfg.mean[c])) return status::failure(bad("image_mean", "must be finite"));
    if (!std::isfinite(cfg.std[c]) || !(cfg.std[c] > 0)) {
      return status::failure(bad("image_std", "must be finite and positive"));
    }
  }
  return status::ok();
}

expected<image_processor_config> image_processor_config_from_json(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return status::failure("preprocessor_config.json: not valid JSON");
  if (!j.is_object()) return status::failure("preprocessor_config.json: not a JSON object");
  image_processor_config cfg;

  auto read_int = [&](const nlohmann::json& from, const char* key, const std::string& name, auto& field,
                      std::int64_t lo, std::int64_t hi) -> status {
    if (!from.contains(key)) return status::ok();
    auto v = integer_of(from.at(key), name, lo, hi);
    if (!v) return v.error();
    field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
    return status::ok();
  };
  // These bounds only keep the casts safe; check_image_processor_config judges the values.
  constexpr std::int64_t narrow = std::numeric_limits<int>::max();
  constexpr std::int64_t wide = std::int64_t{1} << 40;
  if (auto s = read_int(j, "patch_size", "patch_size", cfg.patch_size, -narrow, narrow); !s) return s;
  if (auto s = read_int(j, "merge_size", "merge_size", cfg.merge_size, -narrow, narrow); !s) return s;
  if (auto s =
          read_int(j, "temporal_patch_size", "temporal_patch_size", cfg.temporal_patch_size, -narrow, narrow);
      !s) {
    return s;
  }
  if (j.contains("size")) {
    const auto& size = j.at("size");
    if (!size.is_object()) return status::failure(bad("size", "must be an object, got " + size.dump()));
    if (!size.contains("shortest_edge") || !size.contains("longest_edge")) {
      return status::failure(
          bad("size", "must hold shortest_edge and longest_edge (pixel counts), got " + size.dump()));
    }
    if (auto s = read_int(size, "shortest_edge", "size.shortest_edge", cfg.min_pixels, -wide, wide); !s)
      return s;
    if (auto s = read_int(size, "longest_edge", "size.longest_edge", cfg.max_pixels, -wide, wide); !s)
      return s;
  }
  if (auto s = read_int(j, "min_pixels", "min_pixels", cfg.min_pixels, -wide, wide); !s) return s;
  if (auto s = read_int(j, "max_pixels", "max_pixels", cfg.max_pixels, -wide, wide); !s) return s;
  if (j.contains("image_mean")) {
    if (auto s = channels_of(j.at("image_mean"), "image_mean", cfg.mean); !s) return s;
  }
  if (j.contains("image_std")) {
    if (auto s = channels_of(j.at("image_std"), "image_std", cfg.std); !s) return s;
  }

  // What this processor always does; a file asking otherwise is refused.
  for (const char* key : {"do_resize", "do_rescale", "do_normalize"}) {
    if (!j.contains(key)) continue;
    const auto& v = j.at(key);
    if (!v.is_boolean()) return status::failure(bad(key, "must be true or false, got " + v.dump()));
    if (!v.get<bool>()) return status::failure(bad(key, "is false: only the full pipeline is supported"));
  }
  if (j.contains("rescale_factor")) {
    const auto& v = j.at("rescale_factor");
    if (!v.is_number() || std::fabs(v.get<double>() * 255.0 - 1.0) > 1e-9) {
      return status::failure(bad("rescale_factor", "must be 1/255, got " + v.dump()));
    }
  }
  if (j.contains("resample")) {
    const auto& v = j.at("resample");
    if (!v.is_number_integer() || v.get<std::int64_t>() != 3) {
      return status::failure(bad("resample", "must be 3 (bicubic), got " + v.dump()));
    }
  }
  if (auto s = check_image_processor_config(cfg); !s) return s;
  return cfg;
}

}  // namespace anchorage
