#pragma once
// The conversations of stored Responses answers, by response id, so that a request naming one in
// previous_response_id can be expanded into the whole conversation (that conversation, then its
// own input) and served from the prompt cache like any follow-up.
//
// What is kept per response: the conversation up to and including its answer as chat messages
// (the earlier conversation it continued, its own input items, the answer as answer_message
// makes it), without its instructions (OpenAI does not carry them over either). Not the tokens
// nor any state: the prompt cache holds those.
//
// Bounds: at most `max_responses` responses and `max_bytes` bytes of message text (a message
// counts its content, reasoning, parts' texts and tool calls' names and arguments, plus 64 bytes);
// past either, the least recently stored or found response is dropped. A conversation alone over
// `max_bytes` is not kept. A dropped or never-stored id is not found.
//
// Thread-safe: every method may be called from any thread (the edge's workers share one store).
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/chat_message.hpp"

namespace anchorage {

class response_store {
 public:
  static constexpr std::size_t default_max_responses = 256;
  static constexpr std::size_t default_max_bytes = std::size_t{64} << 20;  // 64 MiB

  explicit response_store(std::size_t max_responses = default_max_responses,
                          std::size_t max_bytes = default_max_bytes);

  // Keeps `conversation` as response `id`'s (replacing one kept under the same id); it becomes
  // the most recently used.
  void put(const std::string& id, std::vector<chat_message> conversation);
  // A copy of response `id`'s conversation, which becomes the most recently used; nullopt when
  // it is not kept.
  std::optional<std::vector<chat_message>> find(const std::string& id);

  std::size_t size() const;
  std::size_t bytes() const;

  // What `conversation` counts against max_bytes.
  static std::size_t weight(const std::vector<chat_message>& conversation);

 private:
  struct entry {
    std::string id;
    std::vector<chat_message> conversation;
    std::size_t bytes = 0;
  };

  void erase(std::list<entry>::iterator it);  // with mu_ held

  const std::size_t max_responses_;
  const std::size_t max_bytes_;
  mutable std::mutex mu_;
  std::list<entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<entry>::iterator> by_id_;
  std::size_t bytes_ = 0;
};

}  // namespace anchorage
