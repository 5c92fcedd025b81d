#include "actors/vision_encoder.hpp"

#include <caf/all.hpp>

#include "runtime/vision/vision_encode.hpp"

namespace anchorage {

vision_encoder_actor::behavior_type vision_encoder(
    vision_encoder_actor::stateful_pointer<vision_encoder_state> self) {
  return {
      [self](vision_encode_atom, vision_encode_ptr job) -> vision_encode_ptr {
        if (job) {
          execute_vision_encode(*job);
          self->state.images += static_cast<long>(job->rows.size());
        }
        ++self->state.jobs;
        return job;
      },
  };
}

}  // namespace anchorage
