#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/text/output/end_alignment.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;

namespace {

const tokenizer tok;

std::vector<token_id> enc(const std::string& text) { return tok.encode(text, true); }

// The first turn's prompt with thinking on (the template ends it with "<think>\n"), and the
// client's next turn after the answer.
const std::string prompt_think =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?"
    "<|im_end|>\n<|im_start|>assistant\n<think>\n";
const std::string prompt_plain =
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
const std::string next_turn =
    "<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n<think>\n";

// R as a list of pieces. think marks reasoning.begin, then appends its text; close records
// reasoning.end there and appends "</think>" then its text. A think without a close leaves the
// thinking unclosed (reasoning.end == e).
enum class part { prompt, out, hidden, think, close };
end_record make_rows(std::initializer_list<std::pair<part, std::string>> pieces) {
  end_record r;
  std::optional<std::size_t> think_at;
  for (const auto& [kind, text] : pieces) {
    const std::size_t at = r.rows.size();
    if (kind == part::think) think_at = at;
    if (kind == part::close) r.reasoning.push_back(token_span{*think_at, at});
    const auto ids = enc(kind == part::close ? "</think>" + text : text);
    r.rows.insert(r.rows.end(), ids.begin(), ids.end());
    if (kind == part::prompt) r.prompt_len = r.rows.size();
    if (kind == part::hidden) r.hidden.emplace_back(at, r.rows.size());
  }
  if (think_at && (r.reasoning.empty() || r.reasoning.back().first != *think_at))
    r.reasoning.push_back(token_span{*think_at, r.rows.size()});
  return r;
}
constexpr part P = part::prompt, O = part::out, H = part::hidden, T = part::think, E = part::close;

std::string text(const end_record& r) { return tok.decode(r.rows); }

// R: a thinking turn, "The user asks for 2+2. That is 4.\n</think>\n\nThe answer is 4."
end_record thinking_answer() {
  return make_rows(
      {{P, prompt_think}, {T, "The user asks for 2+2. That is 4.\n"}, {E, "\n\nThe answer is 4."}});
}

// Checks an alignment: served is R then C's tail, and C's tail starts right after `matched`.
void check_served(const alignment& a, const end_record& r, const std::vector<token_id>& c,
                  std::size_t matched) {
  CHECK(a.client_matched == matched);
  REQUIRE(a.served.size() == r.rows.size() + (c.size() - matched));
  CHECK(std::equal(r.rows.begin(), r.rows.end(), a.served.begin()));
  CHECK(std::equal(c.begin() + matched, c.end(), a.served.begin() + r.rows.size()));
}

// The alignment with end_align on. `off_too`: end_align off gives the same one (whitespace rule
// unused); otherwise end_align off gives none.
alignment aligned(const end_record& r, const std::string& client, bool off_too) {
  const auto c = enc(client);
  const auto a = align_to_end(r, c, true);
  REQUIRE((a && a->served.size() > r.rows.size()));
  CHECK(std::equal(r.rows.begin(), r.rows.end(), a->served.begin()));
  const auto off = align_to_end(r, c, false);
  REQUIRE(off.has_value() == off_too);
  if (off) CHECK((off->served == a->served && !off->used_whitespace));
  return *a;
}

void no_alignment(const end_record& r, const std::string& client) {
  for (bool end_align : {false, true}) CHECK_FALSE(align_to_end(r, enc(client), end_align));
}

}  // namespace

TEST_CASE("a client prompt that starts with every row token aligns as it is", "[align]") {
  const end_record r = thinking_answer();
  const auto c = enc(text(r) + next_turn);
  for (bool end_align : {false, true}) {
    const auto a = align_to_end(r, c, end_align);
    REQUIRE(a);
    CHECK(a->served == c);
    CHECK(a->client_matched == r.rows.size());
    CHECK_FALSE((a->used_hidden || a->used_reasoning || a->used_whitespace));
  }
}

TEST_CASE("nothing new after the end anchor gives no alignment", "[align]") {
  const end_record r = thinking_answer();
  const std::vector<token_id> shorter(r.rows.begin(), r.rows.end() - 1);
  const std::vector<token_id> prompt_only(r.rows.begin(), r.rows.begin() + r.prompt_len);
  for (bool end_align : {false, true}) {
    CHECK_FALSE(align_to_end(r, r.rows, end_align));
    CHECK_FALSE(align_to_end(r, shorter, end_align));
    CHECK_FALSE(align_to_end(r, prompt_only, end_align));
    CHECK_FALSE(align_to_end(r, {}, end_align));
  }
}

TEST_CASE("hidden spans are put back", "[align]") {
  SECTION("in the middle of the output") {
    const end_record r = make_rows({{P, prompt_think},
                                    {T, "Let me count: 2 and 2."},
                                    {H, " Time is up; answer now."},
                                    {O, "\n"},
                                    {E, "\n\nThe answer is 4."}});
    const std::string visible = prompt_think + "Let me count: 2 and 2.\n</think>\n\nThe answer is 4.";
    const alignment a = aligned(r, visible + next_turn, true);
    CHECK((a.used_hidden && !a.used_reasoning && !a.used_whitespace));
    check_served(a, r, enc(visible + next_turn), enc(visible).size());
    CHECK(tok.decode(a.served).find("Time is up; answer now.") != std::string::npos);
  }
  SECTION("at the very end of the rows") {
    const end_record r = make_rows({{P, prompt_plain}, {O, "It is 4."}, {H, "\n[note: cut]"}});
    const alignment a = aligned(r, prompt_plain + "It is 4." + next_turn, true);
    CHECK(a.used_hidden);
    CHECK(tok.decode(a.served) == prompt_plain + "It is 4.\n[note: cut]" + next_turn);
    CHECK_FALSE(align_to_end(r, enc(prompt_plain + "It is 4."), true));  // nothing new
  }
}

TEST_CASE("reasoning the client dropped is served from the rows", "[align]") {
  const end_record r = thinking_answer();
  const std::string content = "</think>\n\nThe answer is 4.";
  SECTION("the template's empty block, of any whitespace length") {
    for (const char* block : {"\n", "\n\n\n", ""}) {
      const std::string client = prompt_think + block + content + next_turn;
      const alignment a = aligned(r, client, true);
      CHECK((a.used_reasoning && !a.used_hidden && !a.used_whitespace));
      check_served(a, r, enc(client), enc(client).size() - enc(next_turn).size());
    }
  }
  SECTION("a changed letter in the content") {
    no_alignment(r, prompt_think + "\n</think>\n\nThe answer is 5." + next_turn);
  }
  SECTION("a block with other text is not an empty block") {
    no_alignment(r, prompt_think + "Something else.\n" + content + next_turn);
  }
  SECTION("after a generated <think>") {
    const std::string prompt = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    const end_record g =
        make_rows({{P, prompt}, {O, "<think>"}, {T, "\nA greeting; greet back.\n"}, {E, "\n\nHello!"}});
    const alignment a = aligned(g, prompt + "<think>\n\n</think>\n\nHello!" + next_turn, true);
    CHECK(a.used_reasoning);
    CHECK(tok.decode(a.served) == text(g) + next_turn);
  }
  SECTION("thinking that never closed") {
    const end_record u = make_rows({{P, prompt_think}, {T, "2+2 is a sum; I keep thinking"}});
    const std::string client = prompt_think + "\n</think>\n\n" + next_turn;
    const alignment a = aligned(u, client, true);
    CHECK(a.used_reasoning);
    check_served(a, u, enc(client), enc(prompt_think + "\n").size());  // resumes at </think>
  }
}

TEST_CASE("reasoning of whitespace and hidden tokens", "[align]") {
  const std::string client = prompt_think + "\n</think>\n\nIt is 4." + next_turn;
  const end_record hidden_only =
      make_rows({{P, prompt_think}, {T, "\n"}, {H, "Skip thinking."}, {O, "\n"}, {E, "\n\nIt is 4."}});
  CHECK(aligned(hidden_only, client, true).used_reasoning);
  // Equal to the client's block: plain matching, the rule is not used.
  const end_record same = make_rows({{P, prompt_think}, {T, "\n"}, {E, "\n\nIt is 4."}, {H, " [note]"}});
  const alignment a = aligned(same, client, true);
  CHECK((a.used_hidden && !a.used_reasoning));
}

TEST_CASE("the prompt part must match exactly, whitespace included", "[align]") {
  const end_record r = thinking_answer();
  const std::string answer = "The user asks for 2+2. That is 4.\n</think>\n\nThe answer is 4.";
  std::string spaced = prompt_think;
  spaced.replace(spaced.find("user\nWhat"), 9, "user\n\nWhat");  // next to <|im_start|>user
  no_alignment(r, spaced + answer + next_turn);
  std::string doubled = prompt_think;
  doubled.replace(doubled.find("a helpful"), 9, "a  helpful");
  no_alignment(r, doubled + answer + next_turn);
}

TEST_CASE("whitespace next to a hidden span aligns only with end_align", "[align]") {
  const end_record r = make_rows({{P, prompt_think},
                                  {T, "Let me count: 2 and 2.\n"},
                                  {H, "Time is up; answer now.\n"},
                                  {O, "\n"},
                                  {E, "\n\nThe answer is 4."}});
  const std::string visible = prompt_think + "Let me count: 2 and 2.\n</think>\n\nThe answer is 4.";
  const alignment a = aligned(r, visible + next_turn, false);
  CHECK((a.used_hidden && a.used_whitespace));
  CHECK(tok.decode(a.served) == text(r) + next_turn);
  // Either edge of a hidden span is a boundary, with no special token near.
  const std::string plain = prompt_plain + "First part.\nSecond part.";
  for (const auto& [before, after] : {std::pair{"\n\n", ""}, std::pair{"", "\n\n"}}) {
    const end_record h = make_rows({{P, prompt_plain},
                                    {O, std::string("First part.") + before},
                                    {H, "[note]"},
                                    {O, std::string(after) + "Second part."}});
    const alignment b = aligned(h, plain + next_turn, false);
    CHECK((b.used_hidden && b.used_whitespace));
    check_served(b, h, enc(plain + next_turn), enc(plain).size());
  }
}

TEST_CASE("whitespace at the reasoning's ends and the rows' end aligns with end_align", "[align]") {
  // The template strips the reasoning's newlines.
  const end_record r = make_rows({{P, prompt_think}, {T, "\nThe user asks.\n\n"}, {E, "\n\nIt is 4."}});
  const alignment a = aligned(r, prompt_think + "The user asks.\n</think>\n\nIt is 4." + next_turn, false);
  CHECK((a.used_whitespace && !a.used_reasoning));
  // Whitespace the rows end with, before a special token and before plain text (a stop string).
  const end_record tail = make_rows({{P, prompt_plain}, {O, "Steps:\n\n"}});
  const alignment b = aligned(tail, prompt_plain + "Steps:" + next_turn, false);
  CHECK(b.used_whitespace);
  check_served(b, tail, enc(prompt_plain + "Steps:" + next_turn), enc(prompt_plain + "Steps:").size());
  const alignment t = aligned(tail, prompt_plain + "Steps:\n1. add", false);
  CHECK(tok.decode(t.served) == prompt_plain + "Steps:\n\n1. add");
}

TEST_CASE("whitespace inside plain content text never aligns", "[align]") {
  const end_record r = make_rows({{P, prompt_plain}, {O, "The answer is 4 exactly."}});
  for (const char* changed : {"The answer is 4  exactly.", "The answer is 4\texactly.",
                              "The answer is 4exactly.", "The answer is 4 exactly,"}) {
    no_alignment(r, prompt_plain + changed + next_turn);
  }
}

TEST_CASE("a malformed record gets no alignment", "[align]") {
  const end_record good = thinking_answer();
  REQUIRE(well_formed(good));
  end_record r = good;
  r.hidden = {{r.rows.size() - 1, r.rows.size() + 1}};  // past the end
  CHECK_FALSE(well_formed(r));
  no_alignment(r, text(good) + next_turn);
  r = good;
  r.reasoning.back().second -= 1;  // not the </think>
  CHECK_FALSE(well_formed(r));
  r = good;
  r.hidden = {{r.prompt_len + 4, r.prompt_len + 6}, {r.prompt_len + 1, r.prompt_len + 2}};
  CHECK_FALSE(well_formed(r));
  r = good;
  r.prompt_len = r.rows.size() + 1;
  CHECK_FALSE(well_formed(r));
}

TEST_CASE("earlier answers' reasoning in the prompt part is skipped too", "[align]") {
  // Turn 1 was served with its reasoning (an end alignment put it back); turn 2 answered. The
  // client now drops both answers' reasoning (a new user message makes the template drop it).
  const std::string q1 = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n";
  const std::string glue =
      "<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n<think>\n";
  end_record r;
  auto add = [&](const std::string& t) {
    const auto ids = enc(t);
    r.rows.insert(r.rows.end(), ids.begin(), ids.end());
  };
  add(q1);
  const std::size_t b1 = r.rows.size();
  add("two and two make four");
  r.reasoning.push_back({b1, r.rows.size()});
  add("</think>\n\nFour.");
  add(glue);
  r.prompt_len = r.rows.size();
  const std::size_t b2 = r.rows.size();
  add("three and three make six");
  r.reasoning.push_back({b2, r.rows.size()});
  add("</think>\n\nSix.");
  REQUIRE(well_formed(r));
  // the block's <think>, and the "\n" before it (a BPE may merge it with what follows)
  REQUIRE(r.rules_from() == b1 - enc("\n<think>\n").size());

  const std::string empty = "\n</think>\n\n";
  const std::string client_text =
      q1 + empty + "Four." + glue + empty + "Six." + "<|im_end|>\n<|im_start|>user\nAnd 4+4?<|im_end|>\n";
  const auto c = enc(client_text);
  const auto a = align_to_end(r, c, true);
  REQUIRE(a);
  CHECK(a->used_reasoning);
  CHECK(std::equal(r.rows.begin(), r.rows.end(), a->served.begin()));
  CHECK(tok.decode(
            std::vector<token_id>(a->served.begin() + static_cast<long>(r.rows.size()), a->served.end())) ==
        "<|im_end|>\n<|im_start|>user\nAnd 4+4?<|im_end|>\n");
  // A change in the first answer's visible text is still refused.
  const auto changed = enc(q1 + empty + "Five." + glue + empty + "Six.<|im_end|>\n");
  CHECK_FALSE(align_to_end(r, changed, true));
}

TEST_CASE("whitespace at the end of the rows takes from the client only what the rows hold", "[align]") {
  // R = "AB" + hidden "xyz" + "C " ; the client saw "ABC " then its pending "\n" and new text.
  end_record r;
  r.rows = enc("ABxyzC ");
  r.prompt_len = 2;
  r.hidden = {{2, 5}};
  REQUIRE(well_formed(r));
  const auto c = enc("ABC \n<|im_end|>\nU");
  const auto a = align_to_end(r, c, true);
  REQUIRE(a);
  CHECK(tok.decode(a->served) == "ABxyzC \n<|im_end|>\nU");
  // A client that dropped the trailing space keeps every token of its own.
  const auto d = align_to_end(r, enc("ABC\n<|im_end|>\nU"), true);
  REQUIRE(d);
  CHECK(tok.decode(d->served) == "ABxyzC \n<|im_end|>\nU");
  CHECK(d->used_whitespace);
}
