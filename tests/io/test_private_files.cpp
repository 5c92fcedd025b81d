// The caches' files are the owner's alone (runtime/io/private_dir.hpp, runtime/io/uring_env):
// every file the env writes is 0600 and every folder it creates 0700, whatever the umask; the
// folder a user points the caches at is refused when another user owns it or anyone may write
// to it; the admin token is compared without an early exit.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/core/secret.hpp"
#include "runtime/io/private_dir.hpp"
#include "runtime/io/uring_env.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<unsigned>(st.st_mode & 07777);
}

// Sets the umask for the scope of a test, then puts the old one back.
struct umask_scope {
  mode_t old;
  explicit umask_scope(mode_t m) : old(::umask(m)) {}
  ~umask_scope() { ::umask(old); }
};

}  // namespace

TEST_CASE("files the env writes are 0600 and folders it creates 0700, whatever the umask", "[io][private]") {
  for (mode_t mask : {mode_t{0}, mode_t{022}, mode_t{0277}}) {
    INFO("umask " << mask);
    umask_scope scope(mask);
    temp_dir d("anchorage-private");
    uring_env env;
    const std::string deep = d.str() + "/a/b/c";
    REQUIRE(env.make_dir(deep));
    for (const std::string& f : {d.str() + "/a", d.str() + "/a/b", deep}) CHECK(mode_of(f) == 0700);
    const std::string body = "what a client sent";
    REQUIRE(env.write_atomic(deep, "x.chk", {{body.data(), body.size()}}));
    CHECK(mode_of(deep + "/x.chk") == 0600);
    REQUIRE(env.wait_write(env.submit_write_atomic(deep, "y.blk", {{body.data(), body.size()}})));
    CHECK(mode_of(deep + "/y.blk") == 0600);
    // A file written again keeps 0600; a folder that existed keeps its own mode.
    REQUIRE(env.write_atomic(deep, "x.chk", {{body.data(), 4}}));
    CHECK(mode_of(deep + "/x.chk") == 0600);
    std::filesystem::create_directory(d.str() + "/mine");
    ::chmod((d.str() + "/mine").c_str(), 0750);
    REQUIRE(env.make_dir(d.str() + "/mine/sub"));
    CHECK(mode_of(d.str() + "/mine") == 0750);
    CHECK(mode_of(d.str() + "/mine/sub") == 0700);
  }
}

TEST_CASE("make_dir refuses a path whose component is a file", "[io][private]") {
  temp_dir d("anchorage-private");
  std::ofstream(d.str() + "/file") << "x";
  const file_result r = make_private_dirs(d.str() + "/file/sub");
  CHECK_FALSE(r);
  CHECK(r.message.find("not a folder") != std::string::npos);
  CHECK(make_private_dirs(d.str() + "/trailing/"));
  CHECK(mode_of(d.str() + "/trailing") == 0700);
}

TEST_CASE("the caches' folder is refused when world-writable or another user's", "[io][private]") {
  temp_dir d("anchorage-private");
  CHECK(check_private_root(d.str()));               // this user's, 0755
  CHECK(check_private_root(d.str() + "/not-yet"));  // created 0700 when first written
  const std::string open = d.str() + "/open";
  std::filesystem::create_directory(open);
  ::chmod(open.c_str(), 01777);  // like /tmp: world-writable, sticky or not
  file_result r = check_private_root(open);
  CHECK_FALSE(r);
  CHECK(r.message.find("world-writable (mode 1777)") != std::string::npos);
  CHECK(r.message.find(open) != std::string::npos);
  ::chmod(open.c_str(), 0775);  // group-writable is the owner's choice
  CHECK(check_private_root(open));
  std::ofstream(d.str() + "/file") << "x";
  r = check_private_root(d.str() + "/file");
  CHECK_FALSE(r);
  CHECK(r.message.find("is not a folder") != std::string::npos);
  const std::string theirs = d.str() + "/theirs";
  std::filesystem::create_directory(theirs);
  if (::geteuid() != 0) {
    WARN("not root: a folder owned by another user cannot be made here, that case is not checked");
    return;
  }
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  r = check_private_root(theirs);
  CHECK_FALSE(r);
  CHECK(r.message.find("owned by another user (uid 65534)") != std::string::npos);
}

TEST_CASE("the admin token is compared whole, byte by byte, with the lengths", "[io][private]") {
  CHECK(same_secret("s3cret-token", "s3cret-token"));
  CHECK_FALSE(same_secret("s3cret-tokeN", "s3cret-token"));
  CHECK_FALSE(same_secret("S3cret-token", "s3cret-token"));
  CHECK_FALSE(same_secret("s3cret", "s3cret-token"));                    // a prefix
  CHECK_FALSE(same_secret("s3cret-tokens3cret-token", "s3cret-token"));  // the secret twice
  CHECK_FALSE(same_secret("s3cret-token ", "s3cret-token"));
  CHECK_FALSE(same_secret("", "s3cret-token"));
  CHECK_FALSE(same_secret("x", ""));
  CHECK(same_secret("", ""));
  const std::string with_nul("a\0b", 3);
  CHECK(same_secret(with_nul, with_nul));
  CHECK_FALSE(same_secret(std::string("a\0c", 3), with_nul));
}
