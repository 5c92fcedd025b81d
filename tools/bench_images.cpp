// Images (docs/IMAGES.md), printed as one JSON object:
//   1. "encoder": the processor's and the vision encoder's time per image at three sizes, for the
//      small random tower (--vision-preset small) and for a tower of Qwen3.5-0.8B's shape (depth
//      12, hidden 768, 12 heads, FFN 3072; random weights: the time, not the values, matters);
//   2. "follow_up": a conversation about one image on a server with a vision tower: its first
//      turn cold, then 4 follow-ups that resend the image; each turn's TTFT and where it resumed,
//      and each follow-up's TTFT on a server without a cache (the same request cold);
//   3. "vision_cache": the tower's cache over those 5 turns (hits, encodes, hit rate).
// Usage: anchorage-bench-images [--preset qwen35-tiny] [--vision-preset small] [--max-tokens 8]
//                               [--reps 3] [--head-chars 4000]
#include <httplib.h>
#include <webp/encode.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/server.hpp"
#include "runtime/core/log.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/image/image_preprocess.hpp"
#include "runtime/server/server_config.hpp"
#include "runtime/vision/vision_config.hpp"
#include "runtime/vision/vision_encoder.hpp"
#include "runtime/vision/vision_weights.hpp"
#include "tools/bench_common.hpp"

using namespace anchorage;
using json = nlohmann::json;

namespace {

[[noreturn]] void die(const std::string& what) {
  log_error() << what;
  std::exit(1);
}

// A smooth test picture of w x h pixels (the same for the same size).
rgb_image picture(std::uint32_t w, std::uint32_t h, int salt = 0) {
  rgb_image im;
  im.width = w;
  im.height = h;
  im.rgb.resize(static_cast<std::size_t>(w) * h * 3);
  for (std::uint32_t y = 0; y < h; ++y)
    for (std::uint32_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        im.rgb[(static_cast<std::size_t>(y) * w + x) * 3 + c] =
            static_cast<std::uint8_t>((x * (2 + c) + y * 3 + c * 40 + salt) & 0xff);
  return im;
}

std::string base64(const std::uint8_t* b, std::size_t n) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < n; i += 3) {
    const std::uint32_t v = (std::uint32_t{b[i]} << 16) | (std::uint32_t{b[i + 1]} << 8) | b[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += abc[(v >> s) & 63];
  }
  if (i < n) {
    std::uint32_t v = std::uint32_t{b[i]} << 16;
    if (i + 1 < n) v |= std::uint32_t{b[i + 1]} << 8;
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += i + 1 < n ? abc[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The picture as a lossless WebP data URI.
std::string data_uri(const rgb_image& im) {
  std::uint8_t* data = nullptr;
  const std::size_t size =
      WebPEncodeLosslessRGB(im.rgb.data(), static_cast<int>(im.width), static_cast<int>(im.height),
                            static_cast<int>(im.width) * 3, &data);
  if (size == 0) die("WebP encoding failed");
  std::string uri = "data:image/webp;base64," + base64(data, size);
  WebPFree(data);
  return uri;
}

// The processor's and the encoder's time for one picture (best of `reps`).
json time_encoder(const vision_weights& w, const rgb_image& im, int reps) {
  double best_pre = 1e300, best_enc = 1e300;
  std::size_t rows = 0, patches = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    expected<image_patches> p = preprocess(im, image_processor_config{});
    if (!p) die("preprocess: " + p.error().error());
    best_pre = std::min(best_pre, bench::seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    const std::vector<float> out = encode_image(w, p->values.data(), p->grid_t, p->grid_h, p->grid_w);
    best_enc = std::min(best_enc, bench::seconds_since(t0));
    rows = p->merged_rows();
    patches = p->patch_rows();
    if (out.size() != rows * static_cast<std::size_t>(w.config.out_hidden_size)) die("encoder output size");
  }
  return {{"width", im.width},
          {"height", im.height},
          {"patches", patches},
          {"rows", rows},
          {"preprocess_ms", best_pre * 1e3},
          {"encode_ms", best_enc * 1e3}};
}

class live_server {
 public:
  explicit live_server(const std::vector<std::string>& flags) {
    server_config cfg = parse_server_args(flags);
    cfg.admin_token.clear();
    cfg.suffix.enabled = false;
    srv_ = std::make_unique<server>(cfg);
    port_ = srv_->start();
    if (port_ <= 0) die("the server did not bind a port");
    for (int i = 0; i < 100; ++i) {
      httplib::Client c("127.0.0.1", port_);
      if (auto r = c.Get("/health"); r && r->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    die("the server did not answer GET /health");
  }
  ~live_server() {
    srv_->drain(std::chrono::seconds(30));
    srv_->stop();
  }
  json post(const json& body) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(1200, 0);
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!r) die("POST: " + httplib::to_string(r.error()));
    if (r->status != 200) die("POST: " + std::to_string(r->status) + " " + r->body.substr(0, 400));
    return json::parse(r->body);
  }
  json stats() const {
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Get("/v1/cache/stats");
    if (!r || r->status != 200) die("GET /v1/cache/stats failed");
    return json::parse(r->body);
  }

 private:
  std::unique_ptr<server> srv_;
  int port_ = 0;
};

json image_turn(const std::string& text, const std::string& uri) {
  return {{"role", "user"},
          {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", uri}}}},
                                   {{"type", "text"}, {"text", text}}})}};
}

json request(const json& messages, int max_tokens) {
  return {{"messages", messages},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"chat_template_kwargs", {{"enable_thinking", false}}}};
}

json figures(const json& r) {
  json x = r.at("x_cache");
  return {{"source", x["source"]},
          {"resumed_at", x["resumed_at"]},
          {"prompt_tokens", r["usage"]["prompt_tokens"]},
          {"prefilled_tokens", x["prefilled_tokens"]},
          {"ttft_ms", x["ttft_ms"]}};
}

}  // namespace

int main(int argc, char** argv) {
  select_blas_core(argv);
  std::string preset = "qwen35-tiny", vision_preset = "small";
  int max_tokens = 8, reps = 3;
  std::size_t head_chars = 4000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) die("missing value for " + a);
    if (a == "--preset")
      preset = argv[++i];
    else if (a == "--vision-preset")
      vision_preset = argv[++i];
    else if (a == "--max-tokens")
      max_tokens = std::stoi(argv[++i]);
    else if (a == "--reps")
      reps = std::stoi(argv[++i]);
    else if (a == "--head-chars")
      head_chars = std::stoul(argv[++i]);
    else
      die("unknown flag " + a + " (flags: --preset --vision-preset --max-tokens --reps --head-chars)");
  }
  json out;
  out["preset"] = preset;
  out["vision_preset"] = vision_preset;

  // 1. The encoder alone, three picture sizes (the processor takes each to a multiple of 32).
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> sizes = {{256, 256}, {512, 512}, {1024, 768}};
  vision_config shaped = small_vision_config(1024);
  shaped.depth = 12;
  shaped.hidden_size = 768;
  shaped.num_heads = 12;
  shaped.intermediate_size = 3072;
  const std::vector<std::pair<std::string, vision_config>> towers = {{"small", small_vision_config(1024)},
                                                                     {"qwen3.5-0.8b-shape", shaped}};
  json enc = json::array();
  for (const auto& [name, cfg] : towers) {
    const vision_weights w = load_vision_weights(cfg, random_vision_weights(cfg, 1), name);
    for (const auto& [wd, ht] : sizes) {
      log_info() << "encoder " << name << " at " << wd << " x " << ht;
      json row = time_encoder(w, picture(wd, ht), reps);
      row["tower"] = name;
      enc.push_back(row);
    }
  }
  out["encoder"] = enc;

  // 2-3. A conversation about one 512 x 384 picture: 5 turns, the picture sent with each.
  const std::string uri = data_uri(picture(512, 384, 7));
  const std::vector<std::string> base = {"--preset",        preset,    "--vision-preset", vision_preset,
                                         "--chat-template", "qwen3.5", "--host",          "127.0.0.1",
                                         "--port",          "0",       "--parallel",      "1"};
  std::vector<std::string> no_cache = base;
  no_cache.push_back("--no-cache");
  live_server s(base);
  live_server cold(no_cache);
  std::string head;
  while (head.size() < head_chars)
    head += "You are a careful assistant that looks at screenshots and answers briefly. ";
  json messages =
      json::array({{{"role", "system"}, {"content", head}}, image_turn("What does this show?", uri)});
  json turns = json::array();
  for (int turn = 0; turn < 5; ++turn) {
    log_info() << "turn " << turn;
    const json body = request(messages, max_tokens);
    const json r = s.post(body);
    json t = figures(r);
    if (turn > 0) t["cold_ttft_ms"] = figures(cold.post(body))["ttft_ms"];
    turns.push_back(t);
    messages.push_back({{"role", "assistant"}, {"content", r["choices"][0]["message"].value("content", "")}});
    messages.push_back(image_turn("And what about part " + std::to_string(turn + 1) + "?", uri));
  }
  out["follow_up"] = turns;
  const json v = s.stats()["tiers"]["vision"];
  const double hits = v.value("hits", 0.0), encodes = v.value("encodes", 0.0);
  out["vision_cache"] = {{"hits", v["hits"]},
                         {"encodes", v["encodes"]},
                         {"encode_ms", v["encode_ms"]},
                         {"hit_rate", hits + encodes > 0 ? hits / (hits + encodes) : 0.0}};
  std::cout << out.dump(2) << std::endl;
  return 0;
}
