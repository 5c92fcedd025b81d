// Compaction transcripts (runtime/compaction/compaction_transcript.hpp, compaction_request.hpp): a chat
// request's messages, or any text as the user message of opencode's flattened shape, through
// detect_compaction and the guard against the rendered conversation, and every user text through
// the transcript readers. Nothing throws; blocks lie inside their text, in order, each opening a
// line; every block is counted by count_line_tags.
#include <exception>

#include "fuzz/fuzz_support.hpp"
#include "runtime/api/openai_request.hpp"
#include "runtime/text/template/chat_template.hpp"
#include "runtime/compaction/compaction_request.hpp"
#include "runtime/compaction/compaction_transcript.hpp"

using namespace anchorage;
namespace ct = anchorage::compaction_transcript;

namespace {

void read_transcript(std::string_view text) {
  const auto blocks = ct::find_blocks(text);
  std::size_t last_end = 0;
  for (const auto& b : blocks) {
    fuzz::check(b.begin >= last_end && b.begin < b.end && b.end <= text.size(),
                "blocks lie in order inside the text");
    fuzz::check(b.begin == 0 || text[b.begin - 1] == '\n', "a block opens a line");
    fuzz::check(
        b.body.data() >= text.data() + b.begin && b.body.data() + b.body.size() <= text.data() + b.end,
        "a block's body lies inside it");
    last_end = b.end;
    for (const auto& e : ct::read_entries(b.body)) {
      fuzz::check(!e.label.empty() && e.label.size() <= 32, "an entry has a label of at most 32 characters");
      if (e.label == "User") (void)ct::user_text(e.text);
    }
  }
  fuzz::check(ct::count_line_tags(text, "<conversation>") >= blocks.size(), "every block's tag is counted");
  (void)ct::cut_blocks(text, blocks);
  (void)ct::find_blocks(text, "<prior-summary>", "</prior-summary>");
}

void detect(const std::vector<chat_message>& messages, bool has_tools) {
  for (const auto& m : messages) read_transcript(m.content);
  const auto found = detect_compaction(messages, has_tools);
  if (!found) return;
  std::string record;
  try {
    record = render_chat(messages, template_options{});
  } catch (const std::invalid_argument&) {
  }
  (void)compaction_guard_check(found->user_lines, record);
  (void)compaction_guard_check(found->user_lines, "<|im_start|>user\n" + record);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  try {
    auto parsed = parse_request(text, request_kind::chat);
    if (const auto* r = std::get_if<completion_request>(&parsed)) {
      detect(r->messages, !r->tools.empty());
      return 0;
    }
    chat_message system_turn, user_turn;
    system_turn.role = "system";
    system_turn.content = "You are a helpful AI assistant tasked with summarizing conversations.";
    user_turn.role = "user";
    user_turn.content = std::string(text);
    detect({system_turn, user_turn}, false);
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}
