#include "common/segment/manifest.h"

#include <algorithm>
#include <cstdint>

#include "common/quant/int4_groupwise.h"
#include "common/quant/int8_per_channel.h"

namespace unmask::weights {

using checkpoint::DType;

std::int64_t TensorEntry::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::int64_t TensorEntry::rows() const {
  const std::int64_t c = cols();
  return c == 0 ? 0 : numel() / c;
}

std::int64_t TensorEntry::cols() const { return shape.empty() ? 1 : shape.back(); }

bool ManifestTotals::operator==(const ManifestTotals& o) const {
  return data_bytes == o.data_bytes && float_bytes == o.float_bytes && quantized_bytes == o.quantized_bytes &&
         quant_meta_bytes == o.quant_meta_bytes && padding_bytes == o.padding_bytes && source_bytes == o.source_bytes &&
         source_quantized_bytes == o.source_quantized_bytes && by_role == o.by_role;
}

const TensorEntry* Manifest::Find(const std::string& name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

StatusOr<RegionSizes> ExpectedRegionSizes(DType dtype, const QuantInfo& quant, const std::vector<std::int64_t>& shape) {
  std::int64_t numel = 1;
  for (auto d : shape) {
    if (d < 0) return InvalidArgumentError("negative dimension");
    if (d != 0 && numel > (INT64_MAX >> 4) / d) return InvalidArgumentError("shape too large");
    numel *= d;
  }
  const std::int64_t cols = shape.empty() ? 1 : shape.back();
  const std::int64_t rows = cols == 0 ? 0 : numel / cols;
  RegionSizes sizes;
  switch (quant.scheme) {
    case QuantScheme::kNone:
      if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
        return InvalidArgumentError(std::string("unquantized tensors are F32, BF16 or F16, not ") +
                                    checkpoint::DTypeName(dtype));
      sizes.data = static_cast<std::uint64_t>(numel) * checkpoint::DTypeSize(dtype);
      return sizes;
    case QuantScheme::kInt8PerChannel:
      if (dtype != DType::kI8) return InvalidArgumentError("int8_per_channel data must be I8");
      if (quant.scales_dtype != kInt8ScaleDType) return InvalidArgumentError("int8_per_channel scales must be F32");
      if (shape.size() != 2) return InvalidArgumentError("quantized tensors must be 2-D");
      sizes.data = Int8DataBytes(rows, cols);
      sizes.scales = Int8ScaleBytes(rows);
      return sizes;
    case QuantScheme::kInt4Groupwise: {
      if (dtype != DType::kU8) return InvalidArgumentError("int4_groupwise data must be U8 (packed)");
      if (quant.scales_dtype != kInt4ScaleDType) return InvalidArgumentError("int4_groupwise scales must be F16");
      if (!quant.symmetric && quant.zeros_dtype != kInt4ZeroDType)
        return InvalidArgumentError("int4_groupwise zeros must be U8");
      if (shape.size() != 2) return InvalidArgumentError("quantized tensors must be 2-D");
      Int4Layout layout{rows, cols, quant.group_size, quant.symmetric};
      UNMASK_RETURN_IF_ERROR(layout.Validate());
      sizes.data = layout.packed_bytes();
      sizes.scales = layout.scale_bytes();
      sizes.zeros = layout.zero_bytes();
      return sizes;
    }
  }
  return InvalidArgumentError("unknown scheme");
}

ManifestTotals Manifest::ComputeTotals() const {
  ManifestTotals t;
  std::uint64_t used = 0, end = 0;
  for (const auto& e : tensors) {
    const std::uint64_t meta = e.quant.scales_nbytes + e.quant.zeros_nbytes;
    if (e.quantized()) {
      t.quantized_bytes += e.nbytes;
      t.quant_meta_bytes += meta;
      t.source_quantized_bytes += static_cast<std::uint64_t>(e.numel()) * checkpoint::DTypeSize(e.source_dtype);
    } else {
      t.float_bytes += e.nbytes;
    }
    t.source_bytes += static_cast<std::uint64_t>(e.numel()) * checkpoint::DTypeSize(e.source_dtype);
    t.by_role[TensorRoleName(ClassifyTensor(e.name))] += e.footprint();
    used += e.footprint();
    end = std::max(end, e.offset + e.nbytes);
    if (e.quant.scales_nbytes) end = std::max(end, e.quant.scales_offset + e.quant.scales_nbytes);
    if (e.quant.zeros_nbytes) end = std::max(end, e.quant.zeros_offset + e.quant.zeros_nbytes);
  }
  t.data_bytes = AlignUp(end, kTensorAlignment);
  t.padding_bytes = t.data_bytes - std::min(used, t.data_bytes);
  return t;
}

namespace {

struct Region {
  std::uint64_t begin, end;
  std::size_t tensor;
  const char* what;
};

}  // namespace

Status Manifest::Validate() const {
  auto fail = [](const std::string& where, const std::string& why) {
    return InvalidArgumentError("manifest: " + where + ": " + why);
  };
  if (format_version != kManifestFormatVersion)
    return fail("'format_version'", "version " + std::to_string(format_version) + " is not supported (expected " +
                                        std::to_string(kManifestFormatVersion) + ")");
  std::vector<Region> regions;
  std::map<std::string, std::size_t> names;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorEntry& e = tensors[i];
    const std::string where = "tensors[" + std::to_string(i) + "] ('" + e.name + "')";
    if (e.name.empty()) return fail(where, "'name' is empty");
    if (!names.emplace(e.name, i).second) return fail(where, "duplicate tensor name");
    auto sizes = ExpectedRegionSizes(e.dtype, e.quant, e.shape);
    if (!sizes.ok()) return fail(where, sizes.status().message());
    auto check = [&](const char* field, std::uint64_t offset, std::uint64_t nbytes, std::uint64_t expected) -> Status {
      if (nbytes != expected)
        return fail(where, std::string("'") + field + "' region has " + std::to_string(nbytes) + " bytes, expected " +
                               std::to_string(expected));
      if (offset % kTensorAlignment != 0)
        return fail(where, std::string("'") + field + "' offset " + std::to_string(offset) + " is not a multiple of " +
                               std::to_string(kTensorAlignment));
      if (offset + nbytes > totals.data_bytes || offset + nbytes < offset)
        return fail(where, std::string("'") + field + "' region ends past the data region (" +
                               std::to_string(totals.data_bytes) + " bytes)");
      if (nbytes) regions.push_back({offset, offset + nbytes, i, field});
      return OkStatus();
    };
    UNMASK_RETURN_IF_ERROR(check("offset", e.offset, e.nbytes, sizes->data));
    UNMASK_RETURN_IF_ERROR(check("scales_offset", e.quant.scales_offset, e.quant.scales_nbytes, sizes->scales));
    UNMASK_RETURN_IF_ERROR(check("zeros_offset", e.quant.zeros_offset, e.quant.zeros_nbytes, sizes->zeros));
    if (e.pruned < 0 || e.pruned > e.numel()) return fail(where, "'pruned' is outside [0, numel]");
  }
  std::sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) { return a.begin < b.begin; });
  for (std::size_t k = 1; k < regions.size(); ++k) {
    if (regions[k].begin < regions[k - 1].end) {
      return fail("tensors[" + std::to_string(regions[k].tensor) + "] ('" + tensors[regions[k].tensor].name + "')",
                  std::string("'") + regions[k].what + "' region overlaps '" + regions[k - 1].what + "' of '" +
                      tensors[regions[k - 1].tensor].name + "'");
    }
  }
  if (!(ComputeTotals() == totals)) return fail("'totals'", "do not match the tensors");
  if (data_offset != 0) {
    if (data_offset % 4096 != 0) return fail("'data_offset'", "is not page aligned");
    if (segment_bytes < data_offset + totals.data_bytes)
      return fail("'segment_bytes'", "is smaller than data_offset + data_bytes");
  }
  return OkStatus();
}

}  // namespace unmask::weights
