// Answers that round-trip (issue 12, item 5): a client that sends back exactly what the server
// sent resumes at the end anchor, whatever the model wrote. Each answer here is what a random
// model writes (any defined id but a stop token: invalid UTF-8, special tokens the parser drops,
// whitespace, a </think> or not), the parser turns it into the message the client gets, the
// client appends it and a new user message, each template renders the next prompt, and the
// alignment must find the end anchor in it, turn after turn.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/text/template/chat_template.hpp"
#include "runtime/text/output/end_alignment.hpp"
#include "runtime/text/output/end_record_builder.hpp"
#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/template/qwen35_template.hpp"
#include "runtime/text/template/qwen3_template.hpp"
#include "runtime/text/template/template_conversation.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

struct renderer {
  const char* name;
  std::function<std::string(const std::vector<chat_message>&, bool thinking)> render;
  std::function<bool(bool thinking)> starts_in_reasoning;  // the generation prompt opens <think>
};

std::vector<renderer> renderers() {
  auto native = [](auto fn) {
    return [fn](const std::vector<chat_message>& m, bool thinking) {
      chat_render_options o;
      o.enable_thinking = thinking;
      return fn(template_messages(m), o);
    };
  };
  return {
      {"built-in",
       [](const std::vector<chat_message>& m, bool thinking) {
         template_options o;
         o.enable_thinking = thinking;
         return render_chat(m, o);
       },
       [](bool thinking) { return thinking; }},
      {"qwen3.5", native(render_qwen35), [](bool thinking) { return thinking; }},
      {"qwen3", native(render_qwen3), [](bool) { return false; }},
  };
}

// What a random model writes: any id the tokenizer defines except the stop tokens, with some
// weight on the ids that make round trips hard.
class random_model {
 public:
  random_model(const tokenizer& tok, std::uint64_t seed) : tok_(tok), rng_(seed) {
    for (token_id id = 0; id < tok.vocab_size(); ++id) {
      if (!tok.is_defined(id) || id == tok.ids().im_end || id == tok.ids().endoftext) continue;
      (tok.is_special(id) ? specials_ : tok.is_whitespace(id) ? spaces_ : text_).push_back(id);
    }
  }

  std::vector<token_id> answer() {
    std::vector<token_id> out(std::uniform_int_distribution<std::size_t>(1, 24)(rng_));
    for (auto& t : out) {
      const int kind = std::uniform_int_distribution<int>(0, 9)(rng_);
      const auto& pool = kind == 0 ? specials_ : kind <= 2 ? spaces_ : text_;
      t = pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng_)];
    }
    return out;
  }
  bool coin() { return std::uniform_int_distribution<int>(0, 1)(rng_) == 1; }
  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }

 private:
  const tokenizer& tok_;
  std::mt19937_64 rng_;
  std::vector<token_id> specials_, spaces_, text_;
};

chat_message message(const std::string& role, const std::string& content) {
  chat_message m;
  m.role = role;
  m.content = content;
  return m;
}

// Tokens as text, one bracket each, for the failure message.
std::string show(const tokenizer& tok, const std::vector<token_id>& ids, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < ids.size(); ++i) {
    out += "[";
    for (unsigned char c : tok.token_text(ids[i])) {
      char buf[8];
      if (c >= 0x20 && c < 0x7f) {
        out += static_cast<char>(c);
      } else {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      }
    }
    out += "]";
  }
  return out;
}

// Where the parser's reasoning closed: the session's reasoning_end, read the same way.
std::optional<std::size_t> reasoning_end(const tokenizer& tok, const std::vector<token_id>& out,
                                         bool starts_in) {
  std::size_t from = 0;
  if (!starts_in) {
    while (from < out.size() && tok.is_whitespace(out[from])) ++from;
    if (from == out.size() || out[from] != tok.ids().think_open) return std::nullopt;
    ++from;
  }
  for (std::size_t i = from; i < out.size(); ++i)
    if (out[i] == tok.ids().think_close) return i;
  return std::nullopt;
}

// Six turns of one conversation; every follow-up must align at the end anchor. `keep_reasoning`:
// the client sends the reasoning back (reasoning_content) or drops it.
// `answer`: what the model writes each turn (the random model's answers by default).
using answer_source = std::function<std::vector<token_id>(random_model&)>;

void converse(const tokenizer& tok, const renderer& r, bool thinking, bool keep_reasoning, std::uint64_t seed,
              const answer_source& answer = {}) {
  random_model model(tok, seed);
  std::vector<chat_message> messages = {message("system", "You are terse."),
                                        message("user", "Tell me about caches.")};
  std::optional<end_record> record;
  std::vector<token_span> reasoning, hidden,
      answers;  // the earlier answers' spans, as resident_prefix keeps them
  for (int turn = 0; turn < 6; ++turn) {
    const std::string text = r.render(messages, thinking);
    const std::vector<token_id> client = tok.encode(text, true);
    std::vector<token_id> served = client;
    if (record) {
      const auto a = align_to_end(*record, client, true);
      INFO(r.name << " thinking " << thinking << " keep " << keep_reasoning << " seed " << seed << " turn "
                  << turn << " rules from " << record->rules_from() << " prompt_len " << record->prompt_len
                  << "\nrows:   " << show(tok, record->rows, 0) << "\nclient: " << show(tok, client, 0));
      REQUIRE(a.has_value());
      REQUIRE(a->served.size() > record->rows.size());
      CHECK(std::equal(record->rows.begin(), record->rows.end(), a->served.begin()));
      // What is forwarded past the end anchor is the client's text from some point on: the new
      // turn, never a piece of the old answer twice.
      const std::string tail =
          tok.decode(a->served.data() + record->rows.size(), a->served.size() - record->rows.size());
      REQUIRE(tail.size() <= text.size());
      CHECK(text.compare(text.size() - tail.size(), tail.size(), tail) == 0);
      CHECK(tail.find(messages.back().content) != std::string::npos);
      served = a->served;
      // resident_prefix::begin: a span left unclosed at the end anchor stays only when the
      // prompt's next token closes it.
      const std::size_t at = record->rows.size();
      reasoning.erase(std::remove_if(reasoning.begin(), reasoning.end(),
                                     [&](const token_span& sp) {
                                       return sp.second == at && served[at] != tok.ids().think_close;
                                     }),
                      reasoning.end());
      // resident_prefix::keep_hidden: the blocks the alignment skipped whole become hidden.
      for (const token_span& d : a->dropped) {
        auto inside = [&d](const token_span& sp) { return sp.first >= d.first && sp.second <= d.second; };
        reasoning.erase(std::remove_if(reasoning.begin(), reasoning.end(), inside), reasoning.end());
        hidden.erase(std::remove_if(hidden.begin(), hidden.end(), inside), hidden.end());
        hidden.insert(std::upper_bound(hidden.begin(), hidden.end(), d), d);
      }
    }
    const bool starts_in = thinking && r.starts_in_reasoning(thinking);
    const std::vector<token_id> out = answer ? answer(model) : model.answer();
    const bool stopped = model.coin();  // a stop token ended it (every id forwarded), else max_tokens
    output_parser parser(thinking, false, starts_in, tok);
    for (token_id t : out) parser.feed(t);
    parser.finish();
    generation_outcome g;
    g.served = &served;
    g.output = &out;
    g.reasoning_end = thinking ? reasoning_end(tok, out, starts_in) : std::nullopt;
    g.starts_in_reasoning = starts_in;
    g.rows = served.size() + out.size() - (stopped ? 0 : 1);
    g.tok = tok;
    end_record next = build_end_record(g);
    // resident_prefix's merge: the earlier answers' spans stay below the prompt's end.
    next.reasoning.insert(next.reasoning.begin(), reasoning.begin(), reasoning.end());
    next.answers.insert(next.answers.begin(), answers.begin(), answers.end());
    next.hidden.insert(next.hidden.begin(), hidden.begin(), hidden.end());
    reasoning = next.reasoning;
    hidden = next.hidden;
    answers = next.answers;
    REQUIRE(well_formed(next));
    record = std::move(next);

    chat_message reply = message("assistant", parser.result().content);
    if (keep_reasoning && !parser.result().reasoning.empty())
      reply.reasoning_content = parser.result().reasoning;
    messages.push_back(reply);
    messages.push_back(message("user", "question " + std::to_string(turn + 2) + ": and then?"));
  }
}

void converse_all(const tokenizer& tok, int conversations, const answer_source& answer = {}) {
  for (const renderer& r : renderers())
    for (bool thinking : {true, false})
      for (bool keep : {true, false})
        for (int c = 0; c < conversations; ++c)
          converse(tok, r, thinking, keep, static_cast<std::uint64_t>(c), answer);
}

// Answers of white space alone, as the random model writes them at max_tokens (newline after
// newline) or mixed: the templates trim them to nothing, so the client's copy holds none of them.
void whitespace_answers(const tokenizer& tok) {
  std::vector<token_id> spaces;
  for (token_id id = 0; id < tok.vocab_size(); ++id)
    if (tok.is_defined(id) && tok.is_whitespace(id) && !tok.is_special(id)) spaces.push_back(id);
  REQUIRE_FALSE(spaces.empty());
  const token_id newline = tok.encode("\n", false).at(0);
  converse_all(tok, 6, [&](random_model& m) {
    std::vector<token_id> out(static_cast<std::size_t>(1 + m.below(16)), newline);
    if (m.coin())
      for (token_id& t : out) t = spaces[m.below(spaces.size())];
    return out;
  });
}

}  // namespace

TEST_CASE("round trip: the byte tokenizer's answers resume at the end anchor",
          "[text][alignment][roundtrip]") {
  converse_all(tokenizer(), 40);
}

TEST_CASE("round trip: a small BPE's answers resume at the end anchor", "[text][alignment][roundtrip]") {
  converse_all(tokenizer::from_json_file(bpe_fixture("tiny_qwen3.json")), 40);
}

TEST_CASE("round trip: Qwen3's tokenizer's answers resume at the end anchor",
          "[text][alignment][roundtrip]") {
  QWEN3_TOKENIZER_OR_SKIP(tok);
  converse_all(tok, 25);
}

TEST_CASE("round trip: answers of white space alone resume at the end anchor",
          "[text][alignment][roundtrip]") {
  SECTION("the byte tokenizer") { whitespace_answers(tokenizer()); }
  SECTION("a small BPE") { whitespace_answers(tokenizer::from_json_file(bpe_fixture("tiny_qwen3.json"))); }
  SECTION("Qwen3's tokenizer") {
    QWEN3_TOKENIZER_OR_SKIP(tok);
    whitespace_answers(tok);
  }
}
