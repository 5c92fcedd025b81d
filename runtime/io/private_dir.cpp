#include "runtime/io/private_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace anchorage {
namespace {

file_result os_error(int err, const std::string& what, const std::string& path) {
  return file_result::failure(err, what + " " + path + ": " + std::strerror(err));
}

// One folder: created 0700 (then chmod, since mkdir's mode goes through the umask), or left as
// it is when it exists as a folder.
file_result make_one(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (::chmod(dir.c_str(), 0700) != 0) return os_error(errno, "chmod 0700", dir);
    return file_result::success();
  }
  const int err = errno;
  struct stat st {};
  if (err == EEXIST && ::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return file_result::success();
    return file_result::failure(ENOTDIR, "mkdir " + dir + ": exists and is not a folder");
  }
  return os_error(err, "mkdir", dir);
}

}  // namespace

file_result make_private_dirs(const std::string& dir) {
  if (dir.empty()) return file_result::failure(EINVAL, "mkdir: an empty path");
  for (std::size_t at = 1; at < dir.size(); ++at) {
    if (dir[at] != '/' || dir[at - 1] == '/') continue;
    if (file_result r = make_one(dir.substr(0, at)); !r) return r;
  }
  if (dir.size() > 1 && dir.back() == '/') return file_result::success();  // the loop made it
  return make_one(dir);
}

file_result check_private_root(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return file_result::success();  // created private when first written
    return os_error(errno, "stat", dir);
  }
  if (!S_ISDIR(st.st_mode)) return file_result::failure(ENOTDIR, dir + " is not a folder");
  if (st.st_uid != ::geteuid())
    return file_result::failure(EPERM, dir + " is owned by another user (uid " + std::to_string(st.st_uid) +
                                           "); the cache's files must be this user's alone");
  if ((st.st_mode & S_IWOTH) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return file_result::failure(EPERM, dir + " is world-writable (mode " + mode +
                                           "): any user could replace the files the server restores; "
                                           "use a folder of your own (chmod o-w, or another path)");
  }
  return file_result::success();
}

}  // namespace anchorage
