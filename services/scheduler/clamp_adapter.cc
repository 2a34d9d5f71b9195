#include "services/scheduler/clamp_adapter.h"

#include "common/quant/quant_policy.h"

namespace unmask::scheduler {

StatusOr<int> ExecutorComputeBytes(const std::string& executor_precision) {
  auto p = weights::ParsePrecisionName(executor_precision);  // the one parser of precision names
  if (p.ok() && *p == weights::Precision::kFp32) return 4;
  if (p.ok() && (*p == weights::Precision::kBf16 || *p == weights::Precision::kFp16)) return 2;
  return InvalidArgumentError("--executor-precision: '" + executor_precision +
                              "' is not one of fp32, bf16, fp16 (what the executors compute in)");
}

Clamper MakeClamper(fitting::ClampPolicy policy, int compute_dtype_bytes) {
  return [policy, compute_dtype_bytes](const ClampInput& in) -> StatusOr<ClampOutput> {
    ClampOutput out{in.params, {}};
    if (in.budget_bytes == 0) return out;  // no executor has reported a budget yet: nothing to fit against
    fitting::GenerationRequest asked;
    asked.params = in.params;
    asked.prompt_length = in.prompt_length;
    asked.compute_dtype_bytes = in.compute_dtype_bytes > 0 ? in.compute_dtype_bytes : compute_dtype_bytes;
    // The executor's budget is its free memory after the weights it already maps: weights 0.
    fitting::ClampOptions options;
    if (in.fixed_gen_length) options.min_gen_length = in.params.gen_length;  // a template is never cut
    UNMASK_ASSIGN_OR_RETURN(fitting::ClampResult r,
                            fitting::Clamp(in.config, asked, in.budget_bytes, /*weights_bytes=*/0, policy, options));
    out.params = r.applied.params;
    for (const auto& a : r.adjustments) {
      v1::Adjustment adj;
      adj.set_field(a.field);
      adj.set_asked(a.asked);
      adj.set_applied(a.applied);
      adj.set_reason(a.reason);
      out.adjustments.push_back(std::move(adj));
    }
    return out;
  };
}

const std::vector<std::string>& ClampFields() {
  static const std::vector<std::string> fields = {"gen_length", "block_length", "steps", "sampler", "cfg_scale",
                                                  "temperature", "attention_query_chunk", "memory", "device"};
  return fields;
}

}  // namespace unmask::scheduler
