#pragma once
// A probe: a stats struct that lists its fields once, in a static fields(), and gets from that
// list its merge over the slots (probe::merge_into), its JSON (to_json below: the wire's names)
// and its /metrics series (probe::each_series). A field is one of:
//   probe::sum(name, &T::m)   a count or a size the slots add up;
//   probe::keep(name, &T::m)  a limit, a position, a rate or a name that is the server's, not a
//                             slot's: a merge leaves the first one's;
//   probe::inlined(&T::m)     a member that is itself a probe, its fields written into this
//                             one's object (a tier's wire object made of two components' probes);
//   probe::if_set(name, &T::m) an optional the server's, not a slot's (kept as keep is), written
//                             only when it holds a value (a reason that exists only sometimes).
// A field whose value is a probe is written as a nested object and merged field by field; an
// optional one is written as null when empty. Nothing here knows a tier or a series by name.
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

namespace anchorage {

// The /metrics series a cache tier's field feeds (anchorage_cache_*{tier="..."}; the names and
// help texts are runtime/server/metrics.cpp's).
enum class tier_series {
  none,
  entries,
  bytes,
  limit_bytes,
  hits,
  misses,
  evictions,
  stores,
  tokens_saved,
  restore_failures,
  write_failures,
  bytes_written,
  bytes_read,
};

namespace probe {

enum class merge { sum, keep };

template <class T, class M>
struct field {
  const char* name;
  M T::*member;
  merge how;
  tier_series series;
};

template <class T, class M>
struct inline_field {
  M T::*member;
};

template <class P, class = void>
struct is_probe : std::false_type {};
template <class P>
struct is_probe<P, std::void_t<decltype(P::fields())>> : std::true_type {};

template <class T, class M>
constexpr field<T, M> sum(const char* name, M T::*member, tier_series series = tier_series::none) {
  static_assert(is_probe<M>::value || (std::is_arithmetic_v<M> && !std::is_same_v<M, bool>),
                "probe::sum on a field that does not add up: use probe::keep");
  return {name, member, merge::sum, series};
}

template <class T, class M>
constexpr field<T, M> keep(const char* name, M T::*member, tier_series series = tier_series::none) {
  return {name, member, merge::keep, series};
}

template <class T, class M>
constexpr inline_field<T, M> inlined(M T::*member) {
  return {member};
}

template <class T, class M>
struct set_field {
  const char* name;
  std::optional<M> T::*member;
};

template <class T, class M>
constexpr set_field<T, M> if_set(const char* name, std::optional<M> T::*member) {
  return {name, member};
}

template <class D>
struct is_inline : std::false_type {};
template <class T, class M>
struct is_inline<inline_field<T, M>> : std::true_type {};

template <class D>
struct is_set : std::false_type {};
template <class T, class M>
struct is_set<set_field<T, M>> : std::true_type {};

// Calls f(d) for each of P's field descriptions, in the order P lists them.
template <class P, class F>
void each_field(F&& f) {
  std::apply([&](const auto&... d) { (f(d), ...); }, P::fields());
}

template <class P>
void merge_into(P& into, const P& from);

namespace detail {

template <class M>
void merge_value(M& into, const M& from, merge how) {
  if (how == merge::keep) return;
  if constexpr (is_probe<M>::value)
    merge_into(into, from);
  else if constexpr (std::is_arithmetic_v<M> && !std::is_same_v<M, bool>)
    into += from;
}

template <class M>
struct is_optional : std::false_type {};
template <class M>
struct is_optional<std::optional<M>> : std::true_type {};

template <class M>
nlohmann::json json_value(const M& v);

template <class P>
void write_fields(nlohmann::json& j, const P& p) {
  each_field<P>([&](const auto& d) {
    using D = std::decay_t<decltype(d)>;
    if constexpr (is_inline<D>::value) {
      write_fields(j, p.*(d.member));
    } else if constexpr (is_set<D>::value) {
      if (const auto& v = p.*(d.member)) j[d.name] = json_value(*v);
    } else {
      j[d.name] = json_value(p.*(d.member));
    }
  });
}

template <class M>
nlohmann::json json_value(const M& v) {
  if constexpr (is_optional<M>::value) {
    return v ? json_value(*v) : nlohmann::json();
  } else if constexpr (is_probe<M>::value) {
    nlohmann::json j = nlohmann::json::object();
    write_fields(j, v);
    return j;
  } else {
    return nlohmann::json(v);
  }
}

}  // namespace detail

// Adds `from` into `into`, field by field as the list says (the slots' probes into the board's).
template <class P>
void merge_into(P& into, const P& from) {
  each_field<P>([&](const auto& d) {
    using D = std::decay_t<decltype(d)>;
    if constexpr (is_inline<D>::value)
      merge_into(into.*(d.member), from.*(d.member));
    else if constexpr (!is_set<D>::value)  // an if_set field is kept
      detail::merge_value(into.*(d.member), from.*(d.member), d.how);
  });
}

// Calls f(series, value as JSON) for each of p's fields that feeds a tier series, inlined ones
// included.
template <class P, class F>
void each_series(const P& p, F&& f) {
  each_field<P>([&](const auto& d) {
    using D = std::decay_t<decltype(d)>;
    if constexpr (is_inline<D>::value) {
      each_series(p.*(d.member), f);
    } else if constexpr (!is_set<D>::value) {  // an if_set field feeds no series
      if (d.series != tier_series::none) f(d.series, detail::json_value(p.*(d.member)));
    }
  });
}

}  // namespace probe

// Every probe's JSON: one member per field, under the field's name.
template <class P, std::enable_if_t<probe::is_probe<P>::value, int> = 0>
void to_json(nlohmann::json& j, const P& p) {
  j = nlohmann::json::object();
  probe::detail::write_fields(j, p);
}

}  // namespace anchorage
