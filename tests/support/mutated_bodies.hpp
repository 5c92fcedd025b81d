#pragma once
// A fuzzed corpus from one request a client sent: every leaf of the body replaced by each value of
// a small set of wrong-typed ones and removed, every element of `items` (a JSON pointer to an
// array: messages, input) replaced likewise, and the body's text cut at `cuts` evenly spaced
// lengths. What a route must answer for each: a 200 or a 4xx in its own error shape, never a 5xx.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace anchorage::testing {

inline std::vector<std::string> mutated_bodies(const nlohmann::json& base, const std::string& items,
                                               std::size_t cuts = 80) {
  using nlohmann::json;
  const std::vector<json> values = {
      nullptr, 0, -1, 3.5, "x", "", true, json::array(), json::object(), json::array({1, "a"})};
  std::vector<std::string> bodies;
  const json flat = base.flatten();  // held: items() of a temporary would dangle
  for (const auto& [pointer, leaf] : flat.items()) {
    const json::json_pointer at(pointer);
    for (const json& v : values) {
      json m = base;
      m[at] = v;
      bodies.push_back(m.dump());
    }
    json removed = base;
    json& parent = removed[at.parent_pointer()];
    if (parent.is_array())
      parent.erase(static_cast<std::size_t>(std::stoul(at.back())));
    else
      parent.erase(at.back());
    bodies.push_back(removed.dump());
  }
  const json::json_pointer list(items);
  for (std::size_t i = 0; i < base.at(list).size(); ++i)
    for (const json& v : values) {
      json m = base;
      m[list][i] = v;
      bodies.push_back(m.dump());
    }
  const std::string text = base.dump();
  for (std::size_t cut = 0; cut < text.size(); cut += text.size() / cuts)
    bodies.push_back(text.substr(0, cut));
  return bodies;
}

}  // namespace anchorage::testing
