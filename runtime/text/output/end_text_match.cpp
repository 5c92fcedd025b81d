#include "runtime/text/output/end_text_match.hpp"

#include <string>
#include <string_view>

#include "runtime/text/template/jinja_json.hpp"
#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/tokenizer/utf8_stream.hpp"

namespace anchorage::end_text {

namespace {

// Whitespace as the templates trim it (jinja's trim is Python's str.strip()).
std::size_t leading_space(std::string_view s) {
  const std::string_view kept = python_strip(s);
  return kept.empty() ? s.size() : static_cast<std::size_t>(kept.data() - s.data());
}

std::string_view trim_end(std::string_view s) {
  const std::string_view kept = python_strip(s);
  return kept.empty() ? std::string_view()
                      : s.substr(0, static_cast<std::size_t>(kept.data() - s.data()) + kept.size());
}

// Where a truncated UTF-8 sequence at the end of `bytes` starts (bytes.size() when none).
std::size_t truncated_tail(std::string_view bytes) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const utf8_sequence s = next_utf8_sequence(bytes, pos);
    if (s.status == utf8_status::truncated && pos + s.length == bytes.size()) return pos;
    pos += s.length;
  }
  return bytes.size();
}

// R's stretch: where it stops and the text the server showed for it.
struct rows_text {
  std::size_t end = 0;
  bool at_shared_special = false;  // stopped at a special token C's next special token equals
  std::string shown;               // every run as shown_text() shows it
  std::string raw_tail;            // at R's end: `shown` with a truncated tail left raw
};

rows_text read_rows(const query& q, std::size_t client_special) {
  rows_text r;
  const std::size_t e = q.rows.size();
  std::string run;  // bytes of the current run of text tokens
  std::size_t a = q.i;
  for (; a < q.limit; ++a) {
    const token_id t = q.rows[a];
    if (is_image_row(t)) {  // an image is never text: the stretch ends before its rows
      r.at_shared_special = client_special < q.client.size() && q.client[client_special] == t;
      break;
    }
    if (!q.tok.is_special(t)) {
      run += q.tok.token_text(t);
      continue;
    }
    if (client_special < q.client.size() && q.client[client_special] == t) {
      r.at_shared_special = true;
      break;
    }
    r.shown += shown_text(q.tok, run);  // a special token the client never saw: the run ends
    run.clear();
  }
  r.end = a;
  if (a == e) {
    const std::size_t tail = truncated_tail(run);
    if (tail < run.size()) r.raw_tail = r.shown + shown_text(q.tok, run.substr(0, tail)) + run.substr(tail);
  }
  r.shown += shown_text(q.tok, run);
  return r;
}

// C's token boundary at byte `offset` of C[j, b)'s text: the token index, or the token that
// straddles it with the bytes of that token past the offset.
struct boundary {
  std::size_t index = 0;
  std::string rest;  // empty when `offset` is a boundary
};

boundary find_boundary(const query& q, std::size_t b, std::size_t offset) {
  std::size_t at = 0;
  for (std::size_t k = q.j; k < b; ++k) {
    if (at == offset) return {k, {}};
    const std::string bytes = q.tok.token_text(q.client[k]);
    if (offset < at + bytes.size()) return {k + 1, bytes.substr(offset - at)};
    at += bytes.size();
  }
  return {b, {}};
}

std::vector<token_id> encode_rest(const tokenizer& tok, const std::string& rest) {
  if (valid_utf8_prefix(rest) == rest.size()) return tok.encode(rest, false);
  return tok.encode_bytes(rest);
}

}  // namespace

std::optional<match> match_text(const query& q) {
  const std::size_t e = q.rows.size();
  const std::size_t n = q.client.size();
  std::size_t b = q.j;
  while (b < n && !q.tok.is_special(q.client[b]) && !is_image_row(q.client[b])) ++b;
  const rows_text r = read_rows(q, b);
  const std::string client_text = q.tok.decode(q.client.data() + q.j, b - q.j);
  const std::size_t c_lead = q.lead_trim ? leading_space(client_text) : 0;
  const std::string_view c_body = std::string_view(client_text).substr(c_lead);

  auto result = [&](std::size_t client_end, std::vector<token_id> bridge = {},
                    bool trimmed = false) -> std::optional<match> {
    if (r.end == q.i && client_end == q.j) return std::nullopt;
    return match{r.end, client_end, std::move(bridge), trimmed};
  };
  const bool lead_differs = q.lead_trim && leading_space(r.shown) != c_lead;
  auto body_of = [&](const std::string& shown) {
    return std::string_view(shown).substr(q.lead_trim ? leading_space(shown) : 0);
  };

  if (r.at_shared_special) {
    const std::string_view body = body_of(r.shown);
    if (body == c_body) return result(b, {}, lead_differs);
    if (q.trail_trim && trim_end(body) == trim_end(c_body)) return result(b, {}, true);
    return std::nullopt;
  }
  for (const std::string* shown : {&r.raw_tail, &r.shown}) {
    if (shown == &r.raw_tail && shown->empty()) continue;
    const std::string_view body = body_of(*shown);
    if (c_body.substr(0, body.size()) != body) continue;
    const boundary at = find_boundary(q, b, c_lead + body.size());
    if (at.rest.empty()) return result(at.index, {}, lead_differs);
    if (r.end == e) return result(at.index, encode_rest(q.tok, at.rest), lead_differs);
  }
  if (!q.trail_trim) return std::nullopt;
  const std::string_view body = body_of(r.shown);
  const std::string_view kept = trim_end(body);
  if (kept != trim_end(c_body)) return std::nullopt;
  // Equal but for trailing whitespace. At R's end, C's whitespace that R's does not begin with is
  // new (the pending token's, the next message's): only the common text stands for R's.
  const std::string_view r_space = body.substr(kept.size()), c_space = c_body.substr(kept.size());
  if (r.end < e || r_space.substr(0, c_space.size()) == c_space) return result(b, {}, true);
  const boundary at = find_boundary(q, b, c_lead + kept.size());
  return result(at.index, encode_rest(q.tok, at.rest), true);
}

}  // namespace anchorage::end_text
