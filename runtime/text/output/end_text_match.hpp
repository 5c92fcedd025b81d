#pragma once
// The end alignment's text rule (end_alignment.hpp): a stretch of the rows and a stretch of the
// client's prompt that hold the same text as the client saw it, tokenised differently. Used only
// by the end alignment's walk; pure, no state.
#include <cstddef>
#include <optional>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage::end_text {

struct query {
  const std::vector<token_id>& rows;    // R
  const std::vector<token_id>& client;  // C
  const tokenizer& tok;
  std::size_t i = 0;        // where the walk stands in R
  std::size_t j = 0;        // and in C
  std::size_t limit = 0;    // R's stretch ends here at the latest: the next boundary, or e
  bool lead_trim = false;   // whitespace at the start of both stretches may differ
  bool trail_trim = false;  // whitespace at their end may differ
};

struct match {
  std::size_t rows_end = 0;    // R[i, rows_end) is accounted for
  std::size_t client_end = 0;  // by C[j, client_end)
  // When R ends (rows_end == e) inside C's token client_end - 1: that token's bytes past R's
  // text, as tokens, so the served prompt holds R's tokens and then exactly the client's text.
  std::vector<token_id> bridge;
  bool trimmed = false;  // the texts matched only with whitespace trimmed
};

// R's stretch is R[i, a): text tokens, and special tokens the client does not hold at its next
// special token (ones the server never showed), up to `limit`, a special token C's next one
// equals, or an image's row (runtime/core/token.hpp's is_image_row). C's stretch is C[j, b), up
// to C's next special token or image row. An image's rows stand for no text here (every image
// would decode to the same placeholder): no stretch holds them, so the walk matches them id for
// id, and a stretch that stops at one counts as stopping at a shared special token only when C's
// stops at the same id. R's text is what the server
// showed for it: each run of text tokens between special tokens as shown_text() shows it
// (output_parser.hpp); at R's end a truncated UTF-8 sequence is also tried as raw bytes, which
// the client's next character may complete (the pending token's bytes).
//
// A match: both stop at the same special token and their texts are equal; or R's text is a
// prefix of C's ending on a token boundary of C (at R's end: anywhere, with a bridge); or, with
// trail_trim, both texts are equal once trailing whitespace is removed. lead_trim removes the
// leading whitespace of both first. nullopt when none holds or nothing would be consumed.
std::optional<match> match_text(const query& q);

}  // namespace anchorage::end_text
