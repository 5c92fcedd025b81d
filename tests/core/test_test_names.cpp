// ctest runs each Catch test by its name (catch_discover_tests): a name that starts with '-' is
// read as an option, and one with ';' is cut by CMake's lists, so either test would fail (or run
// others) under ctest while passing in the binary. Twice a name like "--flag does X" failed CI.
#include <catch2/catch.hpp>

#include <string>

TEST_CASE("every test's name can be run by ctest", "[core][names]") {
  // Every registered test, hidden ones too (the filters of this run do not apply here).
  for (const Catch::TestCase& t : Catch::getAllTestCasesSorted(*Catch::getCurrentContext().getConfig())) {
    const std::string& name = t.getTestCaseInfo().name;
    INFO(name);
    CHECK(name.rfind('-', 0) != 0);
    CHECK(name.find(';') == std::string::npos);
  }
}
