// The text of a job as its diffusion steps arrive, for streaming: a diffusion model unmasks
// positions in any order, so text is final only as far as every position is unmasked. Each step
// yields the newly final text (the decoded prefix up to the first still-masked position, EOS or
// EOT), so the deltas concatenate to exactly the final text. Stop strings cut the text at the
// first occurrence; text that could still turn out to begin a stop string is held back until it
// cannot, and so is a trailing incomplete UTF-8 character.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace unmask::scheduler::http {

struct TokenIds {
  std::int64_t mask = 0;
  std::int64_t eos = -1;
  std::int64_t eot = -1;
};

class StreamedText {
 public:
  // `tokenizer` may be null (a model served without tokenizer.json): the text is then empty.
  StreamedText(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, TokenIds ids, std::int64_t gen_length,
               std::vector<std::string> stop);

  // Records the tokens one step unmasked (positions relative to the end of the prompt) and
  // returns the text that became final with them ("" when none did).
  std::string OnStep(const std::vector<std::int64_t>& positions, const std::vector<std::int64_t>& tokens);

  struct Final {
    std::string delta;          // what OnStep has not returned yet
    std::string text;           // the whole text, cut at a stop string
    std::string finish_reason;  // "stop" (EOS / EOT / a stop string) or "length"
  };
  // The job's result: `ids` as the executor returned them (cut at EOS / EOT when it ended there)
  // and its finish reason ("eos" or "length").
  Final Finish(const std::vector<std::int64_t>& ids, const std::string& core_finish_reason);

  // The text of `ids` alone: special tokens and ids the tokenizer does not know are left out.
  std::string Decode(const std::vector<std::int64_t>& ids) const;

 private:
  // `text` cut at the first stop string; `*stopped` says whether one was found.
  std::string CutAtStop(const std::string& text, bool* stopped) const;

  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  TokenIds ids_;
  std::vector<std::int64_t> tokens_;
  std::vector<std::string> stop_;
  std::string emitted_;
  bool stopped_ = false;  // a stop string or EOS / EOT is final: nothing more is streamed
};

}  // namespace unmask::scheduler::http
