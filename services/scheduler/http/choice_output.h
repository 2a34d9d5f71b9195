// One choice's output as the HTTP API returns it, streamed or whole: the generated text (a
// suffix's gap, or a template filled), the prompt before it for completions' `echo`, and the
// logprobs of exactly the tokens of that text in the endpoint's shape (logprobs_render.h).
//
//   echo       /v1/completions: the text is the prompt (as given; token ids decoded with the
//              model's tokenizer, special tokens as their text) then the completion; streamed,
//              the prompt is the first chunk's text. With logprobs its tokens come first with
//              the executor's prompt log-probabilities (params.prompt_logprobs; the first token's
//              is null, as OpenAI's is); streamed, the first chunk then waits for them (they come
//              with the first step).
//   template   the text is the whole template, filled; its fixed tokens are in the logprobs
//              with null logprobs. Streamed as it fills (streamed_text.h): the first chunk
//              carries the fixed text up to the first hole.
//   logprobs   every chunk carries the logprobs of the tokens whose text it adds; the whole
//              response those of every token of the text.
//   tools      chat with tools (tool_calls.h): the text streams as content until a call may
//              begin ("<tool_call>", or a tail that could grow into it; nothing when tool_choice
//              forced a call's opening); the calls come in the last chunk, as OpenAI's tool_calls
//              with finish_reason "tool_calls". Output with no call that parses is content,
//              the forced opening first.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "services/scheduler/http/logprobs_render.h"
#include "services/scheduler/http/openai_request.h"
#include "services/scheduler/http/streamed_text.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler::http {

// What every choice of a request shares, decided at acceptance.
struct OutputPlan {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer;  // null: the model ships no tokenizer
  TokenIds token_ids;
  std::int64_t gen_length = 0;
  std::vector<std::string> stop;
  std::vector<std::int64_t> region;     // a template's tokens, kHoleId for holes; empty for none
  std::int32_t logprobs = -1;           // -1: none; k: logprobs with k alternatives
  bool echo = false;
  std::string echo_text;                // the prompt as text (echo)
  std::vector<std::int64_t> echo_ids;   // its tokens (echo with logprobs)
  bool score_only = false;              // max_tokens 0: the echoed prompt alone (the job's token dropped)
  v1::ToolUse tool_use;                 // chat with tools: the calls are read from the text
};

class ChoiceOutput {
 public:
  explicit ChoiceOutput(const OutputPlan& plan);

  struct Chunk {
    std::string text;
    nlohmann::json logprobs;  // null: none asked, or no token completed
  };
  // What the first chunk carries: the prompt echoed, a template's text up to its first hole.
  Chunk Begin();
  // Streamed: Begin waits for the prompt's log-probabilities (echo with logprobs), which come
  // with the first step or, failing that, the completion.
  bool BeginWaitsForPrompt() const { return plan_.echo && plan_.logprobs >= 0; }
  void OnPromptLogprobs(const google::protobuf::RepeatedPtrField<v1::TokenLogprob>& logprobs);
  // What one diffusion step made final.
  Chunk OnStep(const v1::StepEvent& step);

  struct Done {
    Chunk last;                 // the rest, for the last chunk
    std::string text;           // the choice's whole text (the prompt first with echo)
    nlohmann::json logprobs;    // all of them (null when none asked)
    std::string finish_reason;  // "stop", "length" or "tool_calls"
    nlohmann::json tool_calls;  // OpenAI's message.tool_calls; null for none
  };
  // `job_id`: the choice's job (the calls' ids are made from it).
  Done Finish(const v1::Completed& completed, const std::string& job_id);

 private:
  void Record(const v1::TokenLogprob& logprob, std::int64_t position);
  // The output's tokens [first, first + ids.size()) with their pieces and log-probabilities.
  std::vector<LogprobToken> Tokens(std::size_t first, const std::vector<std::int64_t>& ids,
                                   const std::vector<std::string>& pieces) const;
  std::vector<LogprobToken> EchoTokens() const;
  nlohmann::json Json(const std::vector<LogprobToken>& tokens, std::size_t offset) const;

  const OutputPlan& plan_;
  StreamedText text_;
  std::vector<std::optional<v1::TokenLogprob>> by_position_;  // the latest commit of each position
  std::vector<std::optional<v1::TokenLogprob>> prompt_;       // the echoed prompt's, by index
  std::size_t echo_chars_ = 0;                                // code points of the echoed prompt
  // Tools: what the output streamed so far, and how many of its bytes went out as content.
  std::string streamed_;
  std::size_t released_ = 0;
  std::string Release(const std::string& delta);
  void FinishToolCalls(const std::string& text, const std::string& job_id, Done& done) const;
};

}  // namespace unmask::scheduler::http
