// What a finished generation leaves for the end alignment.
#include <catch2/catch.hpp>

#include "runtime/text/output/end_record_builder.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;

namespace {
const tokenizer tok;
std::vector<token_id> enc(const std::string& s) { return tok.encode(s, true); }
}  // namespace

TEST_CASE("the end record holds the forwarded rows and the output's spans as row positions", "[align][end]") {
  const auto prompt = enc("<|im_start|>assistant\n<think>\n");
  const auto output = enc("abc HIDDEN</think>\n\nanswer<|im_end|>");
  generation_outcome g;
  g.served = &prompt;
  g.output = &output;
  g.starts_in_reasoning = true;
  g.hidden = {{4, 10}};                        // " HIDDEN" minus its space: "HIDDEN"
  g.reasoning_end = 10;                        // the </think>
  g.rows = prompt.size() + output.size() - 1;  // the stop token was sampled, never forwarded
  const end_record r = build_end_record(g);
  const std::size_t p = prompt.size();
  CHECK(r.prompt_len == p);
  CHECK(r.rows.size() == g.rows);
  CHECK(r.rows.back() == 'r');
  REQUIRE(r.reasoning.size() == 1);
  CHECK(r.reasoning[0] == token_span{p, p + 10});
  CHECK(r.rows[p + 10] == special_tokens::think_close);
  REQUIRE(r.hidden.size() == 1);
  CHECK(r.hidden[0] == token_span{p + 4, p + 10});
  CHECK(well_formed(r));
}

TEST_CASE("without the session's reasoning end the block ends at the rows' </think>", "[align][end]") {
  // /v1/completions or a chat without thinking: the output opened and closed its own block.
  const auto prompt = enc("Prompt:");
  const auto output = enc("<think>\nreason</think>\n\nHi!");
  generation_outcome g;
  g.served = &prompt;
  g.output = &output;
  g.rows = prompt.size() + output.size();
  const end_record r = build_end_record(g);
  REQUIRE(r.reasoning.size() == 1);
  CHECK(r.reasoning[0].first == prompt.size() + 1);
  CHECK(r.rows[r.reasoning[0].second] == special_tokens::think_close);
  CHECK(well_formed(r));
  // The client's copy with the block emptied aligns, and the answer is not repeated.
  const auto client = enc("Prompt:<think>\n\n</think>\n\nHi!<|im_end|>\nmore");
  const auto a = align_to_end(r, client, true);
  REQUIRE(a);
  CHECK(tok.decode(a->served) == "Prompt:<think>\nreason</think>\n\nHi!<|im_end|>\nmore");
}

TEST_CASE("an end record for more rows than the request holds is a programmer error", "[align][end]") {
  const auto prompt = enc("abc");
  const auto output = enc("de");
  generation_outcome g;
  g.served = &prompt;
  g.output = &output;
  g.rows = 6;
  CHECK_THROWS_AS(build_end_record(g), std::logic_error);
  g.rows = 2;
  CHECK_THROWS_AS(build_end_record(g), std::logic_error);
}
