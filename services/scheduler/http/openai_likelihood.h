// unmask's `likelihood` extension of /v1/completions: the official Monte Carlo estimate of a
// continuation's log-likelihood given the prompt (GenerationParams.likelihood), for evaluation
// harnesses. The body:
//   {"model": ..., "prompt": "context text", "likelihood": {"continuation": " its continuation",
//    "mc_num": 128, "batch_size": 16, "check_greedy": false}}
// or a prompt of token ids with "continuation_tokens": N (its last N ids). The answer is one
// choice with text "" and "likelihood": {"loglikelihood", "standard_error", "samples",
// "continuation_tokens", "is_greedy" (with check_greedy)}; usage counts the context and the
// continuation as prompt tokens and none as completion tokens. Nothing is generated, so
// max_tokens (other than 0), echo, logprobs, stream, stop, suffix, template, steps, block_length
// and n > 1 are refused with it, by name; chat refuses the field.
#pragma once

#include <nlohmann/json.hpp>

#include "common/util/status.h"
#include "services/scheduler/http/openai_request.h"

namespace unmask::scheduler::http {

// Reads `likelihood` (absent: nothing) into out.generate (params.likelihood, continuation) and
// sets out.likelihood. Runs after the prompt and the output fields were read.
Status ParseLikelihoodField(const nlohmann::ordered_json& body, Endpoint endpoint, OpenAiRequest& out);

// A completed likelihood job's "likelihood" member (null without one).
nlohmann::ordered_json LikelihoodJson(const v1::Completed& completed);

}  // namespace unmask::scheduler::http
