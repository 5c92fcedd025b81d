// The suffix store's log (runtime/suffix/suffix_log_format.hpp) and the suffix array built over
// what it holds (suffix_array.hpp). Any bytes parse without failing; what parsed is whole records
// inside the bytes; the ids re-encoded segment by segment parse back to the same ids and segments;
// the suffix array of the ids is a permutation in lexicographic order.
//
// Input: one byte of switches, then the log. Switch bit 0 reseals the header's crc and every
// record's (walking the counts as written), so mutations reach the records past their checksums.
#include <algorithm>
#include <cstring>
#include <map>

#include "fuzz/fuzz_support.hpp"
#include "runtime/core/crc32.hpp"
#include "runtime/core/little_endian.hpp"
#include "runtime/suffix/suffix_array.hpp"
#include "runtime/suffix/suffix_log_format.hpp"

using namespace anchorage;
namespace sl = anchorage::suffix_log;

namespace {

constexpr std::uint64_t digest = 0x5eed5eed5eed5eedULL;

void reseal(std::vector<unsigned char>& b) {
  if (b.size() < sl::header_bytes) return;
  little_endian::put_u32(b, 28, crc32(b.data(), 28));
  std::size_t at = sl::header_bytes;
  while (b.size() - at >= sl::record_overhead) {
    const std::uint64_t count = little_endian::get_u32(b.data() + at);
    if (count == 0 || (b.size() - at - sl::record_overhead) / 4 < count) break;
    const std::size_t body = 8 + 4 * count;
    little_endian::put_u32(b, at + body, crc32(b.data() + at, body));
    at += body + 4;
  }
}

void check_suffix_array(const std::vector<token_id>& ids) {
  if (ids.empty() || ids.size() > 4096) return;
  std::map<token_id, std::int32_t> rank;
  for (token_id id : ids) rank[id] = 0;
  std::int32_t r = 0;
  for (auto& [id, k] : rank) k = ++r;
  std::vector<std::int32_t> text;
  for (token_id id : ids) text.push_back(rank[id]);
  text.push_back(0);
  const auto sa = build_suffix_array(text, r + 1);
  fuzz::check(sa.size() == text.size(), "one suffix per position");
  std::vector<bool> seen(text.size(), false);
  for (std::int32_t p : sa) {
    fuzz::check(p >= 0 && static_cast<std::size_t>(p) < text.size() && !seen[static_cast<std::size_t>(p)],
                "the suffix array is a permutation");
    seen[static_cast<std::size_t>(p)] = true;
  }
  for (std::size_t i = 1; i < sa.size(); ++i)
    fuzz::check(
        std::lexicographical_compare(text.begin() + sa[i - 1], text.end(), text.begin() + sa[i], text.end()),
        "the suffixes are in order");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::vector<unsigned char> log(data + 1, data + size);
  if (data[0] & 1) reseal(log);
  const sl::parsed_log p = sl::parse(log.data(), log.size(), digest);
  fuzz::check(p.whole_bytes <= log.size(), "the whole records lie inside the bytes");
  fuzz::check(p.torn == (p.header == sl::parsed_log::header_state::ok && p.whole_bytes < log.size()),
              "torn means bytes after the last whole record");
  if (p.header != sl::parsed_log::header_state::ok) {
    fuzz::check(p.ids.empty() && p.records == 0, "a bad header reads nothing");
    return 0;
  }
  fuzz::check(p.ids.empty() == p.seg_starts.empty(), "ids come in segments");
  for (std::size_t i = 0; i < p.seg_starts.size(); ++i)
    fuzz::check(p.seg_starts[i] < p.ids.size() && (i == 0 || p.seg_starts[i - 1] < p.seg_starts[i]),
                "segments start in order inside the ids");

  std::vector<unsigned char> again = sl::encode_header(digest);
  for (std::size_t i = 0; i < p.seg_starts.size(); ++i) {
    const std::size_t from = p.seg_starts[i];
    const std::size_t to = i + 1 < p.seg_starts.size() ? p.seg_starts[i + 1] : p.ids.size();
    sl::encode_record(again, p.ids.data() + from, to - from, false);
  }
  const sl::parsed_log q = sl::parse(again.data(), again.size(), digest);
  fuzz::check(q.header == sl::parsed_log::header_state::ok && !q.torn, "a log re-encoded parses whole");
  fuzz::check(q.ids == p.ids && q.seg_starts == p.seg_starts, "re-encoded segments parse back the same");
  check_suffix_array(p.ids);
  return 0;
}
