#include "runtime/cache/memory_budget.hpp"

#include <cassert>

namespace anchorage {

void memory_budget::set_limit(const std::string& pool, std::size_t bytes) { pools_[pool].limit = bytes; }

bool memory_budget::fits(const std::string& pool, std::size_t bytes) const {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return bytes == 0;
  return it->second.used <= it->second.limit && bytes <= it->second.limit - it->second.used;
}

bool memory_budget::reserve(const std::string& pool, std::size_t bytes) {
  if (!fits(pool, bytes)) {
    ++pools_[pool].refusals;
    return false;
  }
  pools_[pool].used += bytes;
  return true;
}

void memory_budget::release(const std::string& pool, std::size_t bytes) {
  auto& p = pools_[pool];
  assert(bytes <= p.used && "releasing more than the pool holds");
  p.used -= bytes <= p.used ? bytes : p.used;
}

std::size_t memory_budget::limit(const std::string& pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.limit;
}

std::size_t memory_budget::used(const std::string& pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.used;
}

std::size_t memory_budget::free(const std::string& pool) const {
  const std::size_t l = limit(pool), u = used(pool);
  return u >= l ? 0 : l - u;
}

long memory_budget::refusals(const std::string& pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.refusals;
}

}  // namespace anchorage
