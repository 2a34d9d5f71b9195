// The manifest of a weight segment: what each tensor is and where its bytes live.
//
// Offsets are relative to the start of the segment's data region, which begins at
// `data_offset` inside the shm segment (see segment_format.h). Relative offsets are what the
// CUDA path needs too: there the data region is the device allocation itself. Every region
// (main data, scales, zeros) starts at a multiple of kTensorAlignment.
//
// JSON form (one object):
//   {"format_version": 1, "model_id": "...", "precision": "int4:g128:asym", "source_dir": "...",
//    "config_json": "<config.json text>", "data_offset": 4096, "segment_bytes": M,
//    "alignment": 64,
//    "tensors": [{"name": "...", "dtype": "U8", "source_dtype": "BF16", "shape": [r, c],
//                 "offset": o, "nbytes": n, "pruned": 0,
//                 "quant": {"scheme": "int4_groupwise", "group_size": 128, "symmetric": false,
//                           "scales_offset": o, "scales_nbytes": n, "scales_dtype": "F16",
//                           "zeros_offset": o, "zeros_nbytes": n, "zeros_dtype": "U8"}}, ...],
//    "totals": {"data_bytes": N, "float_bytes": .., "quantized_bytes": .., "quant_meta_bytes": ..,
//               "padding_bytes": .., "source_bytes": .., "source_quantized_bytes": ..,
//               "by_role": {"embedding": .., "attention": .., ...}}}
// "quant" is absent for tensors stored unquantized.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/checkpoint/dtype.h"
#include "common/util/status.h"
#include "common/quant/quant_policy.h"

namespace unmask::weights {

inline constexpr std::uint64_t kTensorAlignment = 64;
inline constexpr int kManifestFormatVersion = 1;

inline std::uint64_t AlignUp(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

struct QuantInfo {
  QuantScheme scheme = QuantScheme::kNone;
  int group_size = 0;  // int4
  bool symmetric = true;
  std::uint64_t scales_offset = 0;
  std::uint64_t scales_nbytes = 0;
  checkpoint::DType scales_dtype = checkpoint::DType::kF32;
  std::uint64_t zeros_offset = 0;  // asymmetric int4 only
  std::uint64_t zeros_nbytes = 0;
  checkpoint::DType zeros_dtype = checkpoint::DType::kU8;
};

struct TensorEntry {
  std::string name;
  checkpoint::DType dtype = checkpoint::DType::kBF16;         // stored element type of the data
  checkpoint::DType source_dtype = checkpoint::DType::kBF16;  // in the checkpoint
  std::vector<std::int64_t> shape;                            // logical shape
  std::uint64_t offset = 0;
  std::uint64_t nbytes = 0;
  std::int64_t pruned = 0;  // elements zeroed by magnitude pruning
  QuantInfo quant;

  bool quantized() const { return quant.scheme != QuantScheme::kNone; }
  std::int64_t numel() const;
  // A weight is rows x cols with cols = the last dimension (a 1-D tensor is one row).
  std::int64_t rows() const;
  std::int64_t cols() const;
  // Data + scales + zeros.
  std::uint64_t footprint() const { return nbytes + quant.scales_nbytes + quant.zeros_nbytes; }
};

struct ManifestTotals {
  std::uint64_t data_bytes = 0;                  // the whole data region, padding included
  std::uint64_t float_bytes = 0;                 // tensors stored as F32/BF16/F16
  std::uint64_t quantized_bytes = 0;             // packed data of quantized tensors
  std::uint64_t quant_meta_bytes = 0;            // their scales and zeros
  std::uint64_t padding_bytes = 0;               // alignment gaps
  std::uint64_t source_bytes = 0;                // checkpoint bytes of the stored tensors
  std::uint64_t source_quantized_bytes = 0;      // checkpoint bytes of the tensors now quantized
  std::map<std::string, std::uint64_t> by_role;  // footprint per TensorRoleName

  bool operator==(const ManifestTotals& o) const;
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  std::string model_id;
  std::string precision;  // PrecisionSpec::ToString()
  std::string source_dir;
  std::string config_json;        // the checkpoint's config.json text
  std::uint64_t data_offset = 0;  // where the data region starts in the segment
  std::uint64_t segment_bytes = 0;
  std::vector<TensorEntry> tensors;
  ManifestTotals totals;

  // nullptr when absent.
  const TensorEntry* Find(const std::string& name) const;
  // Totals recomputed from `tensors` (data_bytes = end of the last region, 64-aligned).
  ManifestTotals ComputeTotals() const;

  std::string ToJson() const;
  // Parses and validates; errors name the field ("manifest: tensors[3] ('...'): 'offset' ...").
  static StatusOr<Manifest> FromJson(const std::string& text);
  // Structural checks: known dtypes and schemes, sizes consistent with shapes and schemes,
  // aligned regions inside the data region, no two regions overlapping, totals consistent.
  Status Validate() const;
};

// The bytes the main data of a tensor with this storage and logical shape occupies, and its
// scales and zeros (0 when unquantized).
struct RegionSizes {
  std::uint64_t data = 0;
  std::uint64_t scales = 0;
  std::uint64_t zeros = 0;
};
StatusOr<RegionSizes> ExpectedRegionSizes(checkpoint::DType dtype, const QuantInfo& quant,
                                          const std::vector<std::int64_t>& shape);

}  // namespace unmask::weights
