#pragma once
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/engine/engine.hpp"

namespace anchorage {

// One decode step over several engines (slots) that share one engine_weights: slot i forwards
// tokens[i] at its position length(), its length advances by one and its last_logits() (and
// last_draft_logits() with a draft layer) are set, as decode() would.
//
// The dense parts (every projection, the MLP, the draft layer's input projection, the LM head)
// run as one product over the batch (kernels/gemm_rows.hpp), so the weights are read once per
// step for all slots; the
// token-mixing parts run per slot on the slot's own state: attention over its own K/V rows, the
// causal convolution over its own conv tail, the delta rule over its own gdn.S.
//
// Exactness (tests/engine/test_engine_batch.cpp, docs/ENGINE.md): a batch of one is decode()
// bit for bit. With more slots the dense products differ from decode()'s BLAS matrix-vector
// products in the last bits (another summation order), so the rows and sections a batched step writes are
// decode rows above the taint, as every decode row already is: held to the greedy gate, never to a cold
// prefill's bits. Prefill is untouched.
//
// On the cuda backend the slots are decoded one after another (decode() each): the same results
// and no batching yet.
//
// Throws std::invalid_argument, with nothing run, when: slots is empty or holds a null or the
// same engine twice; tokens.size() != slots.size(); the engines do not share one engine_weights;
// a slot has a queued prefill; an id is outside the vocabulary; a slot is full (ctx_size); or
// there are more slots than grid rows (the activation buffers of slots[0] carry the batch).
void decode_batch(const std::vector<engine*>& slots, const std::vector<token_id>& tokens);

}  // namespace anchorage
