#include "actors/server.hpp"

#include <caf/all.hpp>
#include <algorithm>
#include <stdexcept>
#include <string>

#include "actors/board.hpp"
#include "actors/conductor.hpp"
#include "actors/disk.hpp"
#include "actors/edge.hpp"
#include "actors/spill_reader.hpp"
#include "actors/spill_writer.hpp"
#include "actors/suffix_writer.hpp"
#include "runtime/text/tokenizer_digest.hpp"
#include "runtime/core/log.hpp"
#include "runtime/engine/model_weights.hpp"
#include "runtime/io/uring_env.hpp"
#include "runtime/tiers/spill_keeper.hpp"
#include "runtime/text/template_choice.hpp"
#include "runtime/text/tokenizer.hpp"

namespace anchorage {

server::server(const server_config& cfg) : cfg_(cfg) {
  loaded_model model = cfg_.engine.load();
  if (cfg_.model_override) {  // tests: a config no preset has, random weights
    model.config = *cfg_.model_override;
    model.weights = random_weights(model.config, cfg_.engine.weights_seed);
  }
  const model_config& mc = model.config;
  const tensor_map& w = model.weights;
  // From here on the config in use is the loaded one (the edge reads it: the vocabulary, the
  // context).
  cfg_.model_override = mc;
  // The tokenizer: --tokenizer's file, else the checkpoint's own, else the byte tokenizer.
  tokenizer tok;
  if (!cfg_.tokenizer_path.empty())
    tok = tokenizer::from_json_file(cfg_.tokenizer_path);
  else if (!model.tokenizer.is_null())
    tok = tokenizer::from_json(model.tokenizer, model.source + " (its tokenizer)");
  if (mc.vocab < tok.vocab_size()) {
    throw std::invalid_argument("the tokenizer " + tok.name() + " defines ids up to " +
                                std::to_string(tok.vocab_size()) + " but the engine's vocabulary (" +
                                mc.preset + ") holds " + std::to_string(mc.vocab));
  }
  template_sources ts;
  ts.flag = cfg_.chat_template;
  ts.checkpoint_template = model.chat_template;
  ts.checkpoint_source = model.source;
  ts.tokenizer_path = cfg_.tokenizer_path;
  const template_choice chat = choose_template(ts);
  log_info() << "chat template: " << chat_renderer_name(chat.renderer) << " (from " << chat.origin << ")";
  // One converted weight set for every slot (runtime/engine/engine_weights.hpp).
  const auto weights = std::make_shared<const engine_weights>(mc, w, cfg_.engine.backend());
  auto eng = std::make_shared<engine>(weights);
  system_ = std::make_unique<caf::actor_system>(sys_cfg_);

  conductor_options opts;
  opts.limits.ctx_size = mc.ctx_size;
  opts.max_queue = cfg_.max_queue;
  opts.slots = cfg_.cache.parallel;
  opts.ledger_path = cfg_.ledger_path;
  opts.limits.reasoning_budget = cfg_.reasoning_budget;
  opts.limits.renderer = chat.renderer;
  opts.tok = tok;
  opts.compaction = cfg_.compaction && !cfg_.no_cache;
  opts.compaction_max_tokens = cfg_.compaction_max_tokens;
  if (opts.compaction && cfg_.compaction_idle_s > 0) {
    compaction_worker_options cw;
    cw.idle = std::chrono::milliseconds(static_cast<long>(cfg_.compaction_idle_s * 1000.0));
    cw.min_tokens = cfg_.compaction_min_tokens;
    opts.worker = cw;
  }
  board_options bo;
  bo.decode_block = cfg_.decode_block;
  bo.speculative = cfg_.speculative;
  if (cfg_.speculative.uses_mtp() && !mc.mtp)
    throw std::invalid_argument("--speculative " + std::string(to_string(cfg_.speculative.mode)) +
                                ": the model (" + mc.preset +
                                ") has no draft layer (try lookup, or a -mtp preset)");
  if (cfg_.speculative.on() && cfg_.engine.backend() != kernels::backend::cpu)
    throw std::invalid_argument("--speculative: verify rounds run on the cpu backend only for now");
  bo.cache = cfg_.cache;
  if (cfg_.no_cache) bo.cache.enabled = false;
  if (!cfg_.cache_dir.empty() && cfg_.disk.budget_bytes > 0 && !cfg_.no_cache) {
    disk_tier_options d;
    d.store.dir = cfg_.cache_dir + "/disk";
    d.store.eviction.budget_bytes = cfg_.disk.budget_bytes;
    d.store.eviction.lifetime_s = cfg_.disk.lifetime_s;
    d.store.eviction.min_free_bytes = cfg_.disk.min_free_bytes;
    d.admission.min_tokens = cfg_.disk.min_tokens;
    d.stage_bytes = cfg_.disk.stage_bytes;
    d.checkpoint_tokens = cfg_.disk.checkpoint_tokens;
    bo.disk = d;
    // The disk tier's own actor: it scans the folder at its start, on its own thread.
    disk_actor_options da;
    da.layout = eng->layout();
    da.tier = d;
    disk_ = system_->spawn(anchorage::disk, std::move(da));
    bo.disk_handle = disk_;
    opts.disk = disk_;
    opts.disk_min_tokens = d.admission.min_tokens;
    opts.checkpoint_tokens = d.checkpoint_tokens;
  }
  if (!cfg_.cache_dir.empty() && cfg_.spill.enabled && cfg_.spill.budget_bytes > 0 && !cfg_.no_cache) {
    // The session spill: its store scanned here, before any actor runs; the board reads the
    // conversations a planned stop left back into their slots before its first request.
    spill_options so;
    so.dir = cfg_.cache_dir + "/disk";
    so.budget_bytes = cfg_.spill.budget_bytes;
    so.min_tokens = cfg_.spill.min_tokens;
    auto keeper = std::make_shared<spill_keeper>(std::make_unique<uring_env>(), eng->layout(), so, tok);
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
  // The suffix store: its writer is the board's (spawned by it, detached); off with a log line.
  std::string suffix_off;
  const std::string suffix_dir = suffix_store_dir(cfg_, suffix_off);
  if (!suffix_dir.empty()) {
    suffix_store_options so;
    so.dir = suffix_dir;
    so.tokenizer_digest = tokenizer_digest(tok);
    so.cap_bytes = cfg_.suffix.cap_bytes;
    bo.suffix = so;
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
}

server::~server() { stop(); }

int server::start() { return edge_->start(); }

bool server::drain(std::chrono::milliseconds grace) {
  edge_->begin_drain();
  // One request: the conductor answers once nothing runs or waits and every staged disk write
  // is on disk (a planned stop loses none of them); the grace period is its timeout.
  caf::scoped_actor self{*system_};
  bool idle = false;
  self->request(conductor_, std::max(grace, std::chrono::milliseconds(1)), drain_atom::value)
      .receive([&](bool b) { idle = b; }, [&](caf::error&) { idle = false; });
  return idle;
}

bool server::quiesce(std::chrono::milliseconds within) {
  caf::scoped_actor self{*system_};
  bool quiet = false;
  self->request(conductor_, std::max(within, std::chrono::milliseconds(1)), quiesce_atom::value)
      .receive([&](bool b) { quiet = b; }, [&](caf::error&) { quiet = false; });
  return quiet;
}

bool server::wait_running(std::size_t n, std::chrono::milliseconds within) {
  caf::scoped_actor self{*system_};
  bool running = false;
  self->request(conductor_, std::max(within, std::chrono::milliseconds(1)), started_atom::value, n)
      .receive([&](bool b) { running = b; }, [&](caf::error&) { running = false; });
  return running;
}

bool server::wait_idle_runs(long n, std::chrono::milliseconds within) {
  caf::scoped_actor self{*system_};
  bool done = false;
  self->request(conductor_, std::max(within, std::chrono::milliseconds(1)), idle_runs_atom::value, n)
      .receive([&](bool b) { done = b; }, [&](caf::error&) { done = false; });
  return done;
}

void server::stop() {
  if (edge_) edge_->stop();
  if (conductor_) {
    caf::anon_send_exit(conductor_, caf::exit_reason::user_shutdown);
    conductor_ = nullptr;
  }
  if (disk_) {
    caf::anon_send_exit(disk_, caf::exit_reason::user_shutdown);
    disk_ = nullptr;
  }
  if (spill_writer_) {
    caf::anon_send_exit(spill_writer_, caf::exit_reason::user_shutdown);
    spill_writer_ = nullptr;
  }
  if (spill_reader_) {
    caf::anon_send_exit(spill_reader_, caf::exit_reason::user_shutdown);
    spill_reader_ = nullptr;
  }
}

}  // namespace anchorage
