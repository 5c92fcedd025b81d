#pragma once
// The caches' folders are the owner's alone: what clients sent is in them (docs/SERVER.md,
// "Private files"). POSIX calls on the caller's thread; no state.
#include <string>

#include "runtime/io/file_env.hpp"

namespace anchorage {

// Creates `dir` and each missing parent; every folder this call creates is 0700 whatever the
// umask, and folders that exist are left as they are. Fails when a component exists as
// something other than a folder, or cannot be created.
file_result make_private_dirs(const std::string& dir);

// The folder a user points the caches at (`--cache-dir`), checked before anything is written
// under it: refused when it exists and is not a folder, is owned by another user, or is
// world-writable (any user could then swap the files the server restores). A folder that does
// not exist yet is fine (make_private_dirs creates it 0700). The message names the folder and
// what is wrong with it.
file_result check_private_root(const std::string& dir);

}  // namespace anchorage
