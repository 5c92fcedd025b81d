#pragma once
// The cache's states as types: where a request's state came from (source), what else served it
// (via), the tiers an operator names (tier), the request's route and how its run ended. The text
// forms are the wire's (x_cache.source and x_cache.via in responses, finish_reason, the ledger,
// the trace, the stats, the metrics, the clear route's `?tier=`) and must stay byte-identical;
// nothing inside compares them.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

#include <nlohmann/json.hpp>

namespace anchorage {

enum class request_kind { completion, chat };

// Which tier answered a request. response: the response cache (--response-cache-mb) answered an
// identical greedy request with an earlier answer's tokens; nothing was prefilled or decoded.
enum class cache_source : std::uint8_t { cold, resident, end, store, disk, checkpoint, spill, response };

// What served a request beyond its source: nothing, a guest's stash, the pinned head brought
// back, the parked session brought back, the held conversation continued by a compaction
// request, a summary the idle worker prewrote (docs/COMPACTION.md).
enum class cache_via : std::uint8_t { none, stash, pin, park, compaction, prewritten };

// How a request's run ended: its stop (an end token or a stop string), its token limit, the
// client gone, a failure after it was accepted. tool_calls is the chat wire's reading of stop
// when the turn made tool calls (chat_finish_reason); no run ends with it.
enum class run_finish : std::uint8_t { stop, length, tool_calls, cancelled, error };

// The tiers an operator can name (`POST /v1/cache/clear?tier=`), and the stats' tier objects.
enum class cache_tier : std::uint8_t { resident, store, disk, spill, response, suffix, all };

constexpr const char* to_string(cache_source s) {
  switch (s) {
    case cache_source::cold:
      return "cold";
    case cache_source::resident:
      return "resident";
    case cache_source::end:
      return "end";
    case cache_source::store:
      return "store";
    case cache_source::disk:
      return "disk";
    case cache_source::checkpoint:
      return "checkpoint";
    case cache_source::spill:
      return "spill";
    case cache_source::response:
      return "response";
  }
  return "cold";
}

// "" for none: the wire omits x_cache.via then.
constexpr const char* to_string(cache_via v) {
  switch (v) {
    case cache_via::none:
      return "";
    case cache_via::stash:
      return "stash";
    case cache_via::pin:
      return "pin";
    case cache_via::park:
      return "park";
    case cache_via::compaction:
      return "compaction";
    case cache_via::prewritten:
      return "prewritten";
  }
  return "";
}

constexpr const char* to_string(run_finish f) {
  switch (f) {
    case run_finish::stop:
      return "stop";
    case run_finish::length:
      return "length";
    case run_finish::tool_calls:
      return "tool_calls";
    case run_finish::cancelled:
      return "cancelled";
    case run_finish::error:
      return "error";
  }
  return "error";
}

constexpr const char* to_string(cache_tier t) {
  switch (t) {
    case cache_tier::resident:
      return "resident";
    case cache_tier::store:
      return "store";
    case cache_tier::disk:
      return "disk";
    case cache_tier::spill:
      return "spill";
    case cache_tier::response:
      return "response";
    case cache_tier::suffix:
      return "suffix";
    case cache_tier::all:
      return "all";
  }
  return "all";
}

// The route's short name, as the ledger, the metrics and the generation key spell it.
constexpr const char* to_string(request_kind k) { return k == request_kind::chat ? "chat" : "completions"; }

// The text forms back (the ledger file, the clear route); nullopt for any other text.
std::optional<cache_source> cache_source_from_string(std::string_view text);
std::optional<cache_tier> cache_tier_from_string(std::string_view text);
std::optional<request_kind> request_kind_from_string(std::string_view text);
std::optional<cache_via> cache_via_from_string(std::string_view text);
std::optional<run_finish> run_finish_from_string(std::string_view text);

// As JSON they are their text forms.
inline void to_json(nlohmann::json& j, cache_source s) { j = to_string(s); }
inline void to_json(nlohmann::json& j, cache_via v) { j = to_string(v); }
inline void to_json(nlohmann::json& j, cache_tier t) { j = to_string(t); }
inline void to_json(nlohmann::json& j, request_kind k) { j = to_string(k); }
inline void to_json(nlohmann::json& j, run_finish f) { j = to_string(f); }

// Printed as their text forms (test failures, logs).
inline std::ostream& operator<<(std::ostream& o, cache_source s) { return o << to_string(s); }
inline std::ostream& operator<<(std::ostream& o, cache_via v) { return o << '"' << to_string(v) << '"'; }
inline std::ostream& operator<<(std::ostream& o, run_finish f) { return o << to_string(f); }

namespace detail {
template <class E, std::size_t N>
std::optional<E> enum_from_string(std::string_view text, const E (&all)[N]) {
  for (E e : all)
    if (text == to_string(e)) return e;
  return std::nullopt;
}
}  // namespace detail

inline std::optional<cache_source> cache_source_from_string(std::string_view text) {
  static constexpr cache_source all[] = {
      cache_source::cold, cache_source::resident,   cache_source::end,   cache_source::store,
      cache_source::disk, cache_source::checkpoint, cache_source::spill, cache_source::response};
  return detail::enum_from_string(text, all);
}

inline std::optional<cache_tier> cache_tier_from_string(std::string_view text) {
  static constexpr cache_tier all[] = {cache_tier::resident, cache_tier::store,    cache_tier::disk,
                                       cache_tier::spill,    cache_tier::response, cache_tier::suffix,
                                       cache_tier::all};
  return detail::enum_from_string(text, all);
}

inline std::optional<request_kind> request_kind_from_string(std::string_view text) {
  static constexpr request_kind all[] = {request_kind::completion, request_kind::chat};
  return detail::enum_from_string(text, all);
}

inline std::optional<cache_via> cache_via_from_string(std::string_view text) {
  static constexpr cache_via all[] = {cache_via::none, cache_via::stash,      cache_via::pin,
                                      cache_via::park, cache_via::compaction, cache_via::prewritten};
  return detail::enum_from_string(text, all);
}

inline std::optional<run_finish> run_finish_from_string(std::string_view text) {
  static constexpr run_finish all[] = {run_finish::stop, run_finish::length, run_finish::tool_calls,
                                       run_finish::cancelled, run_finish::error};
  return detail::enum_from_string(text, all);
}

}  // namespace anchorage
