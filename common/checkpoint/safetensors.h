// One safetensors file, memory-mapped, with its header fully validated on open.
//
// Format: 8-byte little-endian header length N, N bytes of JSON
// {"__metadata__": {...}, "<name>": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}},
// then the data buffer; offsets are relative to the buffer. Validation follows the format's own
// rules: header size limit, well-formed JSON, known dtypes, offsets inside the file, no overlaps
// and no holes, byte length == product(shape) * dtype size.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/checkpoint/dtype.h"
#include "common/checkpoint/mapped_file.h"
#include "common/util/status.h"

namespace unmask::checkpoint {

// Headers larger than this are refused (the reference implementation uses the same 100 MB).
constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100ull * 1000 * 1000;

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  std::uint64_t offset = 0;  // from the start of the file
  std::uint64_t nbytes = 0;

  std::int64_t numel() const;
};

class SafetensorsFile {
 public:
  static StatusOr<std::shared_ptr<SafetensorsFile>> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // nullptr when absent.
  const TensorInfo* Find(const std::string& name) const;
  // Start of the tensor's bytes inside the mapping.
  const std::uint8_t* Data(const TensorInfo& info) const { return file_->data() + info.offset; }
  const MappedFile& file() const { return *file_; }

 private:
  explicit SafetensorsFile(std::shared_ptr<MappedFile> file) : file_(std::move(file)) {}
  Status ParseHeader();

  std::shared_ptr<MappedFile> file_;
  std::vector<TensorInfo> tensors_;  // in header order
  std::map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace unmask::checkpoint
