#pragma once
// The vision encoder's messages (docs/IMAGES.md, "The board"):
//
//   board -> vision encoder (vision_encode_atom, vision_encode_ptr) -> vision_encode_ptr (every
//            image encoded, or the failure named)
//
// A local type only (a shared pointer), whitelisted like the others.
#include <memory>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/type_id.hpp>

#include "protocol/suffix_messages.hpp"

namespace anchorage {

// The images one request needs encoded (runtime/vision/vision_encode.hpp), handed from the board
// to the vision encoder and back with their rows; only its holder at the time touches it.
struct vision_encode;
using vision_encode_ptr = std::shared_ptr<vision_encode>;

}  // namespace anchorage

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::vision_encode_ptr)

CAF_BEGIN_TYPE_ID_BLOCK(anchorage_vision, caf::id_block::anchorage_suffix_handles::end)
CAF_ADD_TYPE_ID(anchorage_vision, (anchorage::vision_encode_ptr))
CAF_ADD_ATOM(anchorage_vision, anchorage, vision_encode_atom, "visenc")
CAF_END_TYPE_ID_BLOCK(anchorage_vision)
