#pragma once
// Helpers for the session spill's tests: a small hand-made state layout (2 views, 2 sections,
// grid 4), conversations of random ids and bytes that grow and share heads, and the
// spill_image of one (sums by host_sum, names by the spill's functions, staged only what a
// store does not hold yet), built the way the engine's capture builds it.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/io/uring_env.hpp"
#include "runtime/spill/spill_image.hpp"
#include "runtime/spill/spill_store.hpp"
#include "tests/support/fault_env.hpp"
#include "tests/support/temp_dir.hpp"

namespace anchorage::testing {

using spill_bytes = std::vector<unsigned char>;

// Two views (16 and 24 bytes a row), two sections (64 and 48 bytes): every size a multiple of 8.
inline state_layout spill_test_layout(int grid = 4, std::uint64_t fingerprint = 0x5350494c4c544553ULL) {
  state_layout l;
  l.grid = grid;
  l.fingerprint = fingerprint;
  l.views = {{"attn.k", 16, 1 << 16}, {"attn.v", 24, 1 << 16}};
  l.sections = {{"gdn.S", 64}, {"gdn.conv", 48}};
  return l;
}

inline spill_bytes random_bytes(std::mt19937_64& rng, std::size_t n) {
  spill_bytes b(n);
  for (auto& x : b) x = static_cast<unsigned char>(rng());
  return b;
}

// A conversation as an engine would hold it: its ids and every view's rows, and sections that
// depend only on (seed, position, end), so the same state at the same place has the same bytes.
struct spill_conversation {
  std::string session_key;
  std::vector<token_id> tokens;
  std::vector<spill_bytes> rows;  // per view, tokens.size() * bytes_per_token
  std::uint64_t seed = 1;
  // Grid anchors at or below `head` are the state of the conversation this one branched from.
  std::size_t head = 0;
  std::uint64_t head_seed = 1;

  // Appends `d` tokens: random ids and rows.
  void grow(const state_layout& l, std::size_t d) {
    std::mt19937_64 rng(seed * 1000003 + tokens.size());
    for (std::size_t i = 0; i < d; ++i) tokens.push_back(static_cast<token_id>(rng() % 150000));
    rows.resize(l.views.size());
    for (std::size_t v = 0; v < l.views.size(); ++v) {
      const spill_bytes more = random_bytes(rng, d * l.views[v].bytes_per_token);
      rows[v].insert(rows[v].end(), more.begin(), more.end());
    }
  }
  // The sections at `at`.
  std::vector<spill_bytes> sections(const state_layout& l, std::size_t at, bool end) const {
    const std::uint64_t from = !end && at <= head ? head_seed : seed;
    std::mt19937_64 rng(from * 7919 + at * 2 + (end ? 1 : 0));
    std::vector<spill_bytes> out;
    for (const auto& s : l.sections) out.push_back(random_bytes(rng, s.bytes));
    return out;
  }
};

inline spill_conversation make_conversation(const state_layout& l, std::string key, std::size_t n,
                                            std::uint64_t seed = 1) {
  spill_conversation c;
  c.session_key = std::move(key);
  c.seed = seed;
  c.grow(l, n);
  return c;
}

// A conversation that shares `c`'s first `head` tokens and rows, then goes on its own way.
inline spill_conversation branch_of(const state_layout& l, const spill_conversation& c, std::string key,
                                    std::size_t head, std::size_t more, std::uint64_t seed) {
  spill_conversation b;
  b.session_key = std::move(key);
  b.seed = seed;
  b.head = head;
  b.head_seed = c.seed;
  b.tokens.assign(c.tokens.begin(), c.tokens.begin() + static_cast<long>(head));
  for (std::size_t v = 0; v < l.views.size(); ++v)
    b.rows.emplace_back(c.rows[v].begin(),
                        c.rows[v].begin() + static_cast<long>(head * l.views[v].bytes_per_token));
  b.grow(l, more);
  return b;
}

struct spill_image_options {
  std::vector<std::size_t> grid_anchors;  // on the grid, at or below the taint
  bool end = true;                        // an end anchor (and record) at tokens.size()
  std::size_t taint = ~std::size_t{0};    // default: every token
  bool resident = false;
  int slot = 0;
  std::uint64_t sequence = 1;
};

// The bytes of one anchor: every section at `at` (the end anchor, or a grid anchor).
struct spill_anchor_bytes {
  std::size_t at = 0;
  bool end = false;
  std::vector<spill_bytes> sections;  // per layout section
};

// The spill image of a conversation given its bytes: `rows[v]` holds view v's rows
// [0, tokens.size()), `anchors` the grid anchors ascending then the end anchor, if any (an end
// record is made for it). Blocks of one grid line over [0, n), sums by host_sum, names by the
// spill's functions; staged: every block and anchor `held` does not hold (all when it is null).
// `o`'s taint, resident, slot and sequence are used; its grid_anchors and end are not.
inline spill_image build_spill_image(const state_layout& l, const std::string& session_key,
                                     const std::vector<token_id>& tokens,
                                     const std::vector<spill_bytes>& rows,
                                     const std::vector<spill_anchor_bytes>& anchors,
                                     const spill_image_options& o = {}, const spill_store* held = nullptr) {
  const std::size_t g = static_cast<std::size_t>(l.grid);
  const std::size_t n = tokens.size();
  spill_image img;
  spill_manifest& m = img.manifest;
  m.session_key = session_key;
  m.tokens = tokens;
  m.id = spill_conversation_id(session_key, tokens, g);
  m.taint = std::min(o.taint, n);
  m.resident = o.resident;
  m.slot = o.slot;
  m.sequence = o.sequence;
  m.answers = {{n / 2, n}};
  for (std::size_t a = 0; a < n; a += g) {
    const std::size_t b = std::min(a + g, n);
    spill_block_ref ref;
    ref.a = a;
    ref.b = b;
    std::vector<spill_bytes> block;
    for (std::size_t v = 0; v < l.views.size(); ++v) {
      const std::size_t bpt = l.views[v].bytes_per_token;
      block.emplace_back(rows[v].begin() + static_cast<long>(a * bpt),
                         rows[v].begin() + static_cast<long>(b * bpt));
      ref.sums.push_back(host_sum(block.back().data(), block.back().size()));
    }
    ref.name = spill_block_name(spill_prefix_hash(tokens.data(), b), a, b, ref.sums);
    if (!held || !held->has_block(ref.name)) img.blocks.push_back({m.blocks.size(), std::move(block)});
    m.blocks.push_back(std::move(ref));
  }
  for (const spill_anchor_bytes& x : anchors) {
    spill_anchor_ref ref;
    ref.at = x.at;
    ref.end = x.end;
    for (const auto& s : x.sections) ref.sums.push_back(host_sum(s.data(), s.size()));
    ref.name = spill_anchor_name(spill_prefix_hash(tokens.data(), x.at), x.at, x.end, ref.sums);
    if (!held || !held->has_anchor(ref.name)) img.anchors.push_back({m.anchors.size(), x.sections});
    m.anchors.push_back(std::move(ref));
    if (x.end) {
      spill_end e;
      e.at = x.at;
      e.prompt_len = x.at > 2 ? x.at - 2 : 0;
      e.pending = x.at > 0 ? tokens[x.at - 1] : no_spill_token;
      e.reasoning = {{0, std::min<std::size_t>(1, x.at)}};
      m.end = e;
    }
  }
  return img;
}

// The spill image of `c`: the grid anchors `o` asks for and, when o.end, the end anchor at
// tokens.size(), with c's sections.
inline spill_image make_spill_image(const state_layout& l, const spill_conversation& c,
                                    const spill_image_options& o = {}, const spill_store* held = nullptr) {
  std::vector<spill_anchor_bytes> anchors;
  for (std::size_t at : o.grid_anchors) anchors.push_back({at, false, c.sections(l, at, false)});
  if (o.end) anchors.push_back({c.tokens.size(), true, c.sections(l, c.tokens.size(), true)});
  return build_spill_image(l, c.session_key, c.tokens, c.rows, anchors, o, held);
}

// prepare, execute on `env`, commit: one spill as the board and the writer actor do it.
inline spill_write_report write_spill(spill_store& store, file_env& env, const spill_image& img) {
  const spill_write_plan plan = store.prepare(img);
  return store.commit(img, plan, execute_spill_write(env, store.layout(), img, plan));
}

// A store's world: the test layout, a fault_env over a uring_env on a fresh directory.
struct spill_bench {
  temp_dir dir{"anchorage-spill"};
  state_layout layout = spill_test_layout();
  uring_env base;
  fault_env env{base};

  spill_store_options options(std::uint64_t budget = 1ULL << 30) const {
    spill_store_options o;
    o.dir = dir.str();
    o.budget_bytes = budget;
    return o;
  }
  // A store after its start-up scan (a restart: a new store over the same folder).
  std::unique_ptr<spill_store> open(std::uint64_t budget = 1ULL << 30) {
    auto s = std::make_unique<spill_store>(env, layout, options(budget));
    s->scan();
    return s;
  }
  spill_write_report spill(spill_store& s, const spill_image& img) { return write_spill(s, env, img); }
};

}  // namespace anchorage::testing
