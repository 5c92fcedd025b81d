// Tests for runtime/model/mapped_file: the read-only mapping the checkpoint loader reads from.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <utility>

#include "runtime/model/mapped_file.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("mapped_file maps a file's bytes, stays readable after release, moves", "[model_dir]") {
  temp_dir dir("mapped");
  std::string bytes;
  for (int i = 0; i < 3 * 4096 + 100; ++i) bytes += static_cast<char>(i * 7);
  std::ofstream(dir.file("f"), std::ios::binary) << bytes;
  mapped_file m = mapped_file::open(dir.file("f"));
  REQUIRE(m.size() == bytes.size());
  CHECK(std::string(reinterpret_cast<const char*>(m.data()), m.size()) == bytes);
  m.release(0, m.size());  // pages dropped from the resident set, faulted back in on reading
  m.release(100, 5000);
  CHECK(std::string(reinterpret_cast<const char*>(m.data()), m.size()) == bytes);
  mapped_file moved = std::move(m);
  CHECK(m.data() == nullptr);
  CHECK(moved.size() == bytes.size());
  CHECK(moved.data()[4097] == static_cast<unsigned char>(bytes[4097]));
  CHECK(moved.path() == dir.file("f"));
}

TEST_CASE("mapped_file: a zero-byte file maps empty, a missing one throws naming it", "[model_dir]") {
  temp_dir dir("mapped");
  std::ofstream(dir.file("empty")).close();
  const mapped_file e = mapped_file::open(dir.file("empty"));
  CHECK(e.size() == 0);
  CHECK(e.data() == nullptr);
  e.release(0, 10);
  CHECK_THROWS_WITH(mapped_file::open(dir.file("none")),
                    Catch::Matchers::Contains(dir.file("none")) && Catch::Matchers::Contains("cannot open"));
  CHECK_THROWS_WITH(mapped_file::open(dir.str()), Catch::Matchers::Contains("not a regular file"));
}
