#include "runtime/text/tokenizer/split_regex.hpp"

#include <stdexcept>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace anchorage {

struct split_regex::compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~compiled() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0) return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char*>(buffer);
}

// One match data per thread, sized for the whole match only (all any split needs).
pcre2_match_data* thread_match_data() {
  struct holder {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    ~holder() { pcre2_match_data_free(data); }
  };
  thread_local holder h;
  if (h.data == nullptr) throw std::bad_alloc();
  return h.data;
}

// Length of the UTF-8 sequence whose lead byte is `lead` (text is valid UTF-8).
std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

}  // namespace

split_regex::split_regex(std::string_view pattern, syntax kind) : pattern_(pattern) {
  auto result = std::make_shared<compiled>();
  int error = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | (kind == syntax::literal ? PCRE2_LITERAL : 0u);
  result->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                               &offset, nullptr);
  if (result->code == nullptr) {
    throw std::invalid_argument("PCRE2 rejects the pattern at offset " + std::to_string(offset) + ": " +
                                pcre2_message(error));
  }
  result->jit = pcre2_jit_compile(result->code, PCRE2_JIT_COMPLETE) == 0;
  code_ = std::move(result);
}

bool split_regex::jit() const { return code_->jit; }

void split_regex::split_isolated(std::string_view text, std::vector<std::string_view>& out) const {
  pcre2_match_data* data = thread_match_data();
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t gap_start = 0;
  std::size_t search = 0;
  while (search < text.size()) {
    int rc = code_->jit ? pcre2_jit_match(code_->code, subject, text.size(), search, 0, data, nullptr)
                        : PCRE2_ERROR_JIT_BADOPTION;
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT || rc == PCRE2_ERROR_JIT_BADOPTION) {
      // The interpreter keeps its backtracking on the heap: slower, but without JIT's stack limit.
      rc = pcre2_match(code_->code, subject, text.size(), search, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data,
                       nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw std::runtime_error("PCRE2 failed to match /" + pattern_ + "/: " + pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const std::size_t begin = ovector[0], end = ovector[1];
    if (begin == end) {  // an empty match splits nothing; look again one character further on
      if (begin >= text.size()) break;
      search = begin + sequence_length(static_cast<unsigned char>(text[begin]));
      continue;
    }
    if (begin > gap_start) out.push_back(text.substr(gap_start, begin - gap_start));
    out.push_back(text.substr(begin, end - begin));
    gap_start = search = end;
  }
  if (gap_start < text.size()) out.push_back(text.substr(gap_start));
}

}  // namespace anchorage
