#include "common/segment/layout.h"

#include <cmath>

#include "common/quant/int4_groupwise.h"
#include "common/quant/int8_per_channel.h"

namespace unmask::weights {

StatusOr<Manifest> PlanLayout(const std::vector<LayoutInput>& tensors, const PrecisionSpec& spec) {
  Manifest m;
  m.precision = spec.ToString();
  std::uint64_t cursor = 0;
  auto place = [&](std::uint64_t nbytes) {
    const std::uint64_t offset = AlignUp(cursor, kTensorAlignment);
    cursor = offset + nbytes;
    return offset;
  };
  for (const auto& in : tensors) {
    const TensorStorage st = StorageFor(spec, in.name, in.shape);
    TensorEntry e;
    e.name = in.name;
    e.shape = in.shape;
    e.dtype = st.dtype;
    e.source_dtype = in.source_dtype;
    e.quant.scheme = st.scheme;
    if (st.scheme == QuantScheme::kInt8PerChannel) {
      e.quant.scales_dtype = kInt8ScaleDType;
    } else if (st.scheme == QuantScheme::kInt4Groupwise) {
      e.quant.group_size = st.group_size;
      e.quant.symmetric = st.symmetric;
      e.quant.scales_dtype = kInt4ScaleDType;
      e.quant.zeros_dtype = kInt4ZeroDType;
    }
    auto sizes = ExpectedRegionSizes(e.dtype, e.quant, e.shape);
    if (!sizes.ok()) return sizes.status().WithContext("tensor '" + in.name + "'");
    e.nbytes = sizes->data;
    e.offset = place(sizes->data);
    if (sizes->scales) {
      e.quant.scales_nbytes = sizes->scales;
      e.quant.scales_offset = place(sizes->scales);
    }
    if (sizes->zeros) {
      e.quant.zeros_nbytes = sizes->zeros;
      e.quant.zeros_offset = place(sizes->zeros);
    }
    if (st.prune) e.pruned = static_cast<std::int64_t>(std::floor(spec.prune_ratio * static_cast<double>(e.numel())));
    m.tensors.push_back(std::move(e));
  }
  m.totals = m.ComputeTotals();
  return m;
}

StatusOr<Manifest> PlanLayout(const checkpoint::LladaConfig& config, const PrecisionSpec& spec) {
  std::vector<LayoutInput> inputs;
  for (const auto& t : checkpoint::ExpectedTensors(config))
    inputs.push_back({t.name, t.shape, checkpoint::DType::kBF16});
  return PlanLayout(inputs, spec);
}

}  // namespace unmask::weights
