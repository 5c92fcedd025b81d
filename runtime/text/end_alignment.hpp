#pragma once
// End alignment (docs/CACHES.md, "The end anchor and the client's copy"): matches the next turn's prompt, as
// the client rendered it from its copy of the answer, against the rows the engine holds up to the end anchor,
// so the prompt can resume there. Pure functions on token vectors; no engine.
//
// R = end_record::rows (length e, the end anchor), C = the client's prompt. Rules, as applied:
//  * Exact head: R[0, rules_from()) must equal C token for token, where rules_from() is the
//    smaller of prompt_len and the first span's start (earlier answers in the prompt part keep
//    their reasoning and hidden spans: a client that drops them later still aligns). No rule
//    applies in the head (whitespace next to a special token included). With end_align, when
//    that gives no alignment and the first reasoning span starts at rules_from() right after
//    whitespace tokens of R, the walk is retried with the head ending before that whitespace
//    (a BPE tokenizer encodes the prompt's "<think>\n" as "<think>" "\n" and the client's empty
//    block "<think>\n\n</think>" as "<think>" "\n\n" "</think>"; the whitespace rule then takes
//    the unequal runs, which end at the span's begin, a boundary).
//  * Exact prefix: when C starts with all of R, that is the alignment (nothing used). O(e) and no
//    allocation besides `served`.
//  * Otherwise R[rules_from(), e) is walked left to right against C:
//    - Hidden spans: a position of R inside a hidden span is skipped with the rest of its span;
//      C is never asked to hold hidden tokens (the client never saw them).
//    - Reasoning: for each reasoning span, decided once, at the first position i >= its begin
//      (if i < its end). When C from there is whitespace-only tokens then </think> (the empty
//      block the template renders for dropped reasoning), and that block is not R[i,
//      reasoning.end) itself token for token, R skips to reasoning.end and C skips its
//      whitespace to that </think>. With reasoning.end < e the </think> then matches R's; with
//      reasoning.end == e (thinking never closed) C's remaining tokens start at its </think>.
//      Applies with or without end_align; hidden tokens it skips do not set used_hidden.
//    - Whitespace (end_align only): when R[i] or C[j] is whitespace (tokens whose bytes are all
//      ' ', '\n', '\t', '\r'), the whitespace runs R[i, b) and C[j, d) are taken as units; R's run stops at a
//      boundary position: the end of R, either end of the reasoning span, either end of a
//      hidden span. Equal runs match. Unequal runs (one may be empty) are both skipped when
//      they are next to a boundary: with a <= i the start of R's whole run (looking back over
//      matched whitespace, not past a boundary position) and c <= j likewise in C, when a or b
//      is a boundary position, or R[a-1], R[b], C[c-1] or C[d] is a special token
//      (tokenizer::is_special(): the byte tokenizer's 256..265).
//      Anything else (e.g. "4  exactly" against "4 exactly") fails.
//    - Without end_align, whitespace must match token for token like any other token.
//    - Any other difference, or C ending before R is consumed, gives no alignment.
//  * Trailing: once R is consumed, C's remaining tokens are appended as they are (no whitespace
//    rule there). There must be at least one: an alignment always has something new to forward.
//  * A record that is not well_formed() gets no alignment.
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/text/tokenizer.hpp"

namespace anchorage {

using token_span = std::pair<std::size_t, std::size_t>;  // half-open [first, second) in R

// What the end anchor keeps besides the states: enough to align the next turn's prompt.
struct end_record {
  std::vector<token_id> rows;  // R: the tokens of rows [0, e), prompt then forwarded output
  std::size_t prompt_len = 0;  // R[prompt_len, e) was generated
  // Reasoning spans [begin, end), one per answer the rows hold (earlier turns' answers are in
  // the prompt part, the last one in the generated part): begin is the first reasoning token
  // (right after the prompt's "<think>\n" or a generated <think>); end is the position of R's
  // </think>, or e if the thinking never closed. Sorted, disjoint.
  std::vector<token_span> reasoning;
  std::vector<token_span> hidden;  // spans of R the client never saw; sorted, disjoint
  // What R's ids mean: whitespace and special tokens, </think> (tokenizer::is_whitespace(),
  // is_special(), ids().think_close below). The byte tokenizer by default.
  tokenizer tok;

  // Where the rules may start to apply: R[0, rules_from()) must match the client token for token.
  std::size_t rules_from() const;
};

struct alignment {
  std::vector<token_id> served;    // R[0, e) then C[client_matched, C.size()); size() > e
  std::size_t client_matched = 0;  // tokens of C that stand for R[0, e)
  bool used_hidden = false;        // a hidden span was put back
  bool used_reasoning = false;     // R's reasoning stood for the client's empty block
  bool used_whitespace = false;    // unequal whitespace runs were aligned (end_align)
};

// The record's invariants: prompt_len <= e; each reasoning span has begin <= end <= e and
// R[end] == </think> when end < e, and starts at or after the previous one's end; each hidden
// span is non-empty, lies in [0, e], and starts at or after the previous one's end.
bool well_formed(const end_record& r);

// The alignment of `client` to r's end anchor under the rules above, or nullopt when there is
// none (a difference no rule accounts for, C no longer than the matched part, a malformed r).
std::optional<alignment> align_to_end(const end_record& r, const std::vector<token_id>& client,
                                      bool end_align);

}  // namespace anchorage
