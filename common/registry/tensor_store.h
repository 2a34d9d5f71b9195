// Writing one tensor from its checkpoint bytes into its planned regions of a data region:
// conversion, optional magnitude pruning, quantization, in row chunks through a bounded f32
// scratch buffer (never a full f32 copy of a large tensor).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/util/status.h"
#include "common/segment/manifest.h"

namespace unmask::weights {

class TensorWriter {
 public:
  // `chunk_elems` bounds the f32 scratch (a row longer than that gets a scratch of one row).
  explicit TensorWriter(std::int64_t chunk_elems = std::int64_t{4} << 20) : chunk_elems_(chunk_elems) {}

  // Called with [begin, end) byte offsets, relative to the tensor's source bytes, that will not
  // be read again: the loader drops those pages of the mapped shard.
  using SourceDone = std::function<void(std::uint64_t begin, std::uint64_t end)>;

  // Reads the tensor (entry.numel() elements of entry.source_dtype at `src`) and writes its
  // regions at data + entry.offset (and the scales/zeros offsets). Prunes entry.pruned
  // elements first when that is non-zero. Errors name the tensor.
  Status Write(const TensorEntry& entry, const std::uint8_t* src, std::uint8_t* data, const SourceDone& done = {});

  std::size_t scratch_bytes() const { return scratch_.capacity() * sizeof(float); }

 private:
  std::int64_t chunk_elems_;
  std::vector<float> scratch_;
};

}  // namespace unmask::weights
