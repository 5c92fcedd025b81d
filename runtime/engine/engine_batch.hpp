#pragma once
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/engine/engine.hpp"

namespace anchorage {

// One decode step over several engines (slots) that share one engine_weights, each forwarding
// one or more tokens: slot i forwards rows[i] at positions length(), length() + 1, ...; its
// length advances by rows[i].size() and its row_logits() (row_draft_logits() with a draft
// layer) hold every row's, last_logits() the last row's. A slot of more than one row is a verify
// round (docs/SPECULATIVE.md): engine::keep_rows() may cut it back afterwards.
//
// The dense parts (every projection, the MLP, the draft layer's input projection, the LM head)
// run as one product over all rows (kernels/gemm_rows.hpp), so the weights are read once per
// step for every slot and row; the token-mixing parts run row by row on the row's slot's state,
// in order: attention over the slot's own K/V rows up to the row, the causal convolution over its
// conv tail, the delta rule over its gdn.S.
//
// Exactness (tests/engine/test_engine_batch.cpp, tests/engine/test_engine_verify.cpp,
// docs/ENGINE.md): every op computes a row the same way whatever the other rows are (gemm_rows'
// sums run over one row at a time, in the same order for any number of rows), so a row's bits
// are those of decode() forwarding the same token in the same state: decode() is this function
// with one slot of one row. Batched decode and verify rounds are held to the greedy gate by
// construction. Decode rows are above the taint (never a cold prefill's bits); prefill is
// untouched.
//
// On the cuda backend the slots are decoded one after another (decode() each, one row per
// slot): the same results and no batching yet; a slot of more than one row is refused there.
//
// Throws std::invalid_argument, with nothing run, when: slots is empty or holds a null or the
// same engine twice; rows.size() != slots.size() or a slot has no row; the engines do not share
// one engine_weights; a slot has a queued prefill; an id is outside the vocabulary; a slot would
// pass ctx_size; or there are more rows in all than grid rows (the activation buffers of
// slots[0] carry the batch).
void forward_batch(const std::vector<engine*>& slots, const std::vector<std::vector<token_id>>& rows);

// forward_batch with one row per slot.
void decode_batch(const std::vector<engine*>& slots, const std::vector<token_id>& tokens);

}  // namespace anchorage
