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

}  // namespace

TEST_CASE("slot policy: a request goes to the slot that resumes it deepest", "[slots]") {
  const auto a = seq(0, 100), b = seq(1000, 100);
  // B's slot resumes the request at its end anchor (100); A's at nothing.
  const std::vector<slot_view> slots = {{false, &a, "A", 1, 0}, {false, &b, "B", 2, 100}};
  const slot_policy p;
  const auto c = p.choose("B", slots);
  REQUIRE(c);
  CHECK(c->slot == 1);
  CHECK(c->why == slot_reason::shared);
  CHECK(c->shared == 100);
  // The deepest resume wins over the session key; the key breaks a tie.
  const std::vector<slot_view> deeper = {{false, &a, "A", 1, 64}, {false, &b, "B", 2, 32}};
  CHECK(p.choose("B", deeper)->slot == 0);
  const std::vector<slot_view> tie = {{false, &a, "A", 1, 32}, {false, &b, "B", 2, 32}};
  CHECK(p.choose("A", tie)->slot == 0);
  CHECK(p.choose("B", tie)->slot == 1);
}

TEST_CASE("slot policy: a busy slot is never taken, however deep it would resume", "[slots]") {
  const auto a = seq(0, 100), b = seq(1000, 100);
  const slot_policy p;
  const std::vector<slot_view> slots = {{true, &a, "A", 1, 100}, {false, &b, "B", 2, 0}};
  const auto c = p.choose("A", slots);
  REQUIRE(c);
  CHECK(c->slot == 1);
  CHECK(c->why == slot_reason::least_worth);
  const std::vector<slot_view> all_busy = {{true, &a, "A", 1, 100}, {true, &b, "B", 2, 0}};
  CHECK_FALSE(p.choose("A", all_busy));
}

TEST_CASE("slot policy: a new conversation takes an empty slot before it replaces one", "[slots]") {
  const auto a = seq(0, 100), none = std::vector<token_id>{};
  const slot_policy p;
  const std::vector<slot_view> slots = {
      {false, &a, "A", 5, 0}, {false, &none, "", 0, 0}, {false, nullptr, "", 0, 0}};
  const auto c = p.choose("C", slots);
  REQUIRE(c);
  CHECK(c->slot == 1);
  CHECK(c->why == slot_reason::empty);
  // A slot that resumes the request is taken before an empty one.
  const std::vector<slot_view> resumes = {{false, &none, "", 0, 0}, {false, &a, "A", 5, 64}};
  CHECK(p.choose("C", resumes)->slot == 1);
}

TEST_CASE("slot policy: with no empty slot the least recently used prompt is replaced", "[slots]") {
  const auto a = seq(0, 100), b = seq(1000, 300), c3 = seq(2000, 50);
  const slot_policy p;
  const std::vector<slot_view> slots = {
      {false, &a, "A", 7, 0}, {false, &b, "B", 3, 0}, {false, &c3, "C", 9, 0}};
  const auto c = p.choose("D", slots);
  REQUIRE(c);
  CHECK(c->slot == 1);
  CHECK(c->why == slot_reason::least_worth);
  // Used at the same time: the shorter resident prompt is worth less.
  const std::vector<slot_view> tie = {{false, &b, "B", 3, 0}, {false, &c3, "C", 3, 0}};
  CHECK(p.choose("D", tie)->slot == 1);
}
