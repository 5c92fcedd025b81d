#include "runtime/generation/generation_key.hpp"

#include <xxhash.h>

#include <cstring>
#include <string>

namespace anchorage {
namespace {

struct key_builder {
  XXH3_state_t* st = XXH3_createState();
  key_builder() { XXH3_64bits_reset(st); }
  ~key_builder() { XXH3_freeState(st); }
  template <class T>
  void pod(const T& v) {
    XXH3_64bits_update(st, &v, sizeof v);
  }
  void text(const std::string& s) {
    pod(static_cast<std::uint64_t>(s.size()));
    XXH3_64bits_update(st, s.data(), s.size());
  }
  std::uint64_t digest() { return XXH3_64bits_digest(st); }
};

}  // namespace

std::uint64_t generation_key(const board_job& j) {
  key_builder k;
  k.text(to_string(j.route));  // the wire's spelling: keys on disk stay the same
  k.pod(static_cast<std::uint64_t>(j.prompt.size()));
  if (!j.prompt.empty()) XXH3_64bits_update(k.st, j.prompt.data(), j.prompt.size() * sizeof(j.prompt[0]));
  k.pod(j.sampling.temperature);
  k.pod(j.sampling.top_p);
  k.pod(j.sampling.max_tokens);
  k.pod(static_cast<std::uint64_t>(j.sampling.stop_tokens.size()));
  for (auto t : j.sampling.stop_tokens) k.pod(t);
  k.pod(static_cast<std::uint64_t>(j.rules.stop_strings.size()));
  for (const auto& s : j.rules.stop_strings) k.text(s);
  k.pod(static_cast<std::uint64_t>(j.sampling.logit_bias.size()));
  for (const auto& [id, bias] : j.sampling.logit_bias) {
    k.pod(id);
    k.pod(bias);
  }
  k.pod(j.rules.parse_reasoning);
  k.pod(j.rules.parse_tool_calls);
  k.pod(j.rules.starts_in_reasoning);
  k.pod(j.rules.reasoning_budget);
  k.pod(j.sampling.seed_explicit);
  if (j.sampling.seed_explicit) k.pod(j.sampling.seed);
  return k.digest();
}

}  // namespace anchorage
