// Where model directories may come from: only under the loader's configured model roots.
#pragma once

#include <string>
#include <vector>

#include "common/util/status.h"

namespace unmask::weights {

// Resolves `requested` to the canonical path (realpath) of an existing directory inside one of
// `roots`. `requested` is either relative (tried against each root in order) or absolute.
// Refused: empty names, '..' components (InvalidArgument, before touching the file system),
// absolute paths and symlinks that resolve outside every root (PermissionDenied, naming the
// resolved path), paths that are not directories (FailedPrecondition). NotFound lists the roots.
StatusOr<std::string> ResolveModelDir(const std::vector<std::string>& roots, const std::string& requested);

// True when `path` equals `root` or lies below it (both canonical, no trailing '/').
bool IsPathUnder(const std::string& path, const std::string& root);

}  // namespace unmask::weights
