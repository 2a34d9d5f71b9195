// Memory-aware clamping: the largest generation parameters that fit a device's budget under a
// policy, with every change reported (field, asked, applied, why).
//
// Policies:
//   off       nothing changes. A request that does not fit is still reported (ClampResult::fits
//             false, and one adjustment on field "memory" whose asked and applied are equal and
//             whose reason gives the bytes), so that the client learns why it may fail. An
//             over-long request (prompt + gen_length > max_sequence_length) is refused with
//             InvalidArgument: it cannot run, and off changes nothing.
//   standard  changes only lengths, never what is computed: prompt + gen_length is cut to
//             max_sequence_length, then gen_length is reduced to the largest multiple of
//             block_length that fits; when not even one block of block_length fits, block_length
//             shrinks too (the longest gen_length first, then the largest block_length dividing
//             it). steps follows (see below). Batch, sampler, temperature, cfg and chunking stay.
//   extreme   trades quality to fit small (8–12 GB) GPUs. Only when the request does not fit,
//             each lever only while it still does not fit and only when it lowers the peak:
//               attention query chunking: the largest power-of-two chunk (2048 .. 16) that fits,
//                 else 16 (tried again after each of the levers below, which can move the peak
//                 into the attention);
//               the sampler: dual_cache keeping the decoding rule when that fits, else the
//                 block_logits kind (both compute logits for the current block only);
//               temperature 0 (no float64 noise), then cfg_scale 0 (no doubled batch);
//             then standard's length reduction. When no length fits that way, every lever is
//             pulled (chunk 16, block_logits kind, temperature 0, cfg 0) and the lengths are
//             searched again. At the end, what still fits at the chosen lengths is set back, in
//             this order: the asked sampler (or dual_cache rather than block_logits), cfg_scale,
//             temperature, and the largest chunk (chunking changes speed, not results).
//             Weights precision is chosen when the model is loaded, not here: when the weights
//             alone exceed the budget the error says so (the seeds' 8–12 GB setting is int4
//             weights with gen_length 64, block_length 32, steps 64).
// steps, whenever gen_length or block_length change: the asked steps per generated token are
// kept, rounded to a multiple of the number of blocks, between num_blocks and gen_length.
//
// The minimum: gen_length is never reduced below min(asked gen_length, ClampOptions::
// min_gen_length). When nothing fits at that minimum (every block_length tried, and under
// extreme every lever pulled) the result is ResourceExhausted naming the bytes needed at the
// minimum and the budget. Every returned request passes generation::ValidateParams (gen_length %
// block_length == 0, steps % num_blocks == 0, steps <= gen_length, prompt + gen_length <=
// max_sequence_length).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/generation/params.h"
#include "common/fitting/memory_model.h"
#include "common/util/status.h"

namespace unmask::fitting {

enum class ClampPolicy { kOff, kStandard, kExtreme };
// "off" | "standard" | "extreme" (case-insensitive); InvalidArgument lists them.
StatusOr<ClampPolicy> ParseClampPolicy(const std::string& text);
const char* ClampPolicyName(ClampPolicy policy);

// What a request asks for, as far as memory goes.
struct GenerationRequest {
  // What Clamp may change: gen_length, block_length, steps, temperature, cfg_scale, sampler,
  // attention_query_chunk (0 = full attention); the rest is carried through.
  generation::GenerationParams params;
  std::int64_t batch = 1;  // rows the executor runs together; never changed by Clamp
  // The tokens around the generated region: the prompt, and an infilling suffix after the region
  // (it costs what prompt tokens cost). A template's length is kept with ClampOptions::min_gen_length.
  std::int64_t prompt_length = 0;
  int compute_dtype_bytes = 4;  // the executor's: fp32 4, bf16 / fp16 2
};

// The memory model's view of a request (weights and scratch set by the caller).
RequestShape ShapeOf(const GenerationRequest& request);

// One change. field: "gen_length", "block_length", "steps", "sampler", "attention_query_chunk",
// "temperature", "cfg_scale"; or "memory" for policy off's notice (asked == applied).
struct Adjustment {
  std::string field;
  std::string asked;
  std::string applied;
  std::string reason;
};

struct ClampResult {
  GenerationRequest applied;  // what will run
  std::vector<Adjustment> adjustments;
  MemoryEstimate estimate;    // of `applied`, weights included
  std::uint64_t budget_bytes = 0;
  bool fits = true;           // false only under policy off
};

struct ClampOptions {
  // gen_length is not reduced below min(asked, this): a shorter answer is of no use.
  std::int64_t min_gen_length = 16;
};

// budget_bytes: what the device has for this model, weights included (free memory plus the
// segment when the executor already holds it, minus a reserve); weights_bytes: the weight
// segment (WeightBytes or the manifest's segment_bytes), plus DequantScratchBytes for a
// quantized model; pass 0 when budget_bytes already excludes them. Errors: InvalidArgument for a request
// that generation::ValidateParams would refuse for any other reason than its length, or whose
// prompt leaves no room below max_sequence_length; ResourceExhausted as above.
StatusOr<ClampResult> Clamp(const checkpoint::LladaConfig& config, const GenerationRequest& asked,
                            std::uint64_t budget_bytes, std::uint64_t weights_bytes, ClampPolicy policy,
                            const ClampOptions& options = {});

}  // namespace unmask::fitting
