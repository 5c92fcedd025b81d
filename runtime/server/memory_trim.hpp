#pragma once
// Hands the memory the allocator holds free back to the system, every `period`, on a thread of
// its own (--memory-trim-s; docs/SERVER.md "Soak").
//
// Why: glibc's malloc keeps a thread's freed blocks in that thread's arena and returns only the
// top of an arena to the system. The server's caches free and allocate state copies of about a
// megabyte all day on several threads (the board, the disk tier, the HTTP workers), so the free
// pages inside the arenas pile up: in the soak the resident set rose by 120-150 MiB in eight
// minutes after the caches had filled their budgets, and one malloc_trim(0) gave 260 MiB back at
// once. malloc_trim(0) releases every whole free page in every arena (madvise), keeping the
// allocations; it takes each arena's lock in turn while it walks that arena.
//
// Elsewhere than glibc it does nothing. Stopping (the destructor) wakes the thread and joins it.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace anchorage {

class memory_trimmer {
 public:
  // A period of zero or less starts no thread: nothing is trimmed.
  explicit memory_trimmer(std::chrono::milliseconds period);
  ~memory_trimmer();
  memory_trimmer(const memory_trimmer&) = delete;
  memory_trimmer& operator=(const memory_trimmer&) = delete;

  long trims() const;  // trims made so far

 private:
  void run(std::chrono::milliseconds period);

  mutable std::mutex m_;
  std::condition_variable wake_;
  bool stop_ = false;
  long trims_ = 0;
  std::thread thread_;
};

}  // namespace anchorage
