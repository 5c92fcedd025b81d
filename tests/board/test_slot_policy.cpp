#include <catch2/catch.hpp>

#include <vector>

#include "runtime/board/slot_policy.hpp"

using namespace anchorage;

namespace {

std::vector<token_id> seq(token_id from, std::size_t n) {
  std::vector<token_id> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<token_id>(i);
  return v;
}

std::vector<token_id> join(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("slot policy: a request goes to the slot whose resident prompt it continues", "[slots]") {
  const auto a = seq(0, 100), b = seq(1000, 100);
  const std::vector<slot_view> slots = {{false, &a, "A", 1}, {false, &b, "B", 2}};
  const slot_policy p;
  const auto c = p.choose(join(b, seq(5000, 10)), "B", slots);
  REQUIRE(c);
  CHECK(c->slot == 1);
  CHECK(c->why == slot_reason::shared);
  CHECK(c->shared == 100);
  // The longest shared prefix wins over the session key; the key breaks a tie.
  const auto longer = join(seq(0, 60), seq(7000, 40));
  const std::vector<slot_view> both = {{false, &a, "A", 1}, {false, &longer, "B", 2}};
  CHECK(p.choose(join(seq(0, 80), seq(9000, 5)), "B", both)->slot == 0);
  CHECK(p.choose(join(seq(0, 50), seq(9000, 5)), "A", both)->slot == 0);
  CHECK(p.choose(join(seq(0, 50), seq(9000, 5)), "B", both)->slot == 1);
}

TEST_CASE("slot policy: a busy slot is never taken, however much it shares", "[slots]") {
  const auto a = seq(0, 100), b = seq(1000, 100);
  const slot_policy p;
  const std::vector<slot_view> slots = {{true, &a, "A", 1}, {false, &b, "B", 2}};
  const auto c = p.choose(join(a, seq(5000, 10)), "A", slots);
  REQUIRE(c);
  CHECK(c->slot == 1);
  CHECK(c->why == slot_reason::least_worth);
  const std::vector<slot_view> all_busy = {{true, &a, "A", 1}, {true, &b, "B", 2}};
  CHECK_FALSE(p.choose(a, "A", all_busy));
}

TEST_CASE("slot policy: a new conversation takes an empty slot before it replaces one", "[slots]") {
  const auto a = seq(0, 100), none = std::vector<token_id>{};
  const slot_policy p;
  const std::vector<slot_view> slots = {{false, &a, "A", 5}, {false, &none, "", 0}, {false, nullptr, "", 0}};
  const auto c = p.choose(seq(3000, 20), "C", slots);
  REQUIRE(c);
  CHECK(c->slot == 1);
  CHECK(c->why == slot_reason::empty);
}

TEST_CASE("slot policy: with no empty slot the least recently used prompt is replaced", "[slots]") {
  const auto a = seq(0, 100), b = seq(1000, 300), c3 = seq(2000, 50);
  const slot_policy p;
  const std::vector<slot_view> slots = {{false, &a, "A", 7}, {false, &b, "B", 3}, {false, &c3, "C", 9}};
  const auto c = p.choose(seq(5000, 20), "D", slots);
  REQUIRE(c);
  CHECK(c->slot == 1);
  CHECK(c->why == slot_reason::least_worth);
  // Used at the same time: the shorter resident prompt is worth less.
  const std::vector<slot_view> tie = {{false, &b, "B", 3}, {false, &c3, "C", 3}};
  CHECK(p.choose(seq(5000, 20), "D", tie)->slot == 1);
  // A few shared tokens (a common template head) are no reason to take a slot.
  const auto head = join(seq(1000, 8), seq(8000, 30));
  CHECK(p.choose(head, "D", slots)->why == slot_reason::least_worth);
}
