// The disk tier's file formats (docs/DISK_FORMAT.md): chunk and anchor files restore a cold
// prefill's bits in a fresh engine; format 1 anchors are read as gdn.S and gdn.conv.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "tests/support/disk_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A format 1 anchor as the 27B's older writer made it: two unnamed sections, S then conv.
bytes format_1_anchor(const engine& e, const std::vector<token_id>& prompt) {
  const state_layout& l = e.layout();
  const std::size_t g = static_cast<std::size_t>(l.grid);
  const std::size_t s = *l.section_index("gdn.S"), c = *l.section_index("gdn.conv");
  const auto hashes = chunk_hashes(prompt, file_lines * g, g);
  const std::size_t table = df::anchor_fixed_bytes + 8 * file_lines;
  const std::size_t hb = table + 2 * df::entry_v1_bytes;
  bytes f(hb + l.sections[s].bytes + l.sections[c].bytes, 0);
  put64(f, df::anchor_offset::magic, df::anchor_magic);
  put32(f, df::anchor_offset::version, df::anchor_version_1);
  put32(f, df::anchor_offset::header_bytes, static_cast<std::uint32_t>(hb));
  put32(f, df::anchor_offset::grid, static_cast<std::uint32_t>(g));
  put64(f, df::anchor_offset::fingerprint, l.fingerprint);
  put64(f, df::anchor_offset::file_bytes, f.size());
  put64(f, df::anchor_offset::line, file_lines * g);
  put32(f, df::anchor_offset::chunk_count, static_cast<std::uint32_t>(file_lines));
  put32(f, df::anchor_offset::section_count, 2);
  for (std::size_t i = 0; i < file_lines; ++i) put64(f, df::anchor_fixed_bytes + 8 * i, hashes[i]);
  std::size_t at = hb;
  for (std::size_t k : {s, c}) {
    e.cache_state().copy_section_out(k, f.data() + at);
    const std::size_t entry = table + (k == s ? 0 : df::entry_v1_bytes);
    put64(f, entry, l.sections[k].bytes);
    put32(f, entry + 8, crc32(f.data() + at, l.sections[k].bytes));
    at += l.sections[k].bytes;
  }
  reseal_header(f, hb);
  return f;
}

}  // namespace

TEST_CASE("crc32 is IEEE's: the check value and a bitwise reference", "[format]") {
  CHECK(crc32("123456789", 9) == 0xCBF43926u);
  CHECK(crc32("", 0) == 0u);
  CHECK(crc32_extend(crc32("12345", 5), "6789", 4) == 0xCBF43926u);
  std::mt19937 rng(5);
  bytes data(300);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t off = 0; off < 8; ++off)
    for (std::size_t n = 0; n + off <= data.size(); n += 13) {
      std::uint32_t c = 0xFFFFFFFFu;  // one bit at a time, the definition
      for (std::size_t i = off; i < off + n; ++i) {
        c ^= data[i];
        for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
      }
      REQUIRE(crc32(data.data() + off, n) == ~c);
    }
}

TEST_CASE("chunks and an anchor restored from disk bytes equal a cold prefill", "[format][exact]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  REQUIRE(g == 32);
  const std::size_t n = 5 * g + 13;
  const auto prompt = test_tokens(n);

  auto writer = make_engine(c);
  writer->prefill(slice(prompt, 0, file_lines * g));
  const disk_files f = write_files(*writer, prompt);
  const state_layout layout = writer->layout();
  writer.reset();
  const auto hashes = chunk_hashes(prompt, file_lines * g, g);
  for (std::size_t i = 0; i < file_lines; ++i) {
    CHECK(f.chunks[i].size() == chunk_file_bytes(layout));
    const auto h = read_chunk_header(f.chunks[i].data(), f.chunks[i].size());
    REQUIRE(h.ok());
    CHECK(h.value.line == (i + 1) * g);
    CHECK(h.value.prefix_hash == hashes[i]);
    CHECK(h.value.parent_hash == prefix_hash(prompt.data(), i * g));
  }
  const auto ah = read_anchor_header(f.anchor.data(), f.anchor.size());
  REQUIRE(ah.ok());
  CHECK(ah.value.chunk_hashes == hashes);
  CHECK(ah.value.version == df::version);
  CHECK(f.anchor.size() == anchor_file_bytes(layout, file_lines * g));

  auto resumed = make_engine(c);
  const auto r = restore(*resumed, f, prompt, hashes);
  INFO(r.second);
  REQUIRE(r.first == df::fault::none);
  REQUIRE(resumed->length() == file_lines * g);
  resumed->prefill(slice(prompt, file_lines * g, n));

  auto cold = make_engine(c);
  cold->prefill(prompt);
  CHECK(same_bytes(resumed->last_logits(), cold->last_logits()));
  if (c.mtp) CHECK(same_bytes(resumed->last_draft_logits(), cold->last_draft_logits()));
  require_same_state(take_snapshot(resumed->cache_state()), take_snapshot(cold->cache_state()),
                     cold->layout());
}
TEST_CASE("a format 1 anchor is read as gdn.S and gdn.conv", "[format][exact]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid), n = 4 * g + 9;
  const auto prompt = test_tokens(n, 21);
  auto writer = make_engine(c);
  writer->prefill(slice(prompt, 0, file_lines * g));
  disk_files f = write_files(*writer, prompt);
  f.anchor = format_1_anchor(*writer, prompt);
  const auto hashes = chunk_hashes(prompt, file_lines * g, g);

  const auto h = read_anchor_header(f.anchor.data(), f.anchor.size());
  REQUIRE(h.ok());
  CHECK(h.value.version == df::anchor_version_1);
  REQUIRE(h.value.sections.size() == 2);
  CHECK(h.value.sections[0].name == "gdn.S");
  CHECK(h.value.sections[1].name == "gdn.conv");

  auto resumed = make_engine(c);
  const auto r = restore(*resumed, f, prompt, hashes);
  INFO(r.second);
  REQUIRE(r.first == df::fault::none);
  resumed->prefill(slice(prompt, file_lines * g, n));
  auto cold = make_engine(c);
  cold->prefill(prompt);
  CHECK(same_bytes(resumed->last_logits(), cold->last_logits()));
  require_same_state(take_snapshot(resumed->cache_state()), take_snapshot(cold->cache_state()),
                     cold->layout());

  SECTION("a flipped bit in either unnamed section is refused") {
    const std::size_t hb = df::anchor_fixed_bytes + 8 * file_lines + 2 * df::entry_v1_bytes;
    const std::size_t s_bytes = writer->layout().sections[*writer->layout().section_index("gdn.S")].bytes;
    for (const auto& [at, name] :
         {std::pair<std::size_t, std::string>{hb + 3, "gdn.S"}, {hb + s_bytes + 1, "gdn.conv"}}) {
      bytes bad = f.anchor;
      bad[at] ^= 0x08;
      const auto d = decode_anchor(bad, writer->layout(), hashes);
      CHECK(d.fault == df::fault::bad_crc);
      CHECK_THAT(d.error, Catch::Contains("section " + name));
    }
  }
  SECTION("an engine with a third section cannot take a format 1 anchor") {
    const model_config m = test_config("tiny-mtp");
    auto mtp = make_engine(m);
    mtp->prefill(slice(prompt, 0, file_lines * g));
    const auto d = decode_anchor(format_1_anchor(*mtp, prompt), mtp->layout(), hashes);
    CHECK(d.fault == df::fault::layout_mismatch);
    CHECK_THAT(d.error, Catch::Contains("2 sections"));
  }
}

TEST_CASE("a tail chunk and an anchor off the grid restore the writer's state bit for bit",
          "[format][exact]") {
  // The files right after an image (version 4): grid chunks, the tail chunk holding the rows from
  // the grid line below to the line, the anchor there. Text rows here: an off-grid state is then
  // the writer's, not a cold prefill's (the engine ends a chunk at an image's end only), so the
  // check is against the writer continuing.
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const std::size_t p = 2 * g + 13;
  const auto prompt = test_tokens(p + 9);

  auto writer = make_engine(c);
  writer->prefill(slice(prompt, 0, p));
  const state_layout layout = writer->layout();
  std::vector<bytes> chunks;
  for (std::size_t b : {g, 2 * g, p}) chunks.push_back(encode_chunk(writer->cache_state(), b, prompt));
  const auto chain = chunk_hashes(prompt, p, g);
  REQUIRE(chain.size() == df::chain_length(p, g));
  REQUIRE(chain.size() == 3);
  CHECK(chain.back() == prefix_hash(prompt.data(), p));
  const bytes anchor = encode_anchor(writer->cache_state(), p, chain);

  const auto tail = read_chunk_header(chunks[2].data(), chunks[2].size());
  REQUIRE(tail.ok());
  CHECK(tail.value.version == df::off_grid_version);
  CHECK(tail.value.line == p);
  CHECK(tail.value.parent_hash == chain[1]);
  CHECK(chunks[2].size() == chunk_file_bytes(layout, p));
  CHECK(chunks[2].size() < chunk_file_bytes(layout));
  const auto grid_chunk = read_chunk_header(chunks[1].data(), chunks[1].size());
  REQUIRE(grid_chunk.ok());
  CHECK(grid_chunk.value.version == df::version);
  const auto ah = read_anchor_header(anchor.data(), anchor.size());
  REQUIRE(ah.ok());
  CHECK(ah.value.version == df::off_grid_version);
  CHECK(ah.value.line == p);
  CHECK(ah.value.chunk_hashes == chain);
  CHECK(anchor.size() == anchor_file_bytes(layout, p));

  // Verified against the prompt, applied to a fresh engine: the writer's state, bit for bit.
  auto resumed = make_engine(c);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const std::size_t line = std::min((i + 1) * g, p);
    const auto v = decode_chunk(chunks[i], layout, prompt, line);
    INFO("chunk " << i << ": " << v.error);
    REQUIRE(v.ok());
    CHECK(v.value.row_count == df::chunk_rows(line, g));
    apply_chunk(resumed->cache_state(), v.value);
  }
  const auto a = decode_anchor(anchor, layout, chain);
  INFO(a.error);
  REQUIRE(a.ok());
  apply_anchor(resumed->cache_state(), a.value, p);
  REQUIRE(resumed->length() == p);
  require_same_state(take_snapshot(resumed->cache_state()), take_snapshot(writer->cache_state()), layout);
  resumed->prefill(slice(prompt, p, prompt.size()));
  writer->prefill(slice(prompt, p, prompt.size()));
  CHECK(same_bytes(resumed->last_logits(), writer->last_logits()));

  // A prompt that differs in the tail's rows is refused, and so is a tail relabelled version 2.
  auto other = prompt;
  other[p - 1] ^= 1;
  CHECK(decode_chunk(chunks[2], layout, other, p).fault == df::fault::wrong_prefix);
  CHECK(decode_anchor(anchor, layout, chunk_hashes(other, p, g)).fault == df::fault::wrong_chunks);
  bytes relabelled = chunks[2];
  put32(relabelled, df::chunk_offset::version, df::version);
  reseal_header(relabelled, tail.value.header_bytes);
  CHECK(read_chunk_header(relabelled.data(), relabelled.size()).fault == df::fault::bad_header);
  bytes grid_as_4 = chunks[1];
  put32(grid_as_4, df::chunk_offset::version, df::off_grid_version);
  reseal_header(grid_as_4, grid_chunk.value.header_bytes);
  CHECK(read_chunk_header(grid_as_4.data(), grid_as_4.size()).fault == df::fault::bad_header);
  bytes anchor_as_2 = anchor;
  put32(anchor_as_2, df::anchor_offset::version, df::version);
  reseal_header(anchor_as_2, ah.value.header_bytes);
  CHECK(read_anchor_header(anchor_as_2.data(), anchor_as_2.size()).fault == df::fault::bad_header);
}
