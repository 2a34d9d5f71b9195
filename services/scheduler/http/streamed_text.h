// The text of a job as its diffusion steps arrive, for streaming: a diffusion model unmasks
// positions in any order, so text is final only as far as every position is unmasked. Each step
// yields the newly final text (the decoded prefix up to the first still-masked position, EOS or
// EOT), so the deltas concatenate to exactly the final text. Stop strings cut the text at the
// first occurrence; text that could still turn out to begin a stop string is held back until it
// cannot, and so is a trailing incomplete UTF-8 character.
//
// Infilling (a suffix) changes nothing here: the output is the gap, streamed like any output.
// A template with holes (`region`: fixed ids, and kHole where the sampler fills) streams as the
// whole template fills, by the same rule: its fixed text up to the first hole is final before
// any step (Begin), each step makes final the text up to the first hole still masked, fixed text
// included, and the deltas add up to the whole filled template. An EOS in a hole does not end a
// template (its fixed text after it stays part of the answer): the EOS is left out of the text.
//
// With `track_tokens` (logprobs asked), each delta also says which of the output's tokens it
// completes: a token goes out with the delta that streams the last of its text (a token that
// adds no text of its own, half a character or a special token left out, with the next token
// that does), so every chunk carries exactly the tokens whose text it adds (token_text.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "services/scheduler/http/token_text.h"

namespace unmask::scheduler::http {

struct TokenIds {
  std::int64_t mask = 0;
  std::int64_t eos = -1;
  std::int64_t eot = -1;
};

constexpr std::int64_t kHoleId = -1;  // a hole in a template's region (generation::kHole)

class StreamedText {
 public:
  // `tokenizer` may be null (a model served without tokenizer.json): the text is then empty.
  // `region`: a template's tokens (gen_length entries, kHoleId for a hole), empty for none.
  StreamedText(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, TokenIds ids, std::int64_t gen_length,
               std::vector<std::string> stop, std::vector<std::int64_t> region = {}, bool track_tokens = false);

  // Newly final text, and (track_tokens) the output's tokens whose text it completes:
  // ids[k] is token first_token + k, pieces[k] the text it adds, text_offset the code points of
  // the output's text before first_token.
  struct Delta {
    std::string text;
    std::size_t first_token = 0;
    std::vector<std::int64_t> ids;
    std::vector<std::string> pieces;
    std::size_t text_offset = 0;
  };

  // What is final before any step: a template's fixed text up to its first hole.
  Delta Begin() { return Step({}, {}); }
  // Records the tokens one step unmasked (positions relative to the end of the prompt) and
  // returns what became final with them.
  Delta Step(const std::vector<std::int64_t>& positions, const std::vector<std::int64_t>& tokens);
  std::string OnStep(const std::vector<std::int64_t>& positions, const std::vector<std::int64_t>& tokens) {
    return Step(positions, tokens).text;
  }

  struct Final {
    std::string delta;          // what Step has not returned yet
    std::string text;           // the whole text, cut at a stop string
    std::string finish_reason;  // "stop" (EOS / EOT / a stop string; a template, filled) or "length"
    // track_tokens: the output's tokens the text covers, in order (up to the EOS / EOT that ended
    // it; cut at a stop string: those whose text begins before the cut), the text each adds (they
    // concatenate to `text`, the last one past a cut whole), and the first not yet in a Delta.
    std::vector<std::int64_t> ids;
    std::vector<std::string> pieces;
    std::size_t first_unsent = 0;
  };
  // The job's result: `ids` as the executor returned them (cut at EOS / EOT when it ended there;
  // a template: the whole region, or its holes' tokens in order) and its finish reason ("eos" or
  // "length").
  Final Finish(const std::vector<std::int64_t>& ids, const std::string& core_finish_reason);

  // The text of `ids` alone: special tokens and ids the tokenizer does not know are left out.
  std::string Decode(const std::vector<std::int64_t>& ids) const;

  bool is_template() const { return !region_.empty(); }

 private:
  // `text` cut at the first stop string; `*stopped` says whether one was found.
  std::string CutAtStop(const std::string& text, bool* stopped) const;
  // The longest tail of `text` a stop string could still begin with.
  std::size_t HeldBack(const std::string& text) const;
  // Moves the tokens whose text is all in emitted_ into `d`.
  void TakeTokens(const std::vector<std::int64_t>& prefix, Delta& d);
  // A template's output from the executor's ids.
  std::vector<std::int64_t> TemplateOutput(const std::vector<std::int64_t>& ids) const;

  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  TokenIds ids_;
  std::vector<std::int64_t> region_;
  std::vector<std::int64_t> tokens_;
  std::vector<std::string> stop_;
  std::string emitted_;
  bool stopped_ = false;  // a stop string or EOS / EOT is final: nothing more is streamed
  bool track_tokens_ = false;
  TokenPieces pieces_;
  std::size_t sent_tokens_ = 0;       // tokens already in a Delta
  std::size_t sent_token_bytes_ = 0;  // their text's bytes
  std::size_t sent_token_chars_ = 0;  // and code points
};

}  // namespace unmask::scheduler::http
