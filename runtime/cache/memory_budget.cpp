#include "runtime/cache/memory_budget.hpp"

#include <cassert>

namespace anchorage {

void memory_budget::set_limit(budget_pool pool, std::size_t bytes) { at(pool).limit = bytes; }

bool memory_budget::fits(budget_pool pool, std::size_t bytes) const {
  const pool_state& p = at(pool);
  return p.used <= p.limit && bytes <= p.limit - p.used;
}

bool memory_budget::reserve(budget_pool pool, std::size_t bytes) {
  if (!fits(pool, bytes)) {
    ++at(pool).refusals;
    return false;
  }
  at(pool).used += bytes;
  return true;
}

void memory_budget::release(budget_pool pool, std::size_t bytes) {
  auto& p = at(pool);
  assert(bytes <= p.used && "releasing more than the pool holds");
  p.used -= bytes <= p.used ? bytes : p.used;
}

std::size_t memory_budget::limit(budget_pool pool) const { return at(pool).limit; }

std::size_t memory_budget::used(budget_pool pool) const { return at(pool).used; }

std::size_t memory_budget::free(budget_pool pool) const {
  const std::size_t l = limit(pool), u = used(pool);
  return u >= l ? 0 : l - u;
}

long memory_budget::refusals(budget_pool pool) const { return at(pool).refusals; }

}  // namespace anchorage
