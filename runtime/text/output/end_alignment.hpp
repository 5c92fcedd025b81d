#pragma once
// End alignment (docs/CACHES.md, "The end anchor and the client's copy"): matches the next turn's prompt, as
// the client rendered it from its copy of the answer, against the rows the engine holds up to the end anchor,
// so the prompt can resume there. Pure functions on token vectors; no engine.
//
// R = end_record::rows (length e, the end anchor), C = the client's prompt. Rules, as applied:
//  * Exact head: R[0, rules_from()) must equal C token for token, where rules_from() is the
//    smallest of prompt_len, the first answer's start, the first span's start and the <think>
//    that opens the first reasoning span (earlier answers in the prompt part keep their spans: a
//    client that drops their reasoning later, or re-tokenises their text, still aligns), moved
//    back over the whitespace tokens before it (a BPE merges them with an answer's leading
//    whitespace, also where the client drops the block between). No rule applies in the head.
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
//    - Dropped block: at the <think> that opens a reasoning span (a <think> right before the
//      span, whitespace tokens between), when C does not hold <think>, R skips the whole block:
//      the span, its </think> and the whitespace tokens after it (a template that renders an
//      earlier answer as its content alone, as Qwen3's and Qwen3.5's do). Sets used_reasoning
//      and lists the block in `dropped`.
//    - Whitespace (end_align only): when R[i] or C[j] is whitespace (tokens whose bytes are all
//      ' ', '\n', '\t', '\r'), the whitespace runs R[i, b) and C[j, d) are taken as units; R's run stops at a
//      boundary position: the end of R, either end of the reasoning span, either end of a
//      hidden span. Equal runs match. Unequal runs (one may be empty) are both skipped when
//      they are next to a boundary: with a <= i the start of R's whole run (looking back over
//      matched whitespace, not past a boundary position) and c <= j likewise in C, when a or b
//      is a boundary position, or R[a-1], R[b], C[c-1] or C[d] is a special token
//      (tokenizer::is_special(): the byte tokenizer's 256..265).
//      Anything else (e.g. "4  exactly" against "4 exactly") fails by this rule; the text rule
//      is tried next.
//    - Text (end_text_match.hpp): when the tokens differ (or the whitespace rule fails), R up to
//      its next boundary and C up to its next special token may hold the same text tokenised
//      otherwise: the model's own tokens against the client's re-tokenisation of the text the
//      server sent. R's text is what the server showed (U+FFFD for invalid bytes, nothing for a
//      special token it never showed and C does not hold); equal texts, or R's a prefix of C's
//      on a token boundary of C, match. At R's end the match may end inside a token of C: the
//      rest of that token's bytes become `bridge` tokens. With end_align, trailing whitespace may
//      differ, and leading whitespace where R's stretch starts a text (after a special token, a
//      boundary or a skipped span): the templates trim what the client sends back. Sets used_text.
//    - Without end_align, whitespace must match token for token like any other token.
//    - Any other difference, or C ending before R is consumed, gives no alignment.
//  * Trailing: once R is consumed, the bridge and C's remaining tokens are appended as they are
//    (no whitespace rule there). There must be at least one: an alignment always has something
//    new to forward.
//  * Images: an image's rows (their key ids, runtime/core/token.hpp's is_image_row) in R or C
//    are never text and never whitespace: only the same ids match them (the client sends the
//    same image back, which expands to the same rows), and the text rule stops at them and does
//    not start its stretch back before one (end_text_match.hpp). A differing image gives no
//    alignment at its rows.
//  * A record that is not well_formed() gets no alignment.
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

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
  // Spans of R the model generated, one per answer the rows hold (earlier answers in the prompt
  // part, the last one from prompt_len); sorted, disjoint. Their tokens are the model's, not a
  // tokenisation of the client's text.
  std::vector<token_span> answers;
  // The last answer's token that was sampled and shown but never forwarded (not in the rows);
  // no_token when the generation stopped on a stop token or had no output.
  token_id pending = no_token;
  // What R's ids mean: whitespace and special tokens, </think> (tokenizer::is_whitespace(),
  // is_special(), ids().think_close below). The byte tokenizer by default.
  tokenizer tok;

  // Where the rules may start to apply: R[0, rules_from()) must match the client token for token.
  std::size_t rules_from() const;
};

struct alignment {
  std::vector<token_id> served;    // R[0, e), the bridge, then C[client_matched, C.size()); size() > e
  std::size_t client_matched = 0;  // tokens of C that stand for R[0, e)
  bool used_hidden = false;        // a hidden span was put back
  bool used_reasoning = false;     // R's reasoning stood for the client's empty block
  bool used_whitespace = false;    // unequal whitespace runs were aligned (end_align)
  bool used_text = false;          // the same text tokenised otherwise was aligned
  // Blocks of R the dropped-block rule skipped, [its <think>, past its whitespace): the client
  // will not show them again, so the rows keep them as hidden spans.
  std::vector<token_span> dropped;
};

// The record's invariants: prompt_len <= e; each reasoning span has begin <= end <= e and
// R[end] == </think> when end < e, and starts at or after the previous one's end; each hidden
// span and each answer span is non-empty, lies in [0, e], and starts at or after the previous
// one's end.
bool well_formed(const end_record& r);

// The alignment of `client` to r's end anchor under the rules above, or nullopt when there is
// none (a difference no rule accounts for, C no longer than the matched part, a malformed r).
std::optional<alignment> align_to_end(const end_record& r, const std::vector<token_id>& client,
                                      bool end_align);

}  // namespace anchorage
