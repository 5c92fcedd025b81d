#pragma once
// The flattened history inside a compaction request (compaction_request.hpp): the
// <conversation> ... </conversation> blocks of a user text and the "[Label]: text" entries in
// them, as opencode writes them. Pure functions; no state.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace anchorage::compaction_transcript {

// One block: text[begin, end) runs from its "<conversation>" through its "</conversation>";
// `body` is what lies between the two tags. Both tags must open a line (start the text or
// follow a "\n"), so a mention of the tag inside a sentence is not a block.
struct block {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string_view body;
};

// Every block of `text` in order; an opening tag with no closing tag after it is not a block.
std::vector<block> find_blocks(std::string_view text);

// The same for another pair of tags ("<prior-summary>", "</prior-summary>"), by the same rules.
std::vector<block> find_blocks(std::string_view text, std::string_view opening, std::string_view closing);

// How many times `tag` opens a line of `text` (closed or not): more than find_blocks() found
// means an opening tag with no closing tag.
std::size_t count_line_tags(std::string_view text, std::string_view tag);

// `text` with every block cut out: the pieces around the blocks trimmed of white space and the
// non-empty ones joined with "\n\n".
std::string cut_blocks(std::string_view text, const std::vector<block>& blocks);

// One entry: a line opening "[Label]:" (a label of letters and spaces starting with a capital,
// at most 32 characters), then everything up to the next such line, without the one space after
// the colon. Text before the first entry is dropped.
struct entry {
  std::string label;  // "User", "Assistant", "Assistant reasoning", "Tool result", ...
  std::string text;   // as written
};

std::vector<entry> read_entries(std::string_view body);

// A "[User]:" entry's text as the user wrote it: opencode writes it as a JSON string (after
// trimming, a quote to a quote), which is decoded and returned exactly; any other text, or one
// that does not decode, is returned as written, trimmed.
std::string user_text(std::string_view entry_text);

// `s` without leading and trailing ASCII white space (space, \t, \n, \v, \f, \r).
std::string_view trim(std::string_view s);

}  // namespace anchorage::compaction_transcript
