// OpenAI response bodies and stream chunks, plus unmask's extension under the key "unmask":
// on a response and on the first chunk the job id, the parameters as they run and what the
// memory clamp changed ({"clamped": [{field, asked, applied, reason}]}); on every step chunk the
// diffusion step ({"step", "block", "step_in_block", "positions", "tokens"}).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "services/scheduler/http/openai_request.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler::http {

// What every body of one completion shares.
struct CompletionIdentity {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string id;            // "chatcmpl-<job id>" or "cmpl-<job id>"
  std::int64_t created = 0;  // unix seconds
  std::string model;
};
CompletionIdentity MakeIdentity(Endpoint endpoint, const std::string& job_id, std::int64_t created, const std::string& model);

nlohmann::json Usage(std::int64_t prompt_tokens, std::int64_t completion_tokens);

// {"job_id", "params": {...as run}, "clamped": [...], "device_class"}, and "job_ids" (every
// choice's job, by index) for a request with n > 1.
nlohmann::json AcceptedExtension(const v1::SubmitResponse& submitted);
// The X-Unmask-Clamped header: "field=asked->applied" joined by ", ", or "none".
std::string ClampedHeader(const v1::Accepted& accepted);

// The whole response of a non-streamed request: one choice, or (n > 1) `choices` as indexes
// 0..n-1. `logprobs` is the choice's (choice_output.h), null when none were asked.
struct ChoiceText {
  std::string text;
  std::string finish_reason;
  nlohmann::json logprobs = nullptr;
  nlohmann::json tool_calls = nullptr;  // chat: message.tool_calls (then content is null when blank)
  nlohmann::json likelihood = nullptr;  // completions' likelihood extension (openai_likelihood.h)
  // vLLM's prompt_logprobs (VllmPromptLogprobs): completions' choice field; chat's response
  // field (vLLM's place; the choices share the prompt, so the first choice's).
  nlohmann::json prompt_logprobs = nullptr;
};
nlohmann::json CompletionResponse(const CompletionIdentity& id, const std::vector<ChoiceText>& choices,
                                  const nlohmann::json& usage, const nlohmann::json& extension);
nlohmann::json CompletionResponse(const CompletionIdentity& id, const std::string& text, const std::string& finish_reason,
                                  const nlohmann::json& usage, const nlohmann::json& extension);

// One stream chunk of choice `index`. Chat: `delta` is the delta object ({"role": "assistant",
// "content": ""} on the first chunk, {"content": "..."} or {} after); completions: `text`.
// `finish_reason` null until the choice's last chunk; `extension` null for none; `logprobs` those
// of the tokens whose text the chunk adds (null for none).
nlohmann::json ChatChunk(const CompletionIdentity& id, const nlohmann::json& delta, const nlohmann::json& finish_reason,
                         const nlohmann::json& extension, int index = 0, const nlohmann::json& logprobs = nullptr);
nlohmann::json TextChunk(const CompletionIdentity& id, const std::string& text, const nlohmann::json& finish_reason,
                         const nlohmann::json& extension, int index = 0, const nlohmann::json& logprobs = nullptr);
// A chunk of either kind carrying new text (chat: {"content": text}, or {} when text is empty).
// A choice's last chunk: TextDeltaChunk, with `tool_calls` (non-null) in the chat delta as
// OpenAI streams them, each with its index.
nlohmann::json LastDeltaChunk(const CompletionIdentity& id, const std::string& text, const nlohmann::json& tool_calls,
                              const nlohmann::json& finish_reason, const nlohmann::json& extension, int index,
                              const nlohmann::json& logprobs);
nlohmann::json TextDeltaChunk(const CompletionIdentity& id, const std::string& text, const nlohmann::json& finish_reason,
                              const nlohmann::json& extension, int index = 0, const nlohmann::json& logprobs = nullptr);
// The first chunk of choice `index` (chat: the assistant's role; completions: no text yet).
// `text`: what is final before any step (completions' echoed prompt, a template's text before
// its first hole), with its `logprobs`.
nlohmann::json FirstChunk(const CompletionIdentity& id, const nlohmann::json& extension, int index = 0,
                          const std::string& text = "", const nlohmann::json& logprobs = nullptr);
// The last chunk of stream_options.include_usage: no choices, the usage.
nlohmann::json UsageChunk(const CompletionIdentity& id, const nlohmann::json& usage);

// {"step", "block", "step_in_block", "positions", "tokens"} of one diffusion step.
nlohmann::json StepExtension(const v1::StepEvent& step);

// GET /v1/models.
nlohmann::json ModelList(const v1::ListServedModelsResponse& models);

// Server-Sent Events framing (the payload written by DumpJson, logprobs_render.h).
std::string SseData(const nlohmann::json& payload);
inline constexpr char kSseDone[] = "data: [DONE]\n\n";
std::string SseComment(const std::string& text);

}  // namespace unmask::scheduler::http
