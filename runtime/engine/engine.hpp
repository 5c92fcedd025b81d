#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/device.hpp"
#include "runtime/engine/engine_weights.hpp"
#include "runtime/engine/prompt_media.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/core/tensor.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

// Bumped whenever a change to the engine's arithmetic could change a single bit of its state:
// it is part of the fingerprint, so cached state of an older engine is never restored.
inline constexpr const char* engine_code_version = "anchorage-engine/3";

// The hybrid engine: one sequence, its state in the engine's own buffers. It runs the reference
// layout and the qwen35 layout (model_config::layout); for qwen35 it converts the Hugging Face
// tensors once at construction (engine_tensors.hpp) and computes transformers' forward
// (tests/engine/test_qwen35_forward.cpp checks it against a naive reference).
//
// Prefill runs on the grid: chunks end on multiples of config().grid (the lines), and where an
// image of the prompt ends (set_media), so a prefill resumed from a line or an image's end runs
// exactly the chunks a cold prefill runs and produces the same bits.
// A prefill that starts off the grid first runs up to the next line: that is a session
// resume (its rows differ in the last bits from a cold prefill's, see tests/engine/test_engine_exact.cpp).
// A chunk's bits depend on both its ends: the rows of a short last chunk (above the last line)
// equal a cold prefill's only for a prefill that ends at the same position. Caches therefore
// keep sections at lines and re-run the partial chunk above the last one.
// Decode forwards one token with the per-token form of the delta rule.
//
// The weights are an engine_weights, shared: engines built on one (the board's slots) hold one
// copy between them, and decode_batch (engine_batch.hpp) steps several of them at once.
//
// Not thread-safe: one owner (the board) drives it.
class engine {
 public:
  // Converts `weights` into a weight set of its own (the same as engine(make_shared<const
  // engine_weights>(config, weights, where))).
  engine(const model_config& config, const tensor_map& weights,
         kernels::backend where = kernels::backend::cpu);
  // An engine on shared weights: config, backend and weights are the weight set's.
  explicit engine(std::shared_ptr<const engine_weights> weights);
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  const model_config& config() const;
  kernels::backend where() const;
  const std::shared_ptr<const engine_weights>& weights() const;

  // The state adapter (the seed's cache_state()).
  state_adapter& cache_state();
  const state_adapter& cache_state() const;
  const state_layout& layout() const { return cache_state().layout(); }

  std::size_t length() const { return cache_state().valid_length(); }
  // An empty sequence: length 0, every section zero, no images.
  void reset();

  // The images of the prompt being served (prompt_media.hpp), in prompt rows: their rows'
  // embeddings and the multimodal positions of every row from the first image on, generated
  // rows included. Set before the prompt's prefill (or the prefill of its rows above a restored
  // prefix) and kept until the next set_media or reset; an empty one for a text prompt. Rows
  // below the first image get the same bits with or without it, so a text prefix cached before
  // serves a prompt with images after it. Throws std::invalid_argument (nothing changed) for
  // embeddings not d_model wide, or a multimodal prompt on a layout other than qwen35.
  void set_media(prompt_media media);
  const prompt_media& media() const;

  // Appends `tokens` and runs them through the model, chunk by chunk. Throws
  // std::invalid_argument for an id outside the vocabulary (an image row's key id, below 0, is
  // accepted at a row that an image of set_media covers with its embeddings) and std::length_error when the
  // sequence would pass ctx_size; in both cases nothing has been run.
  void prefill(const std::vector<token_id>& tokens);

  // The same in steps: begin_prefill() checks and queues, prefill_step() runs one chunk and
  // returns whether more remain. A queued prefill must finish before decode() or another one.
  void begin_prefill(const std::vector<token_id>& tokens);
  bool prefill_step();
  std::size_t prefill_remaining() const;
  // Drops a queued prefill's remaining tokens (a request cancelled inside its prefill); the
  // rows and sections it already wrote stay.
  void abandon_prefill();

  // Forwards one token at position length() (per-token form; on the cpu backend decode_batch's
  // arithmetic with one row, engine_batch.hpp).
  void decode(token_id t);

  // A verify round on this engine alone (forward_batch with one slot, docs/SPECULATIVE.md):
  // forwards `tokens` at positions length(), length() + 1, ..., each row's bits those decode()
  // would give it; the logits of every row are kept (row_logits). Throws what forward_batch
  // throws (std::invalid_argument, nothing run).
  void forward(const std::vector<token_id>& tokens);
  // The rows the last decode()/forward()/forward_batch forwarded on this engine (0 after a
  // prefill or reset), and row i's logits and draft logits (the latter empty without a draft
  // layer).
  std::size_t round_rows() const;
  std::vector<float> row_logits(std::size_t i) const;
  std::vector<float> row_draft_logits(std::size_t i) const;
  // Keeps the first n rows of the last round (1 <= n <= round_rows()), as if only they had been
  // forwarded: the length, the recurrent state and convolution tails (the state before the
  // round, replayed through the kept rows' stored inputs to the delta rule and the
  // convolution: the same bits), mtp.h_last, last_logits() and last_draft_logits() are row n-1's;
  // the K/V rows above are dropped with the length. Throws std::invalid_argument for n outside
  // that range and std::logic_error when the engine changed since the round.
  void keep_rows(std::size_t n);

  // The draft layer's proposal (the -mtp presets, a Qwen3.5 checkpoint's mtp.* head): up to k ids
  // to follow `next` (the pending token, not yet forwarded), each the argmax of the draft
  // layer's logits among `allowed` ids (null: all), the layer run on its own output for the
  // second and later ones. Writes nothing the model reads: only the draft layer's K/V rows above
  // length(), which the verify round forwarding them writes again. Empty without a draft layer
  // or room in the context.
  std::vector<token_id> draft(token_id next, int k, const std::vector<bool>* allowed = nullptr);

  // Logits of the last forwarded position (vocab floats, host memory).
  const std::vector<float>& last_logits() const;
  // With a draft layer: its logits at the last forwarded position; empty otherwise.
  const std::vector<float>& last_draft_logits() const;

 private:
  friend class engine_batch;  // decode_batch's forward (engine_batch.cpp)
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace anchorage
