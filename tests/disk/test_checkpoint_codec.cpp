// Generation checkpoint files (docs/DISK_FORMAT.md, "Generation checkpoint files"): a
// generation's whole state restored in a fresh engine goes on with the same tokens and logits;
// damage, another request, another engine or a short file is refused, naming what failed, with
// the target engine untouched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "protocol/checkpoint_format.hpp"
#include "runtime/disk/checkpoint_codec.hpp"
#include "tests/support/disk_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

namespace co = df::checkpoint_offset;

constexpr std::uint64_t test_key_hash = 0x6b65792d68617368ULL;  // what the caller hashes
constexpr std::size_t output_steps = 3;                         // ids decoded before the cut

token_id greedy(const engine& e) {
  const auto& l = e.last_logits();
  return static_cast<token_id>(std::max_element(l.begin(), l.end()) - l.begin());
}

std::size_t header_bytes_of(const state_layout& l) {
  return df::checkpoint_fixed_bytes + (l.sections.size() + l.views.size()) * df::entry_bytes;
}

// A generation cut after a prefill off the grid and a few greedy steps: the engine holds the
// prompt and every output id but the pending one, which meta.tokens ends with.
struct cut_generation {
  model_config c;
  std::size_t g;
  std::vector<token_id> prompt;
  std::unique_ptr<engine> source;
  checkpoint_meta meta;
  bytes file;

  explicit cut_generation(const std::string& preset)
      : c(test_config(preset)),
        g(static_cast<std::size_t>(c.grid)),
        prompt(test_tokens(2 * g + 5, 11)),
        source(make_engine(c)) {
    source->prefill(prompt);
    meta.key_hash = test_key_hash;
    meta.seed = 0x5eed;
    meta.seed_explicit = true;
    meta.prompt_tokens = prompt.size();
    meta.tokens = prompt;
    meta.tokens.push_back(greedy(*source));
    for (std::size_t k = 0; k < output_steps; ++k) {
      source->decode(meta.tokens.back());
      meta.tokens.push_back(greedy(*source));
    }
    file = encode_checkpoint(source->cache_state(), meta);
  }

  std::size_t rows() const { return meta.tokens.size() - 1; }
  const state_layout& layout() const { return source->layout(); }

  // Decodes `f` for a fresh engine and applies it only when it passed: the refusal must carry
  // `expect`, start with its name, name `word`, and leave the engine at length 0 and unchanged.
  void refused(const bytes& f, df::fault expect, const std::string& word,
               const std::vector<token_id>* other_prompt = nullptr, std::uint64_t key = test_key_hash) const {
    auto fresh = make_engine(c);
    const snapshot before = state_bytes(fresh->cache_state(), rows());
    const auto r = decode_checkpoint(f, fresh->layout(), other_prompt ? *other_prompt : prompt, key);
    if (r.ok()) apply_checkpoint(fresh->cache_state(), r.value);
    INFO("error: " << r.error);
    CHECK(r.fault == expect);
    CHECK_THAT(r.error, Catch::Contains(word));
    CHECK_THAT(r.error, Catch::StartsWith(df::fault_name(expect)));
    CHECK(fresh->length() == 0);
    require_same_state(state_bytes(fresh->cache_state(), rows()), before, layout());
  }
};

// A header field rewritten under a valid header crc: the reader must check the value itself.
bytes patched(const bytes& f, const state_layout& l, std::size_t at, std::uint64_t value, int width) {
  bytes out = f;
  if (width == 4)
    put32(out, at, static_cast<std::uint32_t>(value));
  else
    put64(out, at, value);
  reseal_header(out, header_bytes_of(l));
  return out;
}

struct block {
  std::string name;
  std::size_t at, size;
  df::fault expect;
};

std::vector<block> checkpoint_blocks(const state_layout& l, std::size_t token_count) {
  const std::size_t hb = header_bytes_of(l), rows = token_count - 1;
  std::vector<block> out{{"magic", co::magic, 8, df::fault::bad_magic},
                         {"version", co::version, 4, df::fault::bad_version},
                         {"header", co::header_crc, hb - co::header_crc, df::fault::bad_header},
                         {"tokens", hb, token_count * df::token_bytes, df::fault::bad_crc}};
  std::size_t at = hb + token_count * df::token_bytes;
  for (const auto& s : l.sections) {
    out.push_back({"section " + s.name, at, s.bytes, df::fault::bad_crc});
    at += s.bytes;
  }
  for (const auto& v : l.views) {
    out.push_back({"view " + v.name, at, rows * v.bytes_per_token, df::fault::bad_crc});
    at += rows * v.bytes_per_token;
  }
  REQUIRE(at == checkpoint_file_bytes(l, token_count));
  return out;
}

}  // namespace

TEST_CASE("a generation checkpoint resumes with the same state, tokens and logits", "[checkpoint][exact]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const cut_generation cut(preset);
  const state_layout& l = cut.layout();
  REQUIRE(cut.rows() == 2 * cut.g + 5 + output_steps);
  REQUIRE(cut.source->length() == cut.rows());
  CHECK(cut.file.size() == checkpoint_file_bytes(l, cut.meta.tokens.size()));

  const auto h = read_checkpoint_header(cut.file.data(), cut.file.size());
  REQUIRE(h.ok());
  CHECK(h.value.version == df::checkpoint_version);
  CHECK(h.value.header_bytes == header_bytes_of(l));
  CHECK(h.value.grid == cut.g);
  CHECK(h.value.fingerprint == l.fingerprint);
  CHECK(h.value.file_bytes == cut.file.size());
  CHECK(h.value.key_hash == test_key_hash);
  CHECK(h.value.seed == 0x5eed);
  CHECK(h.value.prompt_tokens == cut.prompt.size());
  CHECK(h.value.token_count == cut.meta.tokens.size());
  CHECK(h.value.rows == cut.rows());
  CHECK(h.value.flags == df::checkpoint_flag_seed_explicit);
  REQUIRE(h.value.sections.size() == l.sections.size());
  REQUIRE(h.value.views.size() == l.views.size());
  for (std::size_t s = 0; s < l.sections.size(); ++s) {
    CHECK(h.value.sections[s].name == l.sections[s].name);
    CHECK(h.value.sections[s].size == l.sections[s].bytes);
  }
  for (std::size_t v = 0; v < l.views.size(); ++v) {
    CHECK(h.value.views[v].name == l.views[v].name);
    CHECK(h.value.views[v].size == l.views[v].bytes_per_token);
  }

  // The target ran another sequence first: the checkpoint replaces all of it.
  auto resumed = make_engine(cut.c);
  resumed->prefill(test_tokens(cut.g + 7, 99));
  const auto r = decode_checkpoint(cut.file, resumed->layout(), cut.prompt, test_key_hash);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.value.fingerprint == l.fingerprint);
  CHECK(r.value.meta.key_hash == test_key_hash);
  CHECK(r.value.meta.seed == 0x5eed);
  CHECK(r.value.meta.seed_explicit);
  CHECK(r.value.meta.prompt_tokens == cut.prompt.size());
  CHECK(r.value.meta.tokens == cut.meta.tokens);
  apply_checkpoint(resumed->cache_state(), r.value);
  REQUIRE(resumed->length() == cut.rows());
  require_same_state(take_snapshot(resumed->cache_state()), take_snapshot(cut.source->cache_state()), l);

  // Both go on from the pending token: the same logits, bit for bit, and the same ids.
  token_id a = r.value.meta.tokens.back(), b = cut.meta.tokens.back();
  for (int step = 0; step < 4; ++step) {
    INFO("step " << step);
    resumed->decode(a);
    cut.source->decode(b);
    CHECK(same_bytes(resumed->last_logits(), cut.source->last_logits()));
    if (cut.c.mtp) CHECK(same_bytes(resumed->last_draft_logits(), cut.source->last_draft_logits()));
    a = greedy(*resumed);
    b = greedy(*cut.source);
    REQUIRE(a == b);
  }
  require_same_state(take_snapshot(resumed->cache_state()), take_snapshot(cut.source->cache_state()), l);
}

TEST_CASE("a checkpoint keeps the seed and whether the client sent it", "[checkpoint]") {
  cut_generation cut("tiny");
  checkpoint_meta m = cut.meta;
  m.seed = 0xfedcba9876543210ULL;
  m.seed_explicit = false;
  const bytes f = encode_checkpoint(cut.source->cache_state(), m);
  const auto h = read_checkpoint_header(f.data(), f.size());
  REQUIRE(h.ok());
  CHECK(h.value.flags == 0);
  const auto r = decode_checkpoint(f, cut.layout(), cut.prompt, test_key_hash);
  REQUIRE(r.ok());
  CHECK(r.value.meta.seed == 0xfedcba9876543210ULL);
  CHECK_FALSE(r.value.meta.seed_explicit);
}

TEST_CASE("a checkpoint's ids are read from its header and tokens block alone", "[checkpoint]") {
  const cut_generation cut("tiny");
  const std::size_t head = header_bytes_of(cut.layout()) + cut.meta.tokens.size() * df::token_bytes;
  const auto t = read_checkpoint_tokens(cut.file.data(), head);
  INFO(t.error);
  REQUIRE(t.ok());
  CHECK(t.value == cut.meta.tokens);
  const auto short_read = read_checkpoint_tokens(cut.file.data(), head - 1);
  CHECK(short_read.fault == df::fault::truncated);
  bytes bad = cut.file;
  bad[head - 2] ^= 0x10;
  const auto damaged = read_checkpoint_tokens(bad.data(), head);
  CHECK(damaged.fault == df::fault::bad_crc);
  CHECK_THAT(damaged.error, Catch::Contains("tokens block"));
}

TEST_CASE("one flipped bit anywhere in a checkpoint is refused", "[checkpoint]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const cut_generation cut(preset);
  for (const block& b : checkpoint_blocks(cut.layout(), cut.meta.tokens.size()))
    for (const std::size_t at : {b.at, b.at + b.size / 2, b.at + b.size - 1})
      for (const int bit : {0, 5, 7}) {
        INFO(b.name << ", byte " << at << ", bit " << bit);
        bytes f = cut.file;
        f[at] ^= static_cast<unsigned char>(1u << bit);
        cut.refused(f, b.expect, b.name == "magic" ? "not a checkpoint" : b.name);
      }
}

TEST_CASE("a checkpoint of another request is refused", "[checkpoint]") {
  const cut_generation cut("tiny");
  SECTION("another key hash") {
    cut.refused(cut.file, df::fault::wrong_prefix, "key hash", nullptr, test_key_hash ^ 1);
  }
  SECTION("one prompt id changed") {
    auto other = cut.prompt;
    other[cut.g + 3] ^= 1;
    cut.refused(cut.file, df::fault::wrong_prefix, "token at position " + std::to_string(cut.g + 3), &other);
  }
  SECTION("a shorter prompt") {
    const auto other = slice(cut.prompt, 0, cut.prompt.size() - 1);
    cut.refused(cut.file, df::fault::wrong_prefix, "prompt has", &other);
  }
  SECTION("a longer prompt: the first output id taken as the prompt's") {
    const auto other = slice(cut.meta.tokens, 0, cut.prompt.size() + 1);
    cut.refused(cut.file, df::fault::wrong_prefix, "prompt has", &other);
  }
  SECTION("stored prompt ids rewritten under valid crcs: the ids themselves are compared") {
    bytes f = cut.file;
    const std::size_t hb = header_bytes_of(cut.layout());
    f[hb + df::token_bytes * 5] ^= 1;
    put32(f, co::tokens_crc, crc32(f.data() + hb, cut.meta.tokens.size() * df::token_bytes));
    reseal_header(f, hb);
    cut.refused(f, df::fault::wrong_prefix, "token at position 5");
  }
}

TEST_CASE("a checkpoint of another engine, shape or length is refused", "[checkpoint]") {
  const cut_generation cut("tiny");
  const state_layout& l = cut.layout();
  const std::size_t hb = header_bytes_of(l);
  SECTION("another fingerprint or grid") {
    cut.refused(patched(cut.file, l, co::fingerprint, l.fingerprint ^ 0x5a5a, 8), df::fault::foreign_engine,
                "fingerprint");
    cut.refused(patched(cut.file, l, co::grid, 2 * cut.g, 4), df::fault::foreign_engine, "grid");
  }
  SECTION("another engine's file: a draft layer's checkpoint") {
    const cut_generation mtp("tiny-mtp");
    cut.refused(mtp.file, df::fault::foreign_engine, "fingerprint");
  }
  SECTION("a renamed section or a view of another row size") {
    bytes f = cut.file;
    f[df::checkpoint_fixed_bytes] ^= 0x20;  // the first section's name
    reseal_header(f, hb);
    cut.refused(f, df::fault::layout_mismatch, "not in this engine's layout");
    const std::size_t view_entry = df::checkpoint_fixed_bytes + l.sections.size() * df::entry_bytes;
    cut.refused(patched(cut.file, l, view_entry + df::entry_size_offset, l.views[0].bytes_per_token + 4, 8),
                df::fault::layout_mismatch, "view '" + l.views[0].name + "'");
  }
  SECTION("an engine whose context is shorter than the generation") {
    auto small = make_engine(test_config("tiny", static_cast<int>(2 * cut.g)));
    REQUIRE(small->layout().fingerprint == l.fingerprint);
    const auto r = decode_checkpoint(cut.file, small->layout(), cut.prompt, test_key_hash);
    CHECK(r.fault == df::fault::layout_mismatch);
    CHECK_THAT(r.error, Catch::Contains("capacity"));
  }
  SECTION("header fields that contradict each other") {
    const std::size_t n = cut.meta.tokens.size();
    cut.refused(patched(cut.file, l, co::rows, n, 8), df::fault::bad_header, "rows");
    cut.refused(patched(cut.file, l, co::token_count, n + 1, 8), df::fault::bad_header, "rows");
    cut.refused(patched(cut.file, l, co::prompt_tokens, n, 8), df::fault::bad_header, "prompt_tokens");
    cut.refused(patched(cut.file, l, co::prompt_tokens, 0, 8), df::fault::bad_header, "prompt_tokens");
    cut.refused(patched(cut.file, l, co::flags, 2, 4), df::fault::bad_header, "flags");
    cut.refused(patched(cut.file, l, co::reserved, 1, 8), df::fault::bad_header, "reserved");
    cut.refused(patched(cut.file, l, co::file_bytes, cut.file.size() + 1, 8), df::fault::bad_header,
                "file_bytes");
    cut.refused(patched(cut.file, l, co::header_bytes, hb + df::entry_bytes, 4), df::fault::bad_header,
                "header_bytes");
  }
  SECTION("truncated files, and one byte too many") {
    for (const std::size_t keep : {std::size_t{0}, std::size_t{40}, df::checkpoint_fixed_bytes - 1, hb - 1,
                                   hb + 10, cut.file.size() / 2, cut.file.size() - 1}) {
      INFO("kept " << keep);
      bytes f = cut.file;
      f.resize(keep);
      cut.refused(f, df::fault::truncated, "bytes");
    }
    bytes f = cut.file;
    f.push_back(0);
    cut.refused(f, df::fault::bad_header, "bytes");
  }
  SECTION("another kind of file or another version") {
    cut.refused(encode_chunk(cut.source->cache_state(), cut.g, cut.prompt), df::fault::bad_magic, "a chunk");
    bytes f = cut.file;
    put32(f, co::version, 2);
    cut.refused(f, df::fault::bad_version, "version 2");
  }
}

TEST_CASE("encode and apply refuse a checkpoint that does not fit their state", "[checkpoint]") {
  const cut_generation cut("tiny");
  const state_adapter& from = cut.source->cache_state();
  SECTION("the ids must be the state's rows plus the pending one, after a whole prompt") {
    checkpoint_meta m = cut.meta;
    m.tokens.pop_back();
    CHECK_THROWS_AS(encode_checkpoint(from, m), std::invalid_argument);
    m = cut.meta;
    m.tokens.push_back(7);
    CHECK_THROWS_AS(encode_checkpoint(from, m), std::invalid_argument);
    m = cut.meta;
    m.prompt_tokens = 0;
    CHECK_THROWS_AS(encode_checkpoint(from, m), std::invalid_argument);
    m.prompt_tokens = m.tokens.size();
    CHECK_THROWS_AS(encode_checkpoint(from, m), std::invalid_argument);
    m.tokens.clear();
    m.prompt_tokens = 0;
    CHECK_THROWS_AS(encode_checkpoint(from, m), std::invalid_argument);
    CHECK_THROWS_AS(checkpoint_file_bytes(cut.layout(), 1), std::invalid_argument);
  }
  const auto r = decode_checkpoint(cut.file, cut.layout(), cut.prompt, test_key_hash);
  REQUIRE(r.ok());
  SECTION("another layout") {
    auto mtp = make_engine(test_config("tiny-mtp"));
    CHECK_THROWS_AS(apply_checkpoint(mtp->cache_state(), r.value), std::invalid_argument);
    CHECK(mtp->length() == 0);
    auto tiny = make_engine(cut.c);
    checkpoint_read shorter = r.value;
    shorter.meta.tokens.pop_back();  // the rows no longer match the ids
    CHECK_THROWS_AS(apply_checkpoint(tiny->cache_state(), shorter), std::invalid_argument);
    CHECK(tiny->length() == 0);
  }
  SECTION("past the views' capacity") {
    auto small = make_engine(test_config("tiny", static_cast<int>(2 * cut.g)));
    const snapshot before = state_bytes(small->cache_state(), 2 * cut.g);
    CHECK_THROWS_AS(apply_checkpoint(small->cache_state(), r.value), std::out_of_range);
    CHECK(small->length() == 0);
    require_same_state(state_bytes(small->cache_state(), 2 * cut.g), before, small->layout());
  }
}
