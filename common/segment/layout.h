// Planning a segment before any byte is copied: every tensor's storage (from the policy) and
// its 64-aligned regions in the data region. Sizes follow from shapes and schemes alone, so the
// segment can be created once at its final size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/dtype.h"
#include "common/checkpoint/llada_config.h"
#include "common/util/status.h"
#include "common/segment/manifest.h"
#include "common/quant/quant_policy.h"

namespace unmask::weights {

struct LayoutInput {
  std::string name;
  std::vector<std::int64_t> shape;
  checkpoint::DType source_dtype = checkpoint::DType::kBF16;
};

// A manifest with tensors (in the given order), storage, offsets and totals; data_offset and
// segment_bytes are left for PlanSegment. model_id, source_dir and config_json are left empty.
StatusOr<Manifest> PlanLayout(const std::vector<LayoutInput>& tensors, const PrecisionSpec& spec);

// The layout a checkpoint of `config` would get, assuming bf16 sources: for estimates (budget
// checks, benchmarks) before a checkpoint is opened.
StatusOr<Manifest> PlanLayout(const checkpoint::LladaConfig& config, const PrecisionSpec& spec);

}  // namespace unmask::weights
