// One choice's output as the HTTP API returns it, streamed or whole: the generated text (a
// suffix's gap, or a template filled), the prompt before it for completions' `echo`, and the
// logprobs of exactly the tokens of that text in the endpoint's shape (logprobs_render.h).
//
//   echo       /v1/completions: the text is the prompt (as given; token ids decoded with the
//              model's tokenizer, special tokens as their text) then the completion; streamed,
//              the prompt is the first chunk's text. With logprobs its tokens come first, with
//              null logprobs (a diffusion model gives none for a prompt).
//   template   the text is the whole template, filled; its fixed tokens are in the logprobs
//              with null logprobs. Streamed as it fills (streamed_text.h): the first chunk
//              carries the fixed text up to the first hole.
//   logprobs   every chunk carries the logprobs of the tokens whose text it adds; the whole
//              response those of every token of the text.
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
  // What one diffusion step made final.
  Chunk OnStep(const v1::StepEvent& step);

  struct Done {
    Chunk last;                 // the rest, for the last chunk
    std::string text;           // the choice's whole text (the prompt first with echo)
    nlohmann::json logprobs;    // all of them (null when none asked)
    std::string finish_reason;  // "stop" or "length"
  };
  Done Finish(const v1::Completed& completed);

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
  std::size_t echo_chars_ = 0;                                // code points of the echoed prompt
};

}  // namespace unmask::scheduler::http
