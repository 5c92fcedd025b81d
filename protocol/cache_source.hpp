#pragma once
// The cache's states as types: where a request's state came from (source), what else served it
// (via), the tiers an operator names (tier), and the request's route. The text forms are the
// wire's (x_cache.source and x_cache.via in responses, the ledger, the stats, the metrics, the
// clear route's `?tier=`) and must stay byte-identical; nothing inside compares them.
#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/openai_types.hpp"

namespace anchorage {

// Which tier answered a request. response: the response cache (--response-cache-mb) answered an
// identical greedy request with an earlier answer's tokens; nothing was prefilled or decoded.
enum class cache_source : std::uint8_t { cold, resident, end, store, disk, checkpoint, spill, response };

// What served a request beyond its source: nothing, a guest's stash, a side slot, the pinned
// head brought back, the parked session brought back.
enum class cache_via : std::uint8_t { none, stash, pin, park };

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
  }
  return "";
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

// As JSON they are their text forms.
inline void to_json(nlohmann::json& j, cache_source s) { j = to_string(s); }
inline void to_json(nlohmann::json& j, cache_via v) { j = to_string(v); }
inline void to_json(nlohmann::json& j, cache_tier t) { j = to_string(t); }
inline void to_json(nlohmann::json& j, request_kind k) { j = to_string(k); }

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

}  // namespace anchorage
