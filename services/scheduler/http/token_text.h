// Token-level text for logprobs: the string of one token, and the text each token of a sequence
// adds to the sequence's decoded text (so that a completion's `text_offset` is true and a stream
// chunk can carry exactly the tokens whose text it completes).
//
// Decoding is not per token: a byte-level token may hold half a UTF-8 character, a Metaspace
// decoder drops the first token's leading space, special tokens may be skipped. TokenPieces
// therefore decodes incrementally (as vLLM's detokenizer does): token j's piece is the text that
// decoding a short window ending at j adds to decoding the same window without j, and a token
// whose text ends in half a character adds nothing until a later token completes it (that one
// then adds the whole character). The pieces concatenate to Decode(ids).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace unmask::scheduler::http {

// The text of ids[begin, end): ids the tokenizer does not know are left out; "" without a
// tokenizer.
std::string DecodeIds(const tokenizer::Tokenizer* tokenizer, const std::vector<std::int64_t>& ids, std::size_t begin,
                      std::size_t end, bool skip_special_tokens);
inline std::string DecodeIds(const tokenizer::Tokenizer* tokenizer, const std::vector<std::int64_t>& ids,
                             bool skip_special_tokens) {
  return DecodeIds(tokenizer, ids, 0, ids.size(), skip_special_tokens);
}

// One token decoded alone, special tokens as their text ("<|eot_id|>"). Without a tokenizer, or
// for an id it does not know: "token_id:<id>".
std::string TokenString(const tokenizer::Tokenizer* tokenizer, std::int64_t id);

// The bytes of one token decoded alone: TokenString's, except that a token holding part of a
// UTF-8 character gives those bytes where TokenString has U+FFFD (OpenAI's logprobs `bytes`:
// the bytes of consecutive tokens join into the text's UTF-8).
std::string TokenBytes(const tokenizer::Tokenizer* tokenizer, std::int64_t id);

// Unicode code points in UTF-8 text (what a Python client indexes its text by).
std::size_t CodePoints(std::string_view utf8);

// The pieces of a growing sequence, extended as it grows.
class TokenPieces {
 public:
  TokenPieces(const tokenizer::Tokenizer* tokenizer, bool skip_special_tokens)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

  // The pieces of `ids` (one per id): extends the pieces of the ids seen before, or starts over
  // when one of those changed. The last pieces may be "" while their text ends in half a
  // character.
  const std::vector<std::string>& Update(const std::vector<std::int64_t>& ids);

  // The pieces of a finished sequence: as Update, then text still pending (a character never
  // completed) goes to the last token, so that the pieces concatenate to Decode(ids).
  static std::vector<std::string> Of(const tokenizer::Tokenizer* tokenizer, const std::vector<std::int64_t>& ids,
                                     bool skip_special_tokens);

 private:
  void Extend(std::int64_t id);

  const tokenizer::Tokenizer* tokenizer_;
  bool skip_special_;
  std::vector<std::int64_t> ids_;
  std::vector<std::string> pieces_;
  std::size_t prefix_ = 0;  // the window's start
  std::size_t read_ = 0;    // the ids whose text is in the pieces
};

}  // namespace unmask::scheduler::http
