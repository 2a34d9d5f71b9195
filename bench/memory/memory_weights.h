// The weights part of the memory model against the loader: fitting::WeightBytes(config, spec),
// what the scheduler charges for a model's segment, next to the segment the loader really writes
// (weights::LoadModelDir) for the same checkpoint and precision.
#pragma once

#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"

namespace unmask::bench::memory {

// A markdown table, one row per precision spec ("bf16", "int8", "int4", ...): predicted bytes,
// the manifest's segment_bytes, the segment's mapped size, and their ratio. Loading needs no
// LibTorch, so the parent may run it between its children. Adds the largest deviation to `worst`
// and 1 to `failures` for each spec that does not load.
std::string WeightsTable(const std::string& dir, const checkpoint::LladaConfig& config,
                         const std::vector<std::string>& specs, double& worst, int& failures);

}  // namespace unmask::bench::memory
