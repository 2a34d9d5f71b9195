// The scheduler's Clamper over common/fitting: the request as asked -> fitting::Clamp under the
// configured policy -> the parameters that will run plus every adjustment in the API's form.
#pragma once

#include "common/fitting/clamp.h"
#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler {

// "fp32" -> 4, "bf16" / "fp16" -> 2 (the bytes of what executors compute in, for the memory
// model); InvalidArgument naming --executor-precision for any other name.
StatusOr<int> ExecutorComputeBytes(const std::string& executor_precision);

// compute_dtype_bytes: what the executors compute in (4 for fp32, 2 for bf16/fp16) when they do
// not report it (ClampInput::compute_dtype_bytes 0).
Clamper MakeClamper(fitting::ClampPolicy policy, int compute_dtype_bytes);

// Every Adjustment::field fitting::Clamp may report (common/fitting/clamp*.cc) plus the scheduler's
// own "device" (routed to a CPU executor), so that
// unmask_clamps_total{field} can start at 0 for each before the first clamp.
const std::vector<std::string>& ClampFields();

}  // namespace unmask::scheduler
