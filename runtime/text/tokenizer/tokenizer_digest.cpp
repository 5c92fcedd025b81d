#include "runtime/text/tokenizer/tokenizer_digest.hpp"

#include <xxhash.h>

#include <memory>
#include <string>

namespace anchorage {

std::uint64_t tokenizer_digest(const tokenizer& tok) {
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> st(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(st.get());
  for (int id = 0; id < tok.vocab_size(); ++id) {
    const bool defined = tok.is_defined(id);
    const std::string bytes = defined ? tok.token_text(id) : std::string();
    unsigned char head[5] = {static_cast<unsigned char>(defined ? 1 : 0)};
    for (int k = 0; k < 4; ++k)
      head[1 + k] = static_cast<unsigned char>(bytes.size() >> (8 * k));  // its length
    XXH3_64bits_update(st.get(), head, sizeof head);
    XXH3_64bits_update(st.get(), bytes.data(), bytes.size());  // then its bytes
  }
  return XXH3_64bits_digest(st.get());
}

}  // namespace anchorage
