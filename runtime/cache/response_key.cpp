#include "runtime/cache/response_key.hpp"

#include <xxhash.h>

namespace anchorage {
namespace {

struct digest_builder {
  XXH3_state_t* st = XXH3_createState();
  digest_builder() { XXH3_64bits_reset(st); }
  ~digest_builder() { XXH3_freeState(st); }
  digest_builder(const digest_builder&) = delete;
  digest_builder& operator=(const digest_builder&) = delete;
  template <class T>
  void pod(const T& v) {
    XXH3_64bits_update(st, &v, sizeof v);
  }
  void text(const std::string& s) {
    pod(static_cast<std::uint64_t>(s.size()));
    XXH3_64bits_update(st, s.data(), s.size());
  }
  template <class T>
  void ids(const std::vector<T>& v) {
    pod(static_cast<std::uint64_t>(v.size()));
    if (!v.empty()) XXH3_64bits_update(st, v.data(), v.size() * sizeof(T));
  }
};

}  // namespace

bool response_key::operator==(const response_key& o) const {
  return fingerprint == o.fingerprint && route == o.route && max_tokens == o.max_tokens &&
         seed_explicit == o.seed_explicit && seed == o.seed && top_p == o.top_p &&
         parse_reasoning == o.parse_reasoning && parse_tool_calls == o.parse_tool_calls &&
         starts_in_reasoning == o.starts_in_reasoning && reasoning_budget == o.reasoning_budget &&
         prompt == o.prompt && stop_tokens == o.stop_tokens && stop_strings == o.stop_strings &&
         tools == o.tools && tool_choice == o.tool_choice && response_format == o.response_format &&
         logit_bias == o.logit_bias;
}

std::size_t response_key::bytes() const {
  std::size_t n = sizeof(response_key) + prompt.size() * sizeof(token_id) +
                  stop_tokens.size() * sizeof(token_id) + logit_bias.size() * sizeof(logit_bias[0]) +
                  tools.size() + tool_choice.size() + response_format.size();
  for (const auto& s : stop_strings) n += sizeof(std::string) + s.size();
  return n;
}

std::optional<response_key> response_key_of(const board_job& j, std::uint64_t fingerprint) {
  const client_request* c = j.client();
  if (!c || !c->greedy || j.sampling.temperature != 0 || c->compaction) return std::nullopt;
  response_key k;
  k.fingerprint = fingerprint;
  k.route = j.route;
  k.prompt.assign(j.prompt.begin(), j.prompt.end());
  k.max_tokens = j.sampling.max_tokens;
  k.stop_tokens.assign(j.sampling.stop_tokens.begin(), j.sampling.stop_tokens.end());
  k.stop_strings = j.rules.stop_strings;
  if (j.rules.tools) k.tools = j.rules.tools->dump();
  k.tool_choice = c->tool_choice;
  k.response_format = c->response_format;
  k.logit_bias.assign(j.sampling.logit_bias.begin(), j.sampling.logit_bias.end());
  k.seed_explicit = j.sampling.seed_explicit;
  k.seed = j.sampling.seed_explicit ? j.sampling.seed : 0;
  k.top_p = j.sampling.top_p;
  k.parse_reasoning = j.rules.parse_reasoning;
  k.parse_tool_calls = j.rules.parse_tool_calls;
  k.starts_in_reasoning = j.rules.starts_in_reasoning;
  k.reasoning_budget = j.rules.reasoning_budget;
  return k;
}

std::uint64_t response_key_digest(const response_key& k) {
  digest_builder d;
  d.pod(k.fingerprint);
  d.pod(static_cast<int>(k.route));
  d.ids(k.prompt);
  d.pod(k.max_tokens);
  d.ids(k.stop_tokens);
  d.pod(static_cast<std::uint64_t>(k.stop_strings.size()));
  for (const auto& s : k.stop_strings) d.text(s);
  d.text(k.tools);
  d.text(k.tool_choice);
  d.text(k.response_format);
  d.pod(static_cast<std::uint64_t>(k.logit_bias.size()));
  for (const auto& [id, bias] : k.logit_bias) {
    d.pod(id);
    d.pod(bias);
  }
  d.pod(k.seed_explicit);
  d.pod(k.seed);
  d.pod(k.top_p);
  d.pod(k.parse_reasoning);
  d.pod(k.parse_tool_calls);
  d.pod(k.starts_in_reasoning);
  d.pod(k.reasoning_budget);
  return XXH3_64bits_digest(d.st);
}

}  // namespace anchorage
