// The logging seam and the status idiom.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/core/status.hpp"

using namespace anchorage;

TEST_CASE("log lines reach the sink at or above the level, formatted once, whole", "[core]") {
  std::vector<std::pair<log_level, std::string>> lines;
  auto previous = set_log_sink([&](log_level l, const std::string& s) { lines.emplace_back(l, s); });
  const log_level before = current_log_level();
  set_log_level(log_level::warn);
  int formatted = 0;
  auto count = [&formatted] { return ++formatted; };
  log_info() << "hidden " << count();
  log_warn() << "shown " << 42 << ' ' << count();
  log_error() << "also";
  set_log_level(before);
  set_log_sink(std::move(previous));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].first == log_level::warn);
  CHECK(lines[1].first == log_level::error);
  CHECK(lines[1].second == "also");
  // The hidden line's operands are evaluated (C++ has no lazy <<), but nothing is written.
  CHECK(lines[0].second == "shown 42 2");
}

TEST_CASE("status and expected carry what failed", "[core]") {
  status good;
  CHECK(good.is_ok());
  CHECK(good.error().empty());
  status bad = status::failure("chunk 3: crc mismatch");
  CHECK_FALSE(bad);
  CHECK(bad.error() == "chunk 3: crc mismatch");

  expected<int> v = 7;
  REQUIRE(v);
  CHECK(*v == 7);
  CHECK(v.error().is_ok());
  expected<int> e = status::failure("no anchor");
  CHECK_FALSE(e.has_value());
  CHECK(e.error().error() == "no anchor");
}
