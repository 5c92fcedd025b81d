#include "actors/spill_reader.hpp"

#include <caf/all.hpp>

#include "runtime/spill/spill_store.hpp"

namespace anchorage {

spill_reader_actor::behavior_type spill_reader(spill_reader_actor::stateful_pointer<spill_reader_state> self,
                                               std::shared_ptr<file_env> env) {
  // The env is this actor's alone from here (file_env is not thread-safe).
  auto keep = std::move(env);
  return {
      [self, keep](spill_read_atom, spill_fetch_ptr f) -> spill_fetch_ptr {
        if (f) execute_spill_read(*keep, *f);
        ++self->state.reads;
        return f;
      },
  };
}

}  // namespace anchorage
