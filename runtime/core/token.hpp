#pragma once
#include <cstdint>

namespace anchorage {

// One vocabulary entry. Valid ids are 0 .. vocab_size()-1 (see runtime/text/tokenizer/tokenizer.hpp).
using token_id = std::int32_t;

}  // namespace anchorage
