// --memory-trim-s (runtime/server/memory_trim.hpp): a thread that hands the allocator's free
// pages back to the system every period. The soak found the resident set climbing after the
// caches had filled (freed state copies kept inside glibc's arenas); these tests check the
// trimmer's thread and that a trim gives such pages back.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "runtime/server/memory_trim.hpp"
#include "runtime/server/server_config.hpp"
#include "tests/support/process_probe.hpp"

using namespace anchorage;
using anchorage::testing::resident_bytes;
using namespace std::chrono_literals;

TEST_CASE("the memory trimmer trims every period, and stops at once however long its period",
          "[config][trim]") {
  {
    memory_trimmer t(20ms);
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (t.trims() < 3 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
    CHECK(t.trims() >= 3);
  }
  const auto start = std::chrono::steady_clock::now();
  {
    memory_trimmer t(std::chrono::hours(1));
    std::this_thread::sleep_for(10ms);
    CHECK(t.trims() == 0);
  }
  CHECK(std::chrono::steady_clock::now() - start < 2s);  // the destructor woke the thread
  memory_trimmer off(0ms);
  std::this_thread::sleep_for(30ms);
  CHECK(off.trims() == 0);
}

TEST_CASE("a trim gives back the free pages another thread's arena holds", "[trim]") {
#if defined(__SANITIZE_ADDRESS__) || defined(ANCHORAGE_TESTS_UNDER_ASAN) || !defined(__GLIBC__)
  // AddressSanitizer's allocator is not glibc's arenas: nothing for malloc_trim to give back.
  SUCCEED("not glibc's malloc");
#else
  // On a thread of its own (its own arena, as the server's board and workers have): 160 MiB in
  // blocks of 96 KiB (below the mmap threshold, so inside the arena), all freed but the last, so
  // that the arena's top is not free and glibc keeps the rest.
  constexpr std::size_t block = 96 << 10, count = 160 * 1024 / 96;
  std::vector<void*> blocks(count);
  std::size_t held = 0, after_trim = 0;
  void* last = nullptr;
  std::thread([&] {
    for (void*& p : blocks) {
      p = std::malloc(block);
      if (p == nullptr) std::abort();  // (no Catch assertion off the test thread)
      static_cast<volatile char*>(p)[0] = 1;
      for (std::size_t i = 0; i < block; i += 4096) static_cast<volatile char*>(p)[i] = 1;
    }
    last = blocks.back();
    blocks.pop_back();
    for (void* p : blocks) std::free(p);
  }).join();
  held = resident_bytes();
  {
    memory_trimmer t(10ms);
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (t.trims() < 1 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
    REQUIRE(t.trims() >= 1);
  }
  after_trim = resident_bytes();
  std::free(last);
  INFO("resident " << held << " B with the freed blocks held, " << after_trim << " B after a trim");
  CHECK(held >= after_trim + (100u << 20));
#endif
}

TEST_CASE("the flag --memory-trim-s takes seconds, 0 turns it off", "[config][trim]") {
  CHECK(parse_server_args({}).memory_trim_s == 10);
  CHECK(parse_server_args({"--memory-trim-s", "0"}).memory_trim_s == 0);
  CHECK(parse_server_args({"--memory-trim-s", "2.5"}).memory_trim_s == 2.5);
  CHECK_THROWS_WITH(parse_server_args({"--memory-trim-s", "-1"}), Catch::Contains("--memory-trim-s"));
}
