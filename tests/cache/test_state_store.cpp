// The state store: exact restores from snapshots, the token check behind the hash, LRU
// eviction under the budget pool, and the longest-prefix rule.
#include <catch2/catch.hpp>

#include <cstring>

#include "runtime/cache/state_store.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("a prompt resumed from a stored snapshot equals a cold prefill", "[store][exact]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid), line = 2 * g;
  const auto first_prompt = test_tokens(3 * g);
  // Shares the first two lines with first_prompt, then goes on differently.
  const auto prompt = concat(slice(first_prompt, 0, line), test_tokens(2 * g + 5, 11));
  REQUIRE(prompt[line] != first_prompt[line]);

  memory_budget budget;
  budget.set_limit(budget_pool::store, std::size_t{1} << 30);
  state_store store(budget);

  auto a = make_engine(c);
  a->prefill(slice(first_prompt, 0, line));
  REQUIRE(
      store.insert(slice(first_prompt, 0, line), a->cache_state(), a->where(), state_store::kind::prefix));
  a->prefill(slice(first_prompt, line, first_prompt.size()));
  CHECK(store.bytes() == state_copy::bytes_for(a->layout(), line));
  CHECK(budget.used(budget_pool::store) == store.bytes());

  auto cold = make_engine(c);
  cold->prefill(prompt);

  auto b = make_engine(c);
  const auto found = store.lookup(prompt, prompt.size() - 1);
  REQUIRE(found);
  REQUIRE(found->length == line);
  CHECK(found->exact);
  found->copy->restore(b->cache_state(), found->length);
  store.note_restored(found->length);
  b->prefill(slice(prompt, line, prompt.size()));

  CHECK(store.hits() == 1);
  CHECK(store.tokens_saved() == line);
  REQUIRE(b->length() == prompt.size());
  CHECK(same_bytes(b->last_logits(), cold->last_logits()));
  if (c.mtp) {
    REQUIRE(!cold->last_draft_logits().empty());
    CHECK(same_bytes(b->last_draft_logits(), cold->last_draft_logits()));
  }
  require_same_state(take_snapshot(b->cache_state()), take_snapshot(cold->cache_state()), cold->layout());
}

TEST_CASE("a hash collision is refused by the token check", "[store]") {
  const model_config c = test_config("tiny");
  auto eng = make_engine(c);
  const auto x = test_tokens(2 * c.grid);
  eng->prefill(x);

  memory_budget budget;
  budget.set_limit(budget_pool::store, std::size_t{1} << 30);
  state_store store(budget, budget_pool::store, std::numeric_limits<std::size_t>::max(),
                    [](const token_id*, std::size_t) { return std::uint64_t{42}; });
  REQUIRE(store.insert(x, eng->cache_state(), eng->where(), state_store::kind::session));

  auto y = x;
  y[5] ^= 1;  // same length, same (forced) hash, other tokens
  CHECK_FALSE(store.lookup(concat(y, test_tokens(7, 5)), x.size() + 7));
  CHECK(store.collisions() == 1);
  CHECK(store.misses() == 1);
  CHECK(store.hits() == 0);

  const auto genuine = store.lookup(concat(x, test_tokens(7, 5)), x.size() + 6);
  REQUIRE(genuine);
  CHECK(genuine->length == x.size());
  CHECK_FALSE(genuine->exact);  // a session snapshot
  CHECK(store.collisions() == 1);
  CHECK(store.hits() == 1);

  // The same tokens again refresh the entry rather than duplicating it.
  REQUIRE(store.insert(x, eng->cache_state(), eng->where(), state_store::kind::session));
  CHECK(store.entries() == 1);
  CHECK(store.bytes() == budget.used(budget_pool::store));
}

TEST_CASE("the store evicts the least recently used entry to stay in its pool", "[store]") {
  const model_config c = test_config("tiny");
  auto eng = make_engine(c);
  const std::size_t n = 2 * static_cast<std::size_t>(c.grid);
  eng->prefill(test_tokens(3 * c.grid));
  const std::size_t one = state_copy::bytes_for(eng->layout(), n);
  // Keys only: the store does not know which tokens produced a state, so one engine serves.
  const auto k1 = test_tokens(n, 101), k2 = test_tokens(n, 102), k3 = test_tokens(n, 103);

  memory_budget budget;
  budget.set_limit(budget_pool::store, 2 * one);
  state_store store(budget, budget_pool::store, one);  // the per-entry cap fits one snapshot of n rows
  auto insert = [&](const std::vector<token_id>& k) {
    const bool ok = store.insert(k, eng->cache_state(), eng->where(), state_store::kind::prefix);
    CHECK(budget.used(budget_pool::store) <= budget.limit(budget_pool::store));
    CHECK(budget.used(budget_pool::store) == store.bytes());
    return ok;
  };

  REQUIRE(insert(k1));
  REQUIRE(insert(k2));
  CHECK(store.entries() == 2);
  CHECK(budget.free(budget_pool::store) == 0);

  SECTION("a touched entry survives; the other goes") {
    REQUIRE(store.lookup(k1, n));  // k1 is now the most recently used
    REQUIRE(insert(k3));
    CHECK(store.evictions() == 1);
    CHECK(store.entries() == 2);
    CHECK(store.lookup(k1, n));
    CHECK(store.lookup(k3, n));
    CHECK_FALSE(store.lookup(k2, n));
  }
  SECTION("without a touch the oldest goes") {
    REQUIRE(insert(k3));
    CHECK(store.evictions() == 1);
    CHECK_FALSE(store.lookup(k1, n));
    CHECK(store.lookup(k2, n));
  }
  SECTION("an entry over the per-entry cap is refused and evicts nothing") {
    CHECK_FALSE(insert(test_tokens(n + 1, 104)));
    CHECK(store.refusals() == 1);
    CHECK(store.evictions() == 0);
    CHECK(store.entries() == 2);
  }
  SECTION("an entry that would not fit in the pool even empty evicts nothing") {
    // Another pool, no per-entry cap, room for exactly one snapshot of grid rows.
    const std::size_t short_one = state_copy::bytes_for(eng->layout(), c.grid);
    const budget_pool tight_pool = budget_pool::stash;  // another pool than the store's
    budget.set_limit(tight_pool, short_one);
    state_store tight(budget, tight_pool);
    REQUIRE(
        tight.insert(test_tokens(c.grid, 105), eng->cache_state(), eng->where(), state_store::kind::prefix));
    CHECK(budget.free(tight_pool) == 0);
    CHECK_FALSE(
        tight.insert(k3, eng->cache_state(), eng->where(), state_store::kind::prefix));  // n > grid rows
    CHECK(tight.refusals() == 1);
    CHECK(tight.evictions() == 0);
    CHECK(tight.entries() == 1);
    CHECK(budget.used(tight_pool) == short_one);
    CHECK(tight.lookup(test_tokens(c.grid, 105), c.grid));
  }
  SECTION("clear releases every byte") {
    store.clear();
    CHECK(store.entries() == 0);
    CHECK(store.bytes() == 0);
    CHECK(budget.used(budget_pool::store) == 0);
  }
}

TEST_CASE("the store releases its pool when destroyed", "[store]") {
  const model_config c = test_config("tiny");
  auto eng = make_engine(c);
  eng->prefill(test_tokens(c.grid));
  memory_budget budget;
  budget.set_limit(budget_pool::store, std::size_t{1} << 30);
  {
    state_store store(budget);
    REQUIRE(store.insert(test_tokens(c.grid), eng->cache_state(), eng->where(), state_store::kind::session));
    CHECK(budget.used(budget_pool::store) > 0);
  }
  CHECK(budget.used(budget_pool::store) == 0);
}

TEST_CASE("lookup returns the longest matching entry within max_len", "[store]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const auto prompt = test_tokens(3 * g);
  auto eng = make_engine(c);
  eng->prefill(prompt);

  memory_budget budget;
  budget.set_limit(budget_pool::store, std::size_t{1} << 30);
  state_store store(budget);
  for (std::size_t n : {g, 2 * g, 3 * g})
    REQUIRE(store.insert(slice(prompt, 0, n), eng->cache_state(), eng->where(), state_store::kind::prefix));
  auto other = slice(prompt, 0, 2 * g + 5);
  other.back() ^= 1;  // longer than 2g but not a prefix of the prompt
  REQUIRE(store.insert(other, eng->cache_state(), eng->where(), state_store::kind::session));
  CHECK(store.entries() == 4);
  CHECK(store.entries(state_store::kind::prefix) == 3);
  CHECK(store.entries(state_store::kind::session) == 1);

  auto length_at = [&](std::size_t max_len) -> std::size_t {
    const auto h = store.lookup(prompt, max_len);
    return h ? h->length : 0;
  };
  CHECK(length_at(prompt.size() - 1) == 2 * g);  // the whole prompt is not returned
  CHECK(length_at(prompt.size()) == 3 * g);
  CHECK(length_at(2 * g - 1) == g);
  CHECK(length_at(g - 1) == 0);
  CHECK(length_at(1000 * g) == 3 * g);  // max_len past the prompt is the prompt's length
  CHECK(store.hits() == 4);
  CHECK(store.misses() == 1);
  CHECK(store.collisions() == 0);
}

TEST_CASE("insert checks its preconditions", "[store]") {
  const model_config c = test_config("tiny");
  auto eng = make_engine(c);
  eng->prefill(test_tokens(c.grid));
  memory_budget budget;
  budget.set_limit(budget_pool::store, std::size_t{1} << 30);
  state_store store(budget);
  CHECK_THROWS_AS(
      store.insert(test_tokens(c.grid + 1), eng->cache_state(), eng->where(), state_store::kind::prefix),
      std::invalid_argument);
  CHECK_THROWS_AS(store.insert({}, eng->cache_state(), eng->where(), state_store::kind::prefix),
                  std::invalid_argument);
  CHECK(store.entries() == 0);
  CHECK(budget.used(budget_pool::store) == 0);
}

TEST_CASE("a newer session snapshot supersedes the conversation's earlier ones", "[store]") {
  const model_config c = test_config("tiny");
  auto e = make_engine(c);
  memory_budget budget;
  budget.set_limit(budget_pool::store, 64ULL << 20);
  state_store store(budget);
  const auto tokens = test_tokens(100, 9);
  e->prefill(tokens);
  const auto head = [&](std::size_t n) {
    return std::vector<token_id>(tokens.begin(), tokens.begin() + static_cast<long>(n));
  };
  REQUIRE(store.insert(head(40), e->cache_state(), e->where(), state_store::kind::session));
  REQUIRE(store.insert(head(60), e->cache_state(), e->where(), state_store::kind::prefix));
  auto other = head(50);
  other.back() = (other.back() + 1) % 256;  // another conversation: not a prefix
  REQUIRE(store.insert(other, e->cache_state(), e->where(), state_store::kind::session));
  REQUIRE(store.insert(head(90), e->cache_state(), e->where(), state_store::kind::session));
  CHECK(store.drop_prefixes_of(head(90), state_store::kind::session) == 1);  // head(40) only
  CHECK(store.entries() == 3);
  CHECK(store.superseded() == 1);
  CHECK(store.evictions() == 0);
  CHECK(budget.used(budget_pool::store) == store.bytes());
  // The prefix snapshot and the other conversation are still there.
  CHECK(store.lookup(tokens, 60)->length == 60);
  CHECK(store.lookup(other, other.size())->length == 50);
}

TEST_CASE("a pool limit lowered while the store runs evicts the least recently used entries at once",
          "[store][settings]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  memory_budget budget;
  budget.set_limit(budget_pool::store, std::size_t{1} << 30);
  state_store store(budget);
  auto e = make_engine(c);
  std::vector<std::vector<token_id>> t;
  for (std::uint64_t s = 0; s < 3; ++s) {
    t.push_back(test_tokens(g, 60 + s));
    e->reset();
    e->prefill(t.back());
    REQUIRE(store.insert(t.back(), e->cache_state(), e->where(), state_store::kind::prefix));
  }
  const std::size_t one = store.bytes() / 3;
  REQUIRE(store.lookup(concat(t[0], {1}), g));  // entry 0 is now the most recently used

  CHECK(store.shrink_to_limit() == 0);  // under the limit: nothing goes
  budget.set_limit(budget_pool::store, one + one / 2);
  CHECK(store.shrink_to_limit() == 2);
  CHECK(store.entries() == 1);
  CHECK(store.bytes() == one);
  CHECK(budget.used(budget_pool::store) == one);
  CHECK(store.evictions() == 2);
  CHECK(store.lookup(concat(t[0], {1}), g));
  CHECK_FALSE(store.lookup(concat(t[2], {1}), g));
  budget.set_limit(budget_pool::store, 0);
  CHECK(store.shrink_to_limit() == 1);
  CHECK(store.bytes() == 0);
}
