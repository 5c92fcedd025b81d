#include "actors/server.hpp"

#include <caf/all.hpp>
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "actors/board.hpp"
#include "actors/conductor.hpp"
#include "actors/disk.hpp"
#include "actors/edge.hpp"
#include "actors/spill_reader.hpp"
#include "actors/vision_encoder.hpp"
#include "actors/spill_writer.hpp"
#include "actors/suffix_writer.hpp"
#include "runtime/text/tokenizer/tokenizer_digest.hpp"
#include "runtime/core/log.hpp"
#include "runtime/image/image_processor_config.hpp"
#include "runtime/model/loaded_vision.hpp"
#include "runtime/vision/vision_config.hpp"
#include "runtime/vision/vision_tower.hpp"
#include "runtime/vision/vision_weights.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/io/private_dir.hpp"
#include "runtime/io/uring_env.hpp"
#include "runtime/server/live_settings.hpp"
#include "runtime/server/memory_trim.hpp"
#include "runtime/tiers/spill_keeper.hpp"
#include "runtime/text/template/template_choice.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

namespace {

// --tokenizer's file, else the checkpoint's own, else the byte tokenizer; refused when it defines
// ids the engine's vocabulary does not hold.
tokenizer tokenizer_of(const server_config& cfg, const loaded_model& model) {
  tokenizer tok;
  if (!cfg.tokenizer_path.empty())
    tok = tokenizer::from_json_file(cfg.tokenizer_path);
  else if (!model.tokenizer.is_null())
    tok = tokenizer::from_json(model.tokenizer, model.source + " (its tokenizer)");
  if (model.config.vocab < tok.vocab_size()) {
    throw std::invalid_argument("the tokenizer " + tok.name() + " defines ids up to " +
                                std::to_string(tok.vocab_size()) + " but the engine's vocabulary (" +
                                model.config.preset + ") holds " + std::to_string(model.config.vocab));
  }
  return tok;
}

template_choice chat_template_of(const server_config& cfg, const loaded_model& model) {
  template_sources ts;
  ts.flag = cfg.chat_template;
  ts.checkpoint_template = model.chat_template;
  ts.checkpoint_source = model.source;
  ts.tokenizer_path = cfg.tokenizer_path;
  const template_choice chat = choose_template(ts);
  log_info() << "chat template: " << chat_renderer_name(chat.renderer) << " (from " << chat.origin << ")";
  return chat;
}

// The conductor's: the queue, the rendering, compaction and its worker (the tiers' parts are set
// where their actors are spawned).
conductor_options conductor_options_of(const server_config& cfg, const model_config& mc, chat_renderer r,
                                       const tokenizer& tok) {
  conductor_options opts;
  opts.limits.ctx_size = mc.ctx_size;
  opts.max_queue = cfg.max_queue;
  opts.slots = cfg.cache.parallel;
  opts.ledger_path = cfg.ledger_path;
  opts.limits.reasoning_budget = cfg.reasoning_budget;
  opts.limits.renderer = r;
  opts.tok = tok;
  opts.compaction = cfg.compaction && !cfg.no_cache;
  opts.compaction_max_tokens = cfg.compaction_max_tokens;
  if (opts.compaction && cfg.compaction_idle_s > 0) {
    compaction_worker_options cw;
    cw.idle = std::chrono::milliseconds(static_cast<long>(cfg.compaction_idle_s * 1000.0));
    cw.min_tokens = cfg.compaction_min_tokens;
    opts.worker = cw;
  }
  return opts;
}

// The board's: decode, speculation (refused where the model or backend cannot draft) and the
// device tiers.
board_options board_options_of(const server_config& cfg, const model_config& mc) {
  board_options bo;
  bo.decode_block = cfg.decode_block;
  bo.speculative = cfg.speculative;
  if (cfg.speculative.uses_mtp() && !mc.mtp)
    throw std::invalid_argument("--speculative " + std::string(to_string(cfg.speculative.mode)) +
                                ": the model (" + mc.preset +
                                ") has no draft layer (try lookup, or a -mtp preset)");
  if (cfg.speculative.on() && cfg.engine.backend() != kernels::backend::cpu)
    throw std::invalid_argument("--speculative: verify rounds run on the cpu backend only for now");
  bo.cache = cfg.cache;
  if (cfg.no_cache) bo.cache.enabled = false;
  return bo;
}

// The disk tier (--cache-dir with a budget, the cache on): the config's options, in their folder;
// none otherwise.
std::optional<disk_tier_options> disk_options_of(const server_config& cfg) {
  if (cfg.cache_dir.empty() || cfg.disk.store.eviction.budget_bytes == 0 || cfg.no_cache) return std::nullopt;
  disk_tier_options d = cfg.disk;
  d.store.dir = cfg.cache_dir + "/disk";
  return d;
}

// The session spill (--session-spill on with --cache-dir, the cache on): the config's options,
// in their folder; none otherwise.
std::optional<spill_options> spill_options_of(const server_config& cfg) {
  if (cfg.cache_dir.empty() || !cfg.spill.enabled || cfg.spill.store.budget_bytes == 0 || cfg.no_cache)
    return std::nullopt;
  spill_options so = cfg.spill.store;
  so.dir = cfg.cache_dir + "/disk";
  return so;
}

// The suffix store (--suffix-store, the cache on): the config's options, in their folder and for
// this tokenizer; none otherwise, and `why` says why.
std::optional<suffix_store_options> suffix_options_of(const server_config& cfg, const tokenizer& tok,
                                                      std::string& why) {
  const std::string dir = suffix_store_dir(cfg, why);
  if (dir.empty()) return std::nullopt;
  suffix_store_options so = cfg.suffix.store;
  so.dir = dir;
  so.tokenizer_digest = tokenizer_digest(tok);
  return so;
}

// Asks the conductor `xs...` and waits at most `within` (at least 1 ms) for its true.
template <class... Ts>
bool ask_conductor(caf::actor_system& sys, const conductor_actor& c, std::chrono::milliseconds within,
                   Ts... xs) {
  caf::scoped_actor self{sys};
  bool yes = false;
  self->request(c, std::max(within, std::chrono::milliseconds(1)), xs...)
      .receive([&](bool b) { yes = b; }, [&](caf::error&) { yes = false; });
  return yes;
}

// The vision tower the model serves images with: --vision-preset's random one, else the
// checkpoint's own; none for a text model. Its weights' digest goes into the engine's
// fingerprint; the processor config into the prompt renderer.
struct served_vision {
  std::shared_ptr<vision_tower> tower;
  std::shared_ptr<const image_processor_config> processor;
  std::uint64_t digest = 0;
};

served_vision vision_of(const server_config& cfg, loaded_model& model) {
  served_vision out;
  // --no-cache: every image is encoded for its request and none is kept. The encoder runs where
  // the engine does (--device).
  const std::size_t cache_bytes = cfg.no_cache ? 0 : cfg.cache.image_cache_bytes;
  const std::string& preset = cfg.engine.vision_preset;
  if (preset == "none" && !model.vision) return out;
  const model_config& mc = model.config;
  if (mc.layout != model_layout::qwen35)
    throw std::invalid_argument("a vision tower needs a qwen35 model (its multimodal rotary positions); " +
                                model.source + " is not one");
  loaded_vision lv;
  if (preset != "none") {
    const vision_config vc =
        preset == "tiny" ? tiny_vision_config(mc.d_model) : small_vision_config(mc.d_model);
    lv.config = {{"vision_preset", preset}, {"weights_seed", cfg.engine.weights_seed}};
    lv.weights = random_vision_weights(vc, cfg.engine.weights_seed);
    lv.source = "--vision-preset " + preset;
    out.digest = vision_digest(lv);
    out.tower = std::make_shared<vision_tower>(
        std::make_shared<const vision_weights>(load_vision_weights(vc, std::move(lv.weights), lv.source)),
        cache_bytes, cfg.engine.backend());
  } else {
    lv = std::move(*model.vision);
    model.vision.reset();
    out.digest = vision_digest(lv);
    try {
      const vision_config vc = vision_config_from_json(lv.config, lv.source);
      out.tower = std::make_shared<vision_tower>(
          std::make_shared<const vision_weights>(load_vision_weights(vc, std::move(lv.weights), lv.source)),
          cache_bytes, cfg.engine.backend());
    } catch (const std::exception& e) {
      // A text export that kept a stray part of the tower: images stay placeholders.
      log_warn() << "vision: the checkpoint's vision tower is not usable (" << e.what()
                 << "); the model is shown images as placeholders only";
      return served_vision{};
    }
  }
  const vision_config& vc = out.tower->config();
  if (vc.out_hidden_size != mc.d_model)
    throw std::invalid_argument(lv.source + ": the vision tower's out_hidden_size " +
                                std::to_string(vc.out_hidden_size) + " is not the model's hidden size " +
                                std::to_string(mc.d_model));
  image_processor_config proc;
  if (!lv.processor_config.empty()) {
    expected<image_processor_config> read = image_processor_config_from_json(lv.processor_config);
    if (!read) throw std::invalid_argument(lv.source + ": preprocessor_config.json: " + read.error().error());
    proc = *read;
  }
  if (proc.patch_size != vc.patch_size || proc.merge_size != vc.spatial_merge_size ||
      proc.temporal_patch_size != vc.temporal_patch_size)
    throw std::invalid_argument(lv.source + ": the processor's patch, merge and temporal sizes (" +
                                std::to_string(proc.patch_size) + ", " + std::to_string(proc.merge_size) +
                                ", " + std::to_string(proc.temporal_patch_size) + ") are not the tower's");
  out.processor = std::make_shared<const image_processor_config>(proc);
  log_info() << "vision: " << lv.source << " (" << vc.depth << " blocks, hidden " << vc.hidden_size
             << "), image cache " << (cache_bytes >> 20) << " MiB";
  return out;
}

}  // namespace

server::server(const server_config& cfg) : cfg_(cfg) {
  // The caches' folder is checked before anything is loaded or written under it.
  if (!cfg_.cache_dir.empty()) {
    if (const file_result r = check_private_root(cfg_.cache_dir); !r)
      throw std::invalid_argument("--cache-dir: " + r.message);
    // The settings an operator changed live, kept across restarts; a flag given now wins.
    uring_env env(uring_env_options{2, 1u << 16, false});
    for (const std::string& line : apply_saved_settings(cfg_, env)) log_info() << line;
  }
  loaded_model model = cfg_.engine.load();
  if (cfg_.model_override) {  // tests: a config no preset has, random weights
    model.config = *cfg_.model_override;
    model.weights = random_weights(model.config, cfg_.engine.weights_seed);
    model.stored.clear();
    model.stored_types.clear();
  }
  const model_config& mc = model.config;
  // From here on the config in use is the loaded one (the edge reads it: the vocabulary, the
  // context).
  cfg_.model_override = mc;
  const tokenizer tok = tokenizer_of(cfg_, model);
  const template_choice chat = chat_template_of(cfg_, model);
  const served_vision vision = vision_of(cfg_, model);
  // One converted weight set for every slot (runtime/engine/engine_weights.hpp).
  auto converted = std::make_shared<engine_weights>(mc, model.weights, model.stored, cfg_.engine.backend(),
                                                    model.stored_types);
  if (vision.tower) converted->add_vision(vision.digest);
  const std::shared_ptr<const engine_weights> weights = std::move(converted);
  auto eng = std::make_shared<engine>(weights);
  system_ = std::make_unique<caf::actor_system>(sys_cfg_);

  conductor_options opts = conductor_options_of(cfg_, mc, chat.renderer, tok);
  board_options bo = board_options_of(cfg_, mc);
  opts.limits.image_processor = vision.processor;
  bo.vision = vision.tower;
  // Its own thread: an encode on a large tower takes seconds, which the other slots' decode
  // would otherwise wait out. A tower on the device encodes in place (vision_tower::plan_encode).
  if (vision.tower && vision.tower->where() == kernels::backend::cpu && cfg_.vision_encoder_thread) {
    vision_encoder_ = system_->spawn<caf::detached>(anchorage::vision_encoder);
    bo.vision_encoder = vision_encoder_;
  }
  if (auto d = disk_options_of(cfg_)) {
    bo.disk = *d;
    // The disk tier's own actor: it scans the folder at its start, on its own thread.
    disk_actor_options da;
    da.layout = eng->layout();
    da.tier = *d;
    if (!cfg_.remote_cache.empty()) {
      // The shared level below: a fetch waits on Redis (up to its deadline) on the disk actor's
      // thread, so the actor gets a thread of its own rather than one of the scheduler's.
      da.remote = cfg_.remote;
      // With the session spill, a request's spilled conversation comes from Redis too.
      if (auto so = spill_options_of(cfg_)) da.spill_budget = so->budget_bytes;
      disk_ = system_->spawn<caf::detached>(anchorage::disk, std::move(da));
    } else {
      disk_ = system_->spawn(anchorage::disk, std::move(da));
    }
    bo.disk_handle = disk_;
    opts.disk = disk_;
    opts.disk_min_tokens = d->admission.min_tokens;
    opts.checkpoint_tokens = d->checkpoint_tokens;
  }
  if (auto so = spill_options_of(cfg_)) {
    // The session spill: its store scanned here, before any actor runs; the board reads the
    // conversations a planned stop left back into their slots before its first request.
    auto keeper = std::make_shared<spill_keeper>(std::make_unique<uring_env>(), eng->layout(), *so, tok);
    const spill_scan_report r = keeper->scan();
    log_info() << "session spill: " << r.manifests << " conversation(s), " << r.blocks << " blocks in "
               << keeper->store().folder() << " (" << r.tmp_reaped << " temporary files reaped, " << r.foreign
               << " foreign and " << r.damaged << " damaged removed)";
    bo.spill = keeper;
    spill_writer_ = system_->spawn(anchorage::spill_writer, eng->layout(), std::make_shared<uring_env>());
    bo.spill_writer = spill_writer_;
    // Its own thread: a read of a long conversation takes hundreds of milliseconds.
    if (cfg_.spill.reader_thread) {
      spill_reader_ = system_->spawn<caf::detached>(anchorage::spill_reader, std::make_shared<uring_env>());
      bo.spill_reader = spill_reader_;
    }
    opts.spill = true;
  }
  // The suffix store: its writer on a thread of its own (the open, the batched rebuilds and a
  // forget's rewrite can take seconds), opening the store while the rest starts; the board
  // subscribes to it and stops it at its exit. Off with a log line.
  std::string suffix_off;
  if (auto so = suffix_options_of(cfg_, tok, suffix_off)) {
    bo.suffix_path = so->dir;
    suffix_writer_ =
        system_->spawn<caf::detached>(anchorage::suffix_writer, std::move(*so), suffix_receiver{});
    bo.suffix_writer = suffix_writer_;
  } else {
    log_info() << "suffix store: " << suffix_off;
    bo.suffix_off = suffix_off;
  }
  for (int i = 1; i < cfg_.cache.parallel; ++i) bo.slots.push_back(std::make_shared<engine>(weights));
  auto& sys = *system_;
  conductor_ = sys.spawn(anchorage::conductor, opts, [&sys, eng, bo](done_receiver c) mutable {
    return sys.spawn(anchorage::board, std::move(eng), bo, std::move(c));
  });
  edge_ = std::make_unique<http_edge>(*system_, conductor_, cfg_);
  edge_->set_prompt_renderer(opts.limits, tok);
  trimmer_ = std::make_unique<memory_trimmer>(
      std::chrono::milliseconds(static_cast<long>(cfg_.memory_trim_s * 1000.0)));
}

server::~server() { stop(); }

int server::start() { return edge_->start(); }

bool server::drain(std::chrono::milliseconds grace) {
  edge_->begin_drain();
  // One request: the conductor answers once nothing runs or waits and every staged disk write
  // is on disk (a planned stop loses none of them); the grace period is its timeout.
  return ask_conductor(*system_, conductor_, grace, drain_atom::value);
}

bool server::quiesce(std::chrono::milliseconds within) {
  return ask_conductor(*system_, conductor_, within, quiesce_atom::value);
}

bool server::wait_running(std::size_t n, std::chrono::milliseconds within) {
  return ask_conductor(*system_, conductor_, within, started_atom::value, n);
}

bool server::wait_idle_runs(long n, std::chrono::milliseconds within) {
  return ask_conductor(*system_, conductor_, within, idle_runs_atom::value, n);
}

void server::stop() {
  if (edge_) edge_->stop();
  auto stop_one = [](auto& a) {
    if (!a) return;
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    a = nullptr;
  };
  stop_one(conductor_);
  stop_one(disk_);
  stop_one(spill_writer_);
  stop_one(spill_reader_);
  stop_one(vision_encoder_);
}

}  // namespace anchorage
