#pragma once
// A framed record's header read from its file (runtime/store/record.hpp), for the stores' scans:
// only the header, never the record's body.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "runtime/io/file_env.hpp"

namespace anchorage::store {

// The header of the record in `path`: its first `fixed` bytes (the kind's fixed header), then
// up to header_bytes (the preamble's field) with the kind's tables. nullopt when the file is
// shorter than either, or header_bytes is below `fixed` or above `max_header_bytes` (damage, not
// a record of ours: nothing that large is read). The header's checks are the reader's
// (read_preamble, check_header). Uses `env` from the caller's thread, under its one-thread rule.
std::optional<std::vector<unsigned char>> read_record_header(file_env& env, const std::string& path,
                                                             std::size_t fixed, std::size_t max_header_bytes);

}  // namespace anchorage::store
