// The disk tier's shared level with an image in the prompt (runtime/core/token.hpp: an image's
// rows carry negative key ids): an anchor at a line inside an image's first image_key_rows rows
// is never fetched (no lookup would resume there, runtime/core/token_prefix.hpp's rule); one past
// them is fetched like any other.
#include <catch2/catch.hpp>

#include <cstdint>

#include "runtime/disk/disk_codec.hpp"
#include "runtime/remote/remote_disk.hpp"
#include "tests/support/disk_store_fixture.hpp"
#include "tests/support/redis_server.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// n ids: text, with an image's rows at [from, from + rows).
std::vector<token_id> prompt_with_image(std::size_t n, std::size_t from, std::size_t rows) {
  std::vector<token_id> t = test_tokens(n);
  for (std::size_t i = from; i < from + rows && i < n; ++i)
    t[i] = static_cast<token_id>(image_row_id_first + 0x1234 + static_cast<std::int64_t>(i));
  return t;
}

}  // namespace

TEST_CASE("remote disk: an anchor inside an image's first rows is not fetched, one past them is",
          "[remote][disk][image]") {
  redis_server server;
  REQUIRE_REDIS(server);
  bench b;
  const redis_options o = server.options("anchorage:image-rows");
  redis_env remote_a(o), remote_b(o);
  auto store_a = b.open(options_in(b.dir.str() + "/a"));
  auto store_b = b.open(options_in(b.dir.str() + "/b"));
  remote_disk shared_a(remote_a, b.layout.fingerprint), shared_b(remote_b, b.layout.fingerprint);

  // The image's rows start 3 ids below line 2g: an anchor there holds 3 of them.
  const auto tokens = prompt_with_image(3 * b.g + 5, 2 * b.g - 3, 20);
  REQUIRE(ends_in_image_key_rows(tokens, 2 * b.g));
  REQUIRE_FALSE(ends_in_image_key_rows(tokens, 3 * b.g));
  // The state is a text prefill's (the engine never reads the keys); the keys are the prompt's.
  auto cold = prefilled(b.c, test_tokens(3 * b.g), 2 * b.g);
  REQUIRE(store_a->store(slice(tokens, 0, 2 * b.g), cold->cache_state()));
  REQUIRE(shared_a.push_store(*store_a).failed == 0);
  // Written, but no lookup resumes there: neither locally nor from Redis.
  CHECK_FALSE(store_a->find(tokens));
  const remote_fetch_report none = shared_b.fetch(*store_b, tokens);
  INFO(none.error);
  CHECK(none.line == 0);
  CHECK(none.files == 0);
  CHECK_FALSE(store_b->find(tokens));

  // An anchor past the image's first rows serves, fetched as usual.
  cold->prefill(slice(test_tokens(3 * b.g), 2 * b.g, 3 * b.g));
  REQUIRE(store_a->store(slice(tokens, 0, 3 * b.g), cold->cache_state()));
  REQUIRE(shared_a.push_store(*store_a).failed == 0);
  const remote_fetch_report got = shared_b.fetch(*store_b, tokens);
  INFO(got.error);
  CHECK(got.line == 3 * b.g);
  const auto hit = store_b->find(tokens);
  REQUIRE(hit);
  CHECK(hit->line == 3 * b.g);
}
