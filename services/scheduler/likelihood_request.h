// A likelihood request (GenerationParams.likelihood): what the public API takes and how the
// scheduler turns it into a job that generates nothing. gRPC-free.
#pragma once

#include <cstdint>

#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {

// The request's own rules are request_validation.h's ValidateLikelihoodRequest.

// The params a job that generates nothing (params.likelihood or params.score_only) runs with:
// params.likelihood.continuation_tokens set (for a text prompt, as `continuation_tokens`), and one
// generated position (gen_length = block_length = steps = 1) that is never run, so that the clamp
// and the executor see a sequence of the prompt's length. Other requests: unchanged.
v1::GenerationParams LikelihoodJobParams(v1::GenerationParams asked, std::int64_t continuation_tokens);

}  // namespace unmask::scheduler
