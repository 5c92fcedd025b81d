#include "runtime/text/output/end_record_builder.hpp"

#include <algorithm>
#include <stdexcept>

namespace anchorage {

end_record build_end_record(const generation_outcome& g) {
  const auto& served = *g.served;
  const auto& out = *g.output;
  const std::size_t p = served.size();
  if (g.rows < p || g.rows > p + out.size())
    throw std::logic_error("build_end_record: " + std::to_string(g.rows) + " rows for a prompt of " +
                           std::to_string(p) + " and " + std::to_string(out.size()) + " output tokens");
  const std::size_t e = g.rows;
  end_record r;
  r.rows.reserve(e);
  r.rows.assign(served.begin(), served.end());
  r.rows.insert(r.rows.end(), out.begin(), out.begin() + static_cast<long>(e - p));
  r.prompt_len = p;
  r.tok = g.tok;
  const chat_ids& ids = g.tok.ids();
  // The answer starts at the <think> the prompt ends with, if it does: the block it opened
  // (starts_in_reasoning), or the empty block "<think>\n\n</think>\n\n" of thinking off, which
  // is then an empty reasoning span at its </think> (a template that renders earlier answers
  // without their block drops it too).
  auto before_space = [&](std::size_t q) {
    while (q > 0 && g.tok.is_whitespace(served[q - 1])) --q;
    return q;
  };
  std::size_t answer = p;
  std::size_t q = before_space(p);
  if (!g.starts_in_reasoning && q > 0 && served[q - 1] == ids.think_close) {
    const std::size_t close = q - 1;
    q = before_space(close);
    if (q > 0 && served[q - 1] == ids.think_open) {
      r.reasoning.push_back({close, close});
      answer = q - 1;
    }
  } else if (g.starts_in_reasoning && q > 0 && served[q - 1] == ids.think_open) {
    answer = q - 1;
  }
  if (e > answer) r.answers.push_back({answer, e});
  if (e - p < out.size()) r.pending = out[e - p];
  for (const auto& [a, b] : g.hidden) {
    const std::size_t ra = std::min(p + a, e), rb = std::min(p + b, e);
    if (rb > ra) r.hidden.emplace_back(ra, rb);
  }
  std::optional<std::size_t> begin;
  if (g.starts_in_reasoning) {
    begin = p;
  } else {
    // A generation that opened its own block: the reasoning starts after its <think>.
    for (std::size_t i = 0; i < e - p; ++i) {
      if (out[i] == ids.think_open) {
        begin = p + i + 1;
        break;
      }
      if (!g.tok.is_whitespace(out[i])) break;
    }
  }
  if (begin) {
    // The block ends at the session's </think>; without one (reasoning not parsed) at the first
    // </think> the rows hold, or at e when thinking never closed.
    std::size_t end = g.reasoning_end ? std::min(p + *g.reasoning_end, e) : e;
    if (!g.reasoning_end)
      end = static_cast<std::size_t>(
          std::find(r.rows.begin() + static_cast<long>(*begin), r.rows.end(), ids.think_close) -
          r.rows.begin());
    if (end >= *begin) r.reasoning.push_back({*begin, end});
  }
  return r;
}

}  // namespace anchorage
