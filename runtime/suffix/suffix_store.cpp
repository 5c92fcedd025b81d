#include "runtime/suffix/suffix_store.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "runtime/io/file_env.hpp"
#include "runtime/suffix/suffix_log_format.hpp"

namespace anchorage {

suffix_store::suffix_store(suffix_store_options options)
    : options_(std::move(options)), dedupe_(options_.dedupe_window) {
  open_log();
}

std::string suffix_store::path() const {
  return join_path(options_.dir, suffix_log::file_name(options_.tokenizer_digest));
}

void suffix_store::refuse(std::string why) {
  state_ = state::refused;
  status_ = status::failure(std::move(why));
  log_ = suffix_file::log_handle();
  ids_.clear();
  seg_starts_.clear();
  index_ = std::make_shared<const suffix_index>();
  dedupe_.clear();
}

void suffix_store::open_log() {
  if (options_.dir.empty()) return refuse("suffix store: no directory given");
  auto dir = suffix_file::prepare_directory(options_.dir);
  if (!dir) return refuse(dir.error().error());
  auto log = suffix_file::log_handle::open(path(), suffix_log::encode_header(options_.tokenizer_digest));
  if (!log) return refuse(log.error().error());
  log_ = std::move(*log);
  auto bytes = log_.read_all();
  if (!bytes) return refuse(bytes.error().error());
  suffix_log::parsed_log parsed = suffix_log::parse(bytes->data(), bytes->size(), options_.tokenizer_digest);
  if (parsed.header != suffix_log::parsed_log::header_state::ok)
    return refuse("suffix store " + path() + ": " + suffix_log::describe(parsed.header) + "; not used");
  if (parsed.torn) {
    stats_.torn_tails_cut = 1;
    stats_.torn_bytes_cut = log_.size() - parsed.whole_bytes;
    if (status s = log_.truncate(parsed.whole_bytes); !s) return refuse(s.error());
  }
  ids_ = std::move(parsed.ids);
  seg_starts_ = std::move(parsed.seg_starts);

  // The last segments stand for the last requests, so that a client resending its conversation
  // after a restart is not written again (a growing conversation is one segment).
  const std::size_t first =
      seg_starts_.size() > options_.dedupe_window ? seg_starts_.size() - options_.dedupe_window : 0;
  for (std::size_t s = first; s < seg_starts_.size(); ++s) {
    const std::size_t end = s + 1 < seg_starts_.size() ? seg_starts_[s + 1] : ids_.size();
    dedupe_.remember({ids_.begin() + static_cast<std::ptrdiff_t>(seg_starts_[s]),
                      ids_.begin() + static_cast<std::ptrdiff_t>(end)},
                     s + 1 == seg_starts_.size());
  }
  rebuild();
}

suffix_add_report suffix_store::add(const std::vector<token_id>& tokens) {
  suffix_add_report report;
  if (!is_open()) return report;
  ++stats_.adds;
  // The dedupe compares whole requests, image rows included (equal rows: the same image).
  const suffix_admission admission = dedupe_.admit(tokens);
  report.skipped = admission.skip;
  stats_.ids_skipped += admission.skip;
  // The log's last id is the request's last only when that is a text id.
  const bool ends_in_text = !tokens.empty() && tokens.back() >= 0;
  if (admission.skip == tokens.size()) {
    dedupe_.remember(tokens, admission.continues);
    return report;
  }
  auto begin = tokens.begin() + static_cast<std::ptrdiff_t>(admission.skip);
  bool continues = admission.continues && !ids_.empty();

  // One add larger than half the cap keeps only its newest ids.
  const std::uint64_t room =
      options_.cap_bytes > suffix_log::header_bytes ? options_.cap_bytes - suffix_log::header_bytes : 0;
  if (room / 2 < suffix_log::record_bytes(1)) return report;
  const std::uint64_t most = (room / 2 - suffix_log::record_overhead) / 4;
  if (static_cast<std::uint64_t>(tokens.end() - begin) > most) {
    begin = tokens.end() - static_cast<std::ptrdiff_t>(most);
    continues = false;
  }
  // The runs of text ids, each a record of its own segment (the first may continue the log's
  // last): every run of negative ids (an image's rows) is left out and cuts the segment there.
  std::vector<std::pair<std::size_t, std::size_t>> runs;  // [first, last) into tokens
  for (auto it = begin; it != tokens.end();) {
    if (*it < 0) {
      ++it;
      continue;
    }
    const auto end = std::find_if(it, tokens.end(), [](token_id t) { return t < 0; });
    runs.emplace_back(static_cast<std::size_t>(it - tokens.begin()),
                      static_cast<std::size_t>(end - tokens.begin()));
    it = end;
  }
  if (runs.empty()) {  // nothing but image rows: the log's tail is still what it was
    dedupe_.remember(tokens, false);
    return report;
  }
  if (runs.front().first != static_cast<std::size_t>(begin - tokens.begin())) continues = false;
  std::size_t count = 0;
  std::uint64_t bytes = 0;
  for (const auto& [a, b] : runs) {
    count += b - a;
    bytes += suffix_log::record_bytes(b - a);
  }
  // Records of many short runs still keep to half the cap: the oldest runs go first.
  std::size_t dropped = 0;
  while (runs.size() - dropped > 1 && bytes > room / 2) {
    const std::size_t n = runs[dropped].second - runs[dropped].first;
    count -= n;
    bytes -= suffix_log::record_bytes(n);
    ++dropped;
    continues = false;
  }
  runs.erase(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(dropped));
  while (!ids_.empty() && log_.size() + bytes > options_.cap_bytes) {
    if (status s = forget_oldest_half(); !s) {
      ++stats_.write_failures;
      return report;
    }
    report.forgot = true;
  }
  if (ids_.empty()) continues = false;

  std::vector<unsigned char> record;
  for (std::size_t r = 0; r < runs.size(); ++r)
    suffix_log::encode_record(record, tokens.data() + runs[r].first, runs[r].second - runs[r].first,
                              r == 0 && continues);
  if (status s = log_.append(record, options_.sync_appends); !s) {
    ++stats_.write_failures;
    return report;
  }
  for (std::size_t r = 0; r < runs.size(); ++r) {
    if (r > 0 || !continues) seg_starts_.push_back(ids_.size());
    ids_.insert(ids_.end(), tokens.begin() + static_cast<std::ptrdiff_t>(runs[r].first),
                tokens.begin() + static_cast<std::ptrdiff_t>(runs[r].second));
  }
  report.appended = count;
  report.continued = continues;
  stats_.ids_appended += count;
  dedupe_.remember(tokens, ends_in_text);
  maybe_rebuild();
  return report;
}

// Keeps the newer half of the ids (the segment cut in two keeps its newer part), rewritten as
// one record per segment through an atomic replace, and rebuilds the index. On a failed write
// the log and the store stay as they were.
status suffix_store::forget_oldest_half() {
  const std::size_t cut = (ids_.size() + 1) / 2;
  std::vector<std::size_t> starts{0};
  for (std::size_t s : seg_starts_)
    if (s > cut) starts.push_back(s - cut);
  const std::size_t kept = ids_.size() - cut;
  if (kept == 0) starts.clear();

  std::vector<unsigned char> bytes = suffix_log::encode_header(options_.tokenizer_digest);
  for (std::size_t s = 0; s < starts.size(); ++s) {
    const std::size_t end = s + 1 < starts.size() ? starts[s + 1] : kept;
    suffix_log::encode_record(bytes, ids_.data() + cut + starts[s], end - starts[s], false);
  }
  if (status s = log_.replace(bytes); !s) return s;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(cut));
  seg_starts_ = std::move(starts);
  ++stats_.forgets;
  rebuild();
  return status::ok();
}

void suffix_store::maybe_rebuild() {
  const std::size_t unindexed = ids_.size() - index_->end();
  const auto fraction =
      static_cast<std::size_t>(options_.rebuild_fraction * static_cast<double>(index_->end()));
  if (unindexed >= std::max(options_.rebuild_min_ids, fraction)) rebuild();
}

void suffix_store::rebuild() {
  const auto t0 = std::chrono::steady_clock::now();
  index_ = std::make_shared<const suffix_index>(suffix_index::build(ids_.data(), ids_.size(), seg_starts_));
  stats_.last_rebuild_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++stats_.rebuilds;
}

status suffix_store::clear() {
  if (!is_open()) return status::failure("suffix store: refused, nothing to clear");
  if (status s = log_.replace(suffix_log::encode_header(options_.tokenizer_digest)); !s) {
    ++stats_.write_failures;
    return s;
  }
  ids_.clear();
  seg_starts_.clear();
  dedupe_.clear();
  rebuild();
  return status::ok();
}

suffix_match suffix_store::longest_match(const std::vector<token_id>& recent, std::size_t min_len) {
  ++stats_.lookups;
  if (!is_open()) return {};
  suffix_match m = anchorage::longest_match(corpus(), recent.data(), recent.size(), min_len, options_.query);
  if (m.length > 0) ++stats_.hits;
  return m;
}

std::vector<token_id> suffix_store::propose(const std::vector<token_id>& recent, std::size_t max_draft) {
  ++stats_.lookups;
  if (!is_open()) return {};
  std::vector<token_id> draft =
      anchorage::propose(corpus(), recent.data(), recent.size(), max_draft, options_.query);
  if (!draft.empty()) ++stats_.hits;
  return draft;
}

suffix_store_stats suffix_store::stats() const {
  suffix_store_stats s = stats_;
  s.bytes = log_.size();
  s.ids = ids_.size();
  s.segments = seg_starts_.size();
  s.indexed_ids = index_->end();
  return s;
}

}  // namespace anchorage
