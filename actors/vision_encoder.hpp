#pragma once
#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"

namespace anchorage {

// The vision encoder (docs/IMAGES.md, "The board"): encodes a request's images
// (execute_vision_encode) with the weights the job names, one job per message, in the order they
// came, and hands each back with its rows, so no image is encoded on the board's thread while
// other slots decode. It owns nothing: the board's vision tower keeps what came back in its cache.
// A failed encode is an outcome, never an exception.
struct vision_encoder_state {
  long jobs = 0;    // jobs handled
  long images = 0;  // images encoded
  static inline const char* name = "vision-encoder";
};

vision_encoder_actor::behavior_type vision_encoder(
    vision_encoder_actor::stateful_pointer<vision_encoder_state> self);

}  // namespace anchorage
