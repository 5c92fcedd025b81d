#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace anchorage {

// How a request's output is read and cut: the stop strings, the reasoning and tool-call parsing
// and the reasoning budget. The board's job and the engine's generation_job share it.
struct output_rules {
  std::vector<std::string> stop_strings;  // cut the content where one appears
  bool parse_reasoning = false;
  bool parse_tool_calls = false;
  // The request's tool definitions (with parse_tool_calls): the types of a call's parameters when
  // the model writes it in Qwen3.5's XML form; null: none.
  std::shared_ptr<const nlohmann::ordered_json> tools;
  bool starts_in_reasoning = false;  // the generation prompt opened the <think> block
  long reasoning_budget = -1;        // --reasoning-budget: thinking tokens before a hidden close; -1 none
};

}  // namespace anchorage
