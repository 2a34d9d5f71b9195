// Conversions between the engine's option types and ATen's.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

#include "common/model/model_options.h"
#include "common/util/status.h"

namespace unmask::model {

at::ScalarType ToScalarType(Precision p);
StatusOr<c10::Device> ParseDevice(const std::string& text);

// Sets LibTorch's intra-op threads: `threads`, or one per core when 0. LibTorch's own default
// counts physical cores by a rule that gave one thread on the 2-core machines here, which halves
// the speed of every forward. Returns the number set; InvalidArgument for a negative count.
StatusOr<int> SetIntraOpThreads(int threads);

}  // namespace unmask::model
