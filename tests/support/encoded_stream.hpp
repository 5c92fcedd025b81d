#pragma once
// The bytes a stream encoder of runtime/api writes for a run's events: open(), then feed() per
// event, concatenated (the Anthropic and Responses SSE encoders and any of their shape).
#include <string>
#include <vector>

#include "protocol/board_job.hpp"

namespace anchorage::testing {

template <typename Encoder>
std::string encoded_stream(Encoder&& enc, const std::vector<stream_event>& events) {
  std::string raw;
  for (const std::string& c : enc.open()) raw += c;
  for (const stream_event& ev : events)
    for (const std::string& c : enc.feed(ev)) raw += c;
  return raw;
}

}  // namespace anchorage::testing
