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

}  // namespace unmask::model
