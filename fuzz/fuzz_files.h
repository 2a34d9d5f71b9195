// A scratch directory for targets whose parser reads files (safetensors, the sharded index):
// the fuzz bytes are written to a file there and the real file-reading API opens it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace unmask::fuzz {

class ScratchDir {
 public:
  // A fresh directory under $TMPDIR (or /tmp), removed when the process exits normally.
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes (replaces) `name` in the directory; returns its path. Aborts when the write fails,
  // since a run that silently parsed nothing would prove nothing.
  std::string Write(const std::string& name, const std::uint8_t* data, std::size_t size) const;
  std::string Write(const std::string& name, const std::string& bytes) const;

 private:
  std::string path_;
};

}  // namespace unmask::fuzz
