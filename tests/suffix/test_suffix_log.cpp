// The store's file: a torn tail cut at open, the modes of its directory and file, and another
// tokenizer's log refused.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "runtime/suffix/suffix_log_format.hpp"
#include "runtime/suffix/suffix_store.hpp"
#include "tests/support/suffix_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::random_ids;
using anchorage::testing::suffix_options;
using anchorage::testing::temp_dir;

namespace {

unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("a torn tail is cut at open and the earlier records stay", "[suffix]") {
  temp_dir dir("suffix");
  std::mt19937 rng(1);
  const auto o = suffix_options(dir.file("suffix"));
  const auto a = random_ids(rng, 40, 1000), b = random_ids(rng, 30, 1000), c = random_ids(rng, 20, 1000);
  std::string path;
  {
    suffix_store store(o);
    store.add(a);
    store.add(b);
    store.add(c);
    path = store.path();
  }
  const std::uint64_t two =
      suffix_log::header_bytes + suffix_log::record_bytes(40) + suffix_log::record_bytes(30);
  const auto whole = read_bytes(path);
  REQUIRE(whole.size() == two + suffix_log::record_bytes(20));

  enum class damage { cut_mid_record, cut_mid_length, flip_id_byte, flip_crc_byte, garbage_after };
  for (damage d : {damage::cut_mid_record, damage::cut_mid_length, damage::flip_id_byte,
                   damage::flip_crc_byte, damage::garbage_after}) {
    auto bytes = whole;
    switch (d) {
      case damage::cut_mid_record:
        bytes.resize(two + 37);
        break;  // a kill -9 in the middle of the write
      case damage::cut_mid_length:
        bytes.resize(two + 2);
        break;
      case damage::flip_id_byte:
        bytes[two + 8 + 4 * 7] ^= 0x10;
        break;
      case damage::flip_crc_byte:
        bytes.back() ^= 0x01;
        break;
      case damage::garbage_after:
        bytes.insert(bytes.end(), {1, 0, 0, 0, 0, 0, 0});
        break;
    }
    write_bytes(path, bytes);
    INFO("damage " << static_cast<int>(d));
    suffix_store store(o);
    REQUIRE(store.is_open());
    const auto s = store.stats();
    CHECK(s.torn_tails_cut == 1);
    const std::uint64_t kept = d == damage::garbage_after ? whole.size() : two;
    CHECK(s.torn_bytes_cut == bytes.size() - kept);
    CHECK(std::filesystem::file_size(path) == kept);
    auto expected = a;
    expected.insert(expected.end(), b.begin(), b.end());
    if (d == damage::garbage_after) expected.insert(expected.end(), c.begin(), c.end());
    CHECK(store.ids() == expected);
    CHECK(std::vector<unsigned char>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(kept)) ==
          read_bytes(path));
  }

  // After the cut the log takes appends, and opens clean (it holds a, b and c now).
  {
    suffix_store store(o);
    CHECK(store.stats().torn_tails_cut == 0);
    CHECK(store.add(c).appended == 0);  // c is the log's last segment: already held
    CHECK(store.add(random_ids(rng, 20, 1000)).appended == 20);
  }
  suffix_store store(o);
  CHECK(store.stats().torn_tails_cut == 0);
  CHECK(store.ids().size() == 90 + 20);
}

// Regression (the crash loop, issue 29): a kill -9 inside a forget's rewrite left the log's .tmp
// beside it, and no open removed it.
TEST_CASE("an orphan tmp of a rewrite cut by a kill is removed at open, the log kept", "[suffix]") {
  temp_dir dir("suffix");
  std::mt19937 rng(2);
  const auto o = suffix_options(dir.file("suffix"));
  const auto a = random_ids(rng, 40, 1000);
  std::string path;
  {
    suffix_store store(o);
    store.add(a);
    path = store.path();
  }
  const auto whole = read_bytes(path);
  // What the kill left: half of the new log written to the tmp, never renamed.
  write_bytes(path + ".tmp", std::vector<unsigned char>(whole.begin(), whole.begin() + 50));
  suffix_store store(o);
  REQUIRE(store.is_open());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  CHECK(read_bytes(path) == whole);
  CHECK(store.ids() == a);
  CHECK(store.stats().torn_tails_cut == 0);
}

TEST_CASE("the store's directory is 0700 and its log 0600, wider modes tightened", "[suffix]") {
  temp_dir dir("suffix");
  const std::string root = dir.file("cache/suffix");  // the parent does not exist yet either
  {
    suffix_store store(suffix_options(root));
    REQUIRE(store.is_open());
    CHECK(mode_of(root) == 0700);
    CHECK(mode_of(dir.file("cache")) == 0700);
    CHECK(mode_of(store.path()) == 0600);
    store.add({1, 2, 3});
  }
  REQUIRE(::chmod(root.c_str(), 0755) == 0);
  const std::string log = root + "/" + suffix_log::file_name(0x5eedf00dULL);
  REQUIRE(::chmod(log.c_str(), 0644) == 0);
  suffix_store store(suffix_options(root));
  REQUIRE(store.is_open());
  CHECK(mode_of(root) == 0700);
  CHECK(mode_of(log) == 0600);
  CHECK(store.ids() == std::vector<token_id>{1, 2, 3});

  // A forget's rewrite keeps the mode.
  auto o = suffix_options(dir.file("small"));
  o.cap_bytes = 1024;
  suffix_store small(o);
  for (int i = 0; i < 10; ++i) small.add(std::vector<token_id>(40, i));
  REQUIRE(small.stats().forgets > 0);
  CHECK(mode_of(small.path()) == 0600);
}

TEST_CASE("a path that is a file or a symbolic link is refused", "[suffix]") {
  temp_dir dir("suffix");
  write_bytes(dir.file("plain"), {1, 2, 3});
  suffix_store on_file(suffix_options(dir.file("plain")));
  CHECK_FALSE(on_file.is_open());
  CHECK(on_file.why().error().find("not a directory") != std::string::npos);
  std::filesystem::create_directory(dir.file("real"));
  std::filesystem::create_directory_symlink(dir.file("real"), dir.file("link"));
  suffix_store on_link(suffix_options(dir.file("link")));
  CHECK_FALSE(on_link.is_open());
  CHECK(on_link.why().error().find("symbolic link") != std::string::npos);
  CHECK(on_link.add({1, 2, 3}).appended == 0);
  CHECK(std::filesystem::is_empty(dir.file("real")));
}

TEST_CASE("each tokenizer has its own log, and a log whose header names another is refused", "[suffix]") {
  temp_dir dir("suffix");
  const std::string root = dir.file("suffix");
  std::string path_a;
  {
    suffix_store a(suffix_options(root, 0xaaaa));
    a.add({1, 2, 3, 4});
    path_a = a.path();
  }
  {
    suffix_store b(suffix_options(root, 0xbbbb));  // another tokenizer: another file, empty
    REQUIRE(b.is_open());
    CHECK(b.ids().empty());
    b.add({9, 9});
  }
  CHECK(suffix_store(suffix_options(root, 0xaaaa)).ids() == std::vector<token_id>{1, 2, 3, 4});

  // A's log put under B's name (a copied cache): refused, neither read nor written.
  const std::string path_b = root + "/" + suffix_log::file_name(0xbbbb);
  std::filesystem::copy_file(path_a, path_b, std::filesystem::copy_options::overwrite_existing);
  const auto before = read_bytes(path_b);
  suffix_store b(suffix_options(root, 0xbbbb));
  CHECK_FALSE(b.is_open());
  CHECK(b.why().error().find("another tokenizer") != std::string::npos);
  CHECK(b.ids().empty());
  CHECK(b.add({5, 6, 7}).appended == 0);
  CHECK(b.longest_match({1, 2}, 1).length == 0);
  CHECK(b.propose({1, 2}, 4).empty());
  CHECK(read_bytes(path_b) == before);

  // A damaged header is refused the same way.
  auto bytes = read_bytes(path_a);
  bytes[3] ^= 0xff;
  write_bytes(path_a, bytes);
  suffix_store damaged(suffix_options(root, 0xaaaa));
  CHECK_FALSE(damaged.is_open());
  CHECK(damaged.why().error().find("bad magic") != std::string::npos);
}
