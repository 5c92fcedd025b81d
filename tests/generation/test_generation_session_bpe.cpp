// The generation session with a BPE tokenizer: the reasoning budget's close phrase in the
// tokenizer's ids, the reasoning block followed at its own <think> ids, and the end record and end
// alignment reading those ids.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/generation/generation_session.hpp"
#include "runtime/text/output/end_alignment.hpp"
#include "runtime/text/output/end_record_builder.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "runtime/text/tokenizer/utf8_stream.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

const tokenizer& tiny_bpe() {
  static const tokenizer t = tokenizer::from_json_file(bpe_fixture("tiny_qwen3.json"));
  return t;
}

model_config bpe_model() {
  model_config c = test_config("tiny");
  c.vocab = tiny_bpe().vocab_size();
  c.preset = "tiny, vocab 305";  // test_weights caches by preset name
  return c;
}

}  // namespace

TEST_CASE("bpe session: the budget forces the close phrase in the tokenizer's ids", "[generation][bpe]") {
  const tokenizer& bpe = tiny_bpe();
  const chat_ids& ids = bpe.ids();
  REQUIRE(ids.think_close != special_tokens::think_close);
  const auto e = make_engine(bpe_model());
  generation_job job;
  job.tok = bpe;
  job.prompt = bpe.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n", true);
  job.gen.max_tokens = 140;
  job.rules.parse_reasoning = true;
  job.rules.starts_in_reasoning = true;
  job.rules.reasoning_budget = 5;
  // Only the budget may close the block; the byte tokenizer's </think> id means nothing here.
  job.gen.sampling.logit_bias = {{ids.think_close, -100.0f}, {ids.im_end, -100.0f}, {ids.endoftext, -100.0f}};
  generation_session s(*e, job);
  while (!s.done()) s.step(8);

  const std::vector<token_id> phrase = bpe.encode(reasoning_close_phrase, true);
  CHECK(reasoning_close_length(bpe) == phrase.size());
  CHECK(phrase.size() < reasoning_close_length());  // fewer BPE tokens than bytes
  const std::vector<token_id>& out = s.output_ids();
  REQUIRE(out.size() >= 5 + phrase.size());
  CHECK(std::vector<token_id>(out.begin() + 5, out.begin() + 5 + static_cast<long>(phrase.size())) == phrase);
  const std::size_t hidden =
      static_cast<std::size_t>(std::find(phrase.begin(), phrase.end(), ids.think_close) - phrase.begin());
  REQUIRE(hidden < phrase.size());
  REQUIRE(s.hidden_spans().size() == 1);
  CHECK(s.hidden_spans()[0] == std::make_pair(std::size_t{5}, 5 + hidden));
  REQUIRE(s.reasoning_end().has_value());
  CHECK(*s.reasoning_end() == 5 + hidden);
  CHECK(s.reasoning_tokens() == 5);
  CHECK(s.output().reasoning.find("Considering") == std::string::npos);
  CHECK_FALSE(s.output().content.empty());  // the output went on past the phrase
  CHECK(valid_utf8_prefix(s.output().content) == s.output().content.size());

  // The end record reads the tokenizer's </think>: the reasoning span ends at the forced one.
  generation_outcome g;
  g.served = &job.prompt;
  g.output = &out;
  g.hidden = s.hidden_spans();
  g.reasoning_end = s.reasoning_end();
  g.starts_in_reasoning = true;
  g.rows = job.prompt.size() + out.size() - 1;
  g.tok = s.tok();
  const end_record r = build_end_record(g);
  CHECK(well_formed(r));
  REQUIRE(r.reasoning.size() == 1);
  const std::size_t p = job.prompt.size();
  CHECK(r.reasoning[0] == std::make_pair(p, p + 5 + hidden));
  CHECK(r.rows[r.reasoning[0].second] == ids.think_close);
  // Read with the byte tokenizer, the same rows are not a well-formed record.
  end_record as_bytes = r;
  as_bytes.tok = tokenizer();
  CHECK_FALSE(well_formed(as_bytes));
}

TEST_CASE("bpe alignment: a client's empty think block stands for the reasoning", "[end_alignment][bpe]") {
  const tokenizer& bpe = tiny_bpe();
  const chat_ids& ids = bpe.ids();
  // R: prompt "...<think>\n", reasoning, </think>, "\n\n", content.
  end_record r;
  r.tok = bpe;
  r.rows = bpe.encode("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n", true);
  r.prompt_len = r.rows.size();
  const std::size_t begin = r.rows.size();
  for (token_id t : bpe.encode("a plan", false)) r.rows.push_back(t);
  const std::size_t end = r.rows.size();
  r.rows.push_back(ids.think_close);
  for (token_id t : bpe.encode("\n\nanswer", false)) r.rows.push_back(t);
  r.reasoning.push_back({begin, end});
  REQUIRE(well_formed(r));
  // C: the same prompt, an empty block (whitespace, then </think>), the content, a new turn.
  std::vector<token_id> client(r.rows.begin(), r.rows.begin() + static_cast<long>(begin));
  client.push_back('\n');
  client.push_back(ids.think_close);
  client.insert(client.end(), r.rows.begin() + static_cast<long>(end) + 1, r.rows.end());
  const std::vector<token_id> next = bpe.encode("<|im_end|>\n<|im_start|>user\nmore", true);
  client.insert(client.end(), next.begin(), next.end());
  const auto a = align_to_end(r, client, /*end_align=*/true);
  REQUIRE(a.has_value());
  CHECK(a->used_reasoning);
  CHECK(std::vector<token_id>(a->served.begin(), a->served.begin() + static_cast<long>(r.rows.size())) ==
        r.rows);
  CHECK(std::vector<token_id>(a->served.begin() + static_cast<long>(r.rows.size()), a->served.end()) == next);
  // With the byte tokenizer's ids the same record is malformed and gets nothing.
  end_record as_bytes = r;
  as_bytes.tok = tokenizer();
  CHECK_FALSE(align_to_end(as_bytes, client, true).has_value());
}

TEST_CASE(
    "bpe alignment: Qwen3's empty block after a prompt ending in <think> and a newline resumes at the end",
    "[end_alignment][bpe]") {
  QWEN3_TOKENIZER_OR_SKIP(qwen3);
  const tokenizer& bpe = qwen3;
  const std::string head = "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n";
  end_record r;
  r.tok = bpe;
  r.rows = bpe.encode(head + "<think>\n", true);  // ends "<think>" "\n"
  r.prompt_len = r.rows.size();
  const std::size_t begin = r.rows.size();
  for (token_id t : bpe.encode("a plan", false)) r.rows.push_back(t);
  r.reasoning.push_back({begin, r.rows.size()});
  r.rows.push_back(bpe.ids().think_close);
  for (token_id t : bpe.encode("\n\nanswer", false)) r.rows.push_back(t);
  REQUIRE(well_formed(r));
  // The client dropped the reasoning: its template renders "<think>\n\n</think>\n\n", where
  // "\n\n" is one token, not the prompt's "\n".
  const std::vector<token_id> client =
      bpe.encode(head + "<think>\n\n</think>\n\nanswer<|im_end|>\n<|im_start|>user\nmore", true);
  REQUIRE(client[begin - 1] != r.rows[begin - 1]);
  const auto a = align_to_end(r, client, /*end_align=*/true);
  REQUIRE(a.has_value());
  CHECK(a->used_reasoning);
  CHECK(std::vector<token_id>(a->served.begin(), a->served.begin() + static_cast<long>(r.rows.size())) ==
        r.rows);
  CHECK(std::vector<token_id>(a->served.begin() + static_cast<long>(r.rows.size()), a->served.end()) ==
        bpe.encode("<|im_end|>\n<|im_start|>user\nmore", true));
  // Without end_align whitespace must match token for token: no alignment.
  CHECK_FALSE(align_to_end(r, client, /*end_align=*/false).has_value());
}
