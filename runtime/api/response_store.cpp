#include "runtime/api/response_store.hpp"

#include <iterator>
#include <utility>

namespace anchorage {

response_store::response_store(std::size_t max_responses, std::size_t max_bytes)
    : max_responses_(max_responses), max_bytes_(max_bytes) {}

std::size_t response_store::weight(const std::vector<chat_message>& conversation) {
  std::size_t n = 0;
  for (const chat_message& m : conversation) {
    n += 64 + m.role.size() + m.content.size() + m.tool_call_id.size() + m.name.size();
    if (m.reasoning_content) n += m.reasoning_content->size();
    for (const content_part& p : m.parts) n += 8 + p.text.size();
    for (const tool_call& c : m.tool_calls) n += 16 + c.id.size() + c.name.size() + c.arguments.size();
  }
  return n;
}

void response_store::erase(std::list<entry>::iterator it) {
  bytes_ -= it->bytes;
  by_id_.erase(it->id);
  lru_.erase(it);
}

void response_store::put(const std::string& id, std::vector<chat_message> conversation) {
  const std::size_t w = weight(conversation);
  std::lock_guard<std::mutex> lock(mu_);
  if (const auto old = by_id_.find(id); old != by_id_.end()) erase(old->second);
  if (w > max_bytes_ || max_responses_ == 0) return;
  while (!lru_.empty() && (lru_.size() >= max_responses_ || bytes_ + w > max_bytes_))
    erase(std::prev(lru_.end()));
  lru_.push_front(entry{id, std::move(conversation), w});
  by_id_[id] = lru_.begin();
  bytes_ += w;
}

std::optional<std::vector<chat_message>> response_store::find(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->conversation;
}

std::size_t response_store::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

std::size_t response_store::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace anchorage
