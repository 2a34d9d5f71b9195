// The shared-memory weight segment: the fuzz bytes are a whole mapped segment (header,
// manifest, data region) given to ReadSegmentManifest, as an executor attaching to it does.
// Every tensor of an accepted segment is then viewed in the data region and dequantized row by
// row, as the model's linear layers do: the manifest's offsets and sizes must keep every read
// inside the segment (AddressSanitizer checks each byte read).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/segment/segment_format.h"
#include "common/segment/tensor_view.h"
#include "fuzz/fuzz_check.h"

using namespace unmask::weights;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A mapping starts page-aligned; the header is read in place.
  std::vector<std::uint64_t> aligned((size + 7) / 8);
  auto* base = reinterpret_cast<std::uint8_t*>(aligned.data());
  if (size > 0) std::memcpy(base, data, size);
  auto manifest = ReadSegmentManifest(base, size, "fuzz");
  if (!manifest.ok()) {
    UNMASK_FUZZ_CHECK(manifest.status().message().find("segment 'fuzz'") != std::string::npos, "the error names the segment");
    return 0;
  }
  const std::uint8_t* region = base + manifest->data_offset;
  std::vector<float> row;
  for (const auto& entry : manifest->tensors) {
    UNMASK_FUZZ_CHECK(entry.footprint() <= manifest->totals.data_bytes, "a tensor fits in the data region");
    const TensorView view = MakeTensorView(entry, region);
    const std::int64_t rows = entry.rows(), cols = entry.cols();
    if (rows <= 0 || cols <= 0 || cols > (1 << 20)) continue;
    row.resize(static_cast<std::size_t>(cols));
    for (std::int64_t r = 0; r < rows && r < 64; ++r) (void)DequantizeRows(view, r, r + 1, row.data());
  }
  return 0;
}
