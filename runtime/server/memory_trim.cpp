#include "runtime/server/memory_trim.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace anchorage {

memory_trimmer::memory_trimmer(std::chrono::milliseconds period) {
  if (period.count() > 0) thread_ = std::thread([this, period] { run(period); });
}

memory_trimmer::~memory_trimmer() {
  {
    std::lock_guard<std::mutex> g(m_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

long memory_trimmer::trims() const {
  std::lock_guard<std::mutex> g(m_);
  return trims_;
}

void memory_trimmer::run(std::chrono::milliseconds period) {
  std::unique_lock<std::mutex> l(m_);
  while (!wake_.wait_for(l, period, [this] { return stop_; })) {
    l.unlock();
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
    l.lock();
    ++trims_;
  }
}

}  // namespace anchorage
