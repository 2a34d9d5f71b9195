// Field-by-field validation of the public GenerateRequest: every bad value is refused with
// InvalidArgument naming the field and the allowed range (the generation parameters by the
// generation library's rules, common/generation/validate.h). Checks that need the model (vocabulary,
// max_sequence_length, divisibility after clamping) happen later, against the model's config.
#pragma once

#include "common/generation/params.h"
#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {

constexpr int kMinPriority = -10;
constexpr int kMaxPriority = 10;
using generation::kMaxGenLength;
constexpr double kMaxDeadlineSeconds = 7 * 24 * 3600.0;
constexpr std::size_t kMaxPromptBytes = 1 << 20;  // the ceiling of --max-prompt-bytes (RequestLimits)
constexpr std::size_t kMaxIdempotencyKey = 128;
constexpr int kMaxChoices = 16;  // GenerateRequest.n: samples of one prompt, each a job

Status ValidateGenerateRequest(const v1::GenerateRequest& request);

// A likelihood request's own rules (ValidateGenerateRequest runs them): `continuation` only with
// params.likelihood; with it a text prompt gives the continuation's text
// (params.likelihood.continuation_tokens unset: the scheduler counts them), an ids prompt the
// count (no text), a chat prompt is refused; no suffix, template or n > 1; gen_length,
// block_length and steps unset (nothing is generated). Errors name the field. A score_only
// request (params.score_only) follows the last two rules too.
Status ValidateLikelihoodRequest(const v1::GenerateRequest& request);

// Each tool message answers a call the last assistant message before it made (OpenAI's rule);
// the error names "<prefix>[i].tool_call_id" (prefix: the messages' field in the API at hand).
Status ValidateToolAnswers(const google::protobuf::RepeatedPtrField<v1::ChatMessage>& messages,
                           const std::string& prefix);

// The choices a request asks for: its n, 0 (unset) meaning 1.
inline int ChoiceCount(const v1::GenerateRequest& request) { return request.n() > 0 ? request.n() : 1; }

}  // namespace unmask::scheduler
