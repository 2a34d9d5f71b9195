// A read-only memory mapping of a whole file (RAII).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/util/status.h"

namespace unmask::checkpoint {

class MappedFile {
 public:
  // Maps `path` read-only. Empty files map to size 0 with a null data pointer.
  static StatusOr<std::shared_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Tells the kernel that [offset, offset+length) is no longer needed, so that pages of a
  // tensor already converted do not stay resident while the rest of the file is read.
  void DropPages(std::size_t offset, std::size_t length) const;

 private:
  MappedFile(std::string path, const std::uint8_t* data, std::size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace unmask::checkpoint
