// OpenAI request bodies (POST /v1/chat/completions, /v1/completions) into the scheduler core's
// GenerateRequest, plus what the HTTP side itself needs (stream, stop strings). No gRPC and no
// HTTP library here: a JSON value in, a request or an InvalidArgument naming the field out.
//
// Field by field: `model`; `messages`, `tools`, `tool_choice` and `parallel_tool_calls` (chat:
// openai_chat_request.h) or `prompt` (completions: a string or an array of
// token ids); `max_tokens` (chat also `max_completion_tokens`) -> gen_length; `stop` (a string or
// up to 4 strings); `n` (1..16 choices: n jobs with seeds seed, seed + 1, ...); `temperature`; `seed`; `user`; `stream` and
// `stream_options.include_usage`. unmask's diffusion fields: `steps`, `block_length`, `sampler`,
// `threshold`, `factor`, `cfg_scale`, `remasking` ("low_confidence" | "random"), `priority`,
// `early_stop` (a boolean; absent or null = the default, on for the fast samplers), llada2's and
// llada21's `top_p`, `top_k`, `minimal_topk` and `eos_early_stop` (top_p 1 is accepted
// everywhere), llada21's `editing_threshold`, `max_post_steps`, `num_to_transfer`, `deadline_seconds`
// (from acceptance; a job still queued then expires, a running one is stopped: 504).
//
// What the output holds (choice_output.h): completions' `suffix` (a string: infilling, the text
// is the gap's) and `echo` (a boolean: the prompt first), `logprobs` (completions: an integer
// 0..20, the alternatives per token; chat: a boolean, with `top_logprobs` 0..20 only when it is
// true, OpenAI's rule) -> params.logprobs, and unmask's `template` (a string with "<hole:N>"
// markers, both endpoints: the answer is the template filled; for completions the prompt is the
// context before it, for chat it is the assistant's answer). The holes are checked by the
// scheduler core (its errors name template_text, `template` here). `suffix` and `echo` on chat,
// `top_logprobs` on completions and `stop` with a template are refused by name.
//
// Fields the API has but unmask cannot honour (`best_of` > 1, `logit_bias`, ...) are refused by
// name; other unknown fields are ignored, as OpenAI-compatible servers do.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler::http {

enum class Endpoint { kChatCompletions, kCompletions };

constexpr std::size_t kMaxStopStrings = 4;
constexpr std::size_t kMaxStopBytes = 256;
constexpr std::size_t kMaxUserBytes = 256;

struct OpenAiRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  v1::GenerateRequest generate;   // what goes to SchedulerCore::Accept
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage: a last chunk with usage
  std::vector<std::string> stop;  // the output is cut at the first of these
  std::string user;
  bool echo = false;              // completions: the prompt, then the completion
  std::int32_t logprobs = -1;     // -1: none; k: each token's logprob and k alternatives (params.logprobs)
  bool score_only = false;        // completions' max_tokens 0 with echo and logprobs: the prompt alone
  bool likelihood = false;        // completions' `likelihood` (openai_likelihood.h): an estimate, no text
  // vLLM's `prompt_logprobs` (both endpoints; not streamed): each prompt token's log-probability
  // with this many alternatives, in vLLM's shape (logprobs_render.h VllmPromptLogprobs); -1: none.
  std::int32_t prompt_logprobs = -1;
};

// The body as JSON (its objects in their order): InvalidArgument when it is not a JSON object.
StatusOr<nlohmann::ordered_json> ParseJsonBody(std::string_view body);

// InvalidArgument "<field>: <rule>, got <value>" for the first bad field.
StatusOr<OpenAiRequest> ParseOpenAiRequest(Endpoint endpoint, const nlohmann::ordered_json& body);

}  // namespace unmask::scheduler::http
