#include "common/util/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace unmask::util {
namespace {

thread_local std::string* failure = nullptr;

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  if (std::remove(path) != 0 && errno != ENOENT) {
    if (failure && failure->empty()) *failure = std::string(path) + ": cannot remove: " + std::strerror(errno);
    return 1;
  }
  return 0;
}

}  // namespace

bool RemoveTree(const std::string& path, std::string* error) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    if (error) *error = path + ": " + std::strerror(errno);
    return false;
  }
  std::string first;
  failure = &first;
  // Depth first (children before their directory), physical (links are entries, not followed).
  const int rc = nftw(path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
  failure = nullptr;
  if (rc != 0 && first.empty()) first = path + ": cannot walk: " + std::strerror(errno);
  if (error) *error = first;
  return rc == 0;
}

}  // namespace unmask::util
