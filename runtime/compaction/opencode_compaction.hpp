#pragma once
// What opencode 1.18.33 sends in a compaction request (tests/support/clients/opencode-1.18.33/
// compaction.json, captured): its compaction agent's system text and the instructions after the
// flattened transcript. The compaction worker prewrites a summary with them until a compaction
// request shows what the client sends now (docs/COMPACTION.md, "The compaction worker").
#include <string>

namespace anchorage {

const std::string& opencode_compaction_system_text();
const std::string& opencode_compaction_instructions();

}  // namespace anchorage
