// Removes a file or a directory tree, like `rm -rf`, without std::filesystem::remove_all:
// PyTorch 2.11's libtorch.so exports a std::filesystem::remove_all of its own that the dynamic
// linker binds ahead of libstdc++'s, and calling it jumps to address 0 (seen on the GPU machine,
// where every test that cleaned up a temporary directory crashed). Symbolic links are removed,
// never followed.
#pragma once

#include <string>

namespace unmask::util {

// True when `path` no longer exists afterwards (a missing path is success); otherwise false with
// the first failure, naming the path, in *error.
bool RemoveTree(const std::string& path, std::string* error = nullptr);

}  // namespace unmask::util
