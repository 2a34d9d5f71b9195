// Log-probabilities in the OpenAI shapes (GenerationParams.logprobs; the scheduler core reports
// each committed token's log-probability and its k most likely alternatives, TokenLogprob).
//
//   /v1/completions       {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob, ...}, ...],
//                          "text_offset": [...]}: the choice's tokens in order, each alternative
//                          object most likely first (at most k entries)
//   /v1/chat/completions  {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}
//
// Token strings are each id decoded alone, special tokens as their text ("<|eot_id|>"); `bytes`
// are that string's UTF-8 bytes (a token holding half a character shows U+FFFD: the tokenizer
// has no raw bytes per token). A token with no log-probability (a prompt token echoed: a
// diffusion model gives none for its prompt; a template's fixed token) has null logprob and
// null top_logprobs (chat: [] top_logprobs), so that the tokens still cover the whole text and
// `text_offset` (code points into the choice's text, as a Python client indexes it) stays true.
// -inf is sent as -9999.0 (JSON has no infinity), as OpenAI does.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "services/scheduler/http/openai_request.h"
#include "unmask/v1/generation.pb.h"

namespace unmask::scheduler::http {

struct LogprobToken {
  std::int64_t id = 0;
  std::string piece;                          // the text it adds to the choice's text
  std::optional<v1::TokenLogprob> logprob;    // none: a prompt token, a template's fixed token
};

// The endpoint's shape of `tokens`; completions' text offsets start at `offset` (the code points
// of the choice's text before the first of them).
nlohmann::json LogprobsJson(Endpoint endpoint, const tokenizer::Tokenizer* tokenizer,
                            const std::vector<LogprobToken>& tokens, std::size_t offset);

// vLLM's `prompt_logprobs` (OpenAiRequest::prompt_logprobs): one entry per prompt token (of
// `prompt_tokens`), null for the first (nothing comes before it) and for a position not scored,
// else {"<id>": {"logprob", "rank", "decoded_token"}} for the prompt's token and its k most likely
// alternatives (at most k of those given). rank is vLLM's, 1 + the tokens strictly more likely
// (the prompt token's own may be beyond k; null where the executor did not say); decoded_token
// the id decoded alone, null without a tokenizer.
nlohmann::json VllmPromptLogprobs(const google::protobuf::RepeatedPtrField<v1::TokenLogprob>& logprobs,
                                  std::int64_t prompt_tokens, int k, const tokenizer::Tokenizer* tokenizer);

// A response or chunk as JSON text. nlohmann's objects keep their keys sorted, so completions'
// top_logprobs objects are written most likely first here (as OpenAI's are); the rest as dump().
std::string DumpJson(const nlohmann::json& body);

}  // namespace unmask::scheduler::http
