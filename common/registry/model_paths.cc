#include "common/registry/model_paths.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace unmask::weights {

namespace {

// realpath(3); the errno on failure.
StatusOr<std::string> RealPath(const std::string& path, int* err) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) {
    *err = errno;
    return NotFoundError(path + ": " + std::strerror(errno));
  }
  return std::string(buf);
}

std::string JoinRoots(const std::vector<std::string>& roots) {
  std::string s = "[";
  for (std::size_t i = 0; i < roots.size(); ++i) s += (i ? ", " : "") + roots[i];
  return s + "]";
}

Status CheckDirectory(const std::string& resolved, const std::string& requested) {
  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return FailedPreconditionError("model path '" + requested + "' resolves to '" + resolved +
                                   "', which is not a directory");
  return OkStatus();
}

}  // namespace

bool IsPathUnder(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path == root ||
         (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/');
}

StatusOr<std::string> ResolveModelDir(const std::vector<std::string>& roots, const std::string& requested) {
  if (requested.empty()) return InvalidArgumentError("model path is empty");
  if (requested.find('\0') != std::string::npos) return InvalidArgumentError("model path contains a NUL byte");
  std::size_t begin = 0;
  while (begin <= requested.size()) {
    std::size_t end = requested.find('/', begin);
    if (end == std::string::npos) end = requested.size();
    if (requested.compare(begin, end - begin, "..") == 0)
      return InvalidArgumentError("model path '" + requested + "': '..' components are not allowed");
    begin = end + 1;
  }
  if (roots.empty()) return FailedPreconditionError("no model roots are configured");

  std::vector<std::string> real_roots;
  for (const auto& root : roots) {
    int err = 0;
    auto r = RealPath(root, &err);
    if (r.ok()) real_roots.push_back(*r);
  }
  if (real_roots.empty()) return FailedPreconditionError("none of the model roots " + JoinRoots(roots) + " exists");

  if (requested[0] == '/') {
    int err = 0;
    auto resolved = RealPath(requested, &err);
    if (!resolved.ok()) return NotFoundError("model path '" + requested + "' does not exist");
    for (const auto& root : real_roots) {
      if (IsPathUnder(*resolved, root)) {
        UNMASK_RETURN_IF_ERROR(CheckDirectory(*resolved, requested));
        return *resolved;
      }
    }
    return PermissionDeniedError("model path '" + requested + "' resolves to '" + *resolved +
                                 "', outside the model roots " + JoinRoots(real_roots));
  }
  for (const auto& root : real_roots) {
    int err = 0;
    auto resolved = RealPath(root + "/" + requested, &err);
    if (!resolved.ok()) {
      if (err == ENOENT || err == ENOTDIR) continue;
      return FailedPreconditionError("model path '" + requested + "' under '" + root + "': " + std::strerror(err));
    }
    // A symlink may lead into another root, never out of all of them.
    bool inside = false;
    for (const auto& any_root : real_roots) inside |= IsPathUnder(*resolved, any_root);
    if (!inside) {
      return PermissionDeniedError("model path '" + requested + "' under '" + root + "' resolves to '" + *resolved +
                                   "' (through a symlink), outside the model roots " + JoinRoots(real_roots));
    }
    UNMASK_RETURN_IF_ERROR(CheckDirectory(*resolved, requested));
    return *resolved;
  }
  return NotFoundError("model path '" + requested + "' was not found under the model roots " + JoinRoots(real_roots));
}

}  // namespace unmask::weights
