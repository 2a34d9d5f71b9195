// Decoders: turn the token strings of a sequence of ids back into text. Each decoder rewrites the
// list of token strings (Hugging Face's decode_chain); the tokenizer concatenates the result.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/regex.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

// What the byte decoders (ByteLevel, ByteFallback) make of bytes that are not valid UTF-8:
//  - kText: U+FFFD, as Hugging Face tokenizers' decode does;
//  - kBytes: the bytes themselves, carried through the rest of the chain as code points
//    (utf8.h, CarryInvalidBytes) for the caller to restore: a token's exact bytes (OpenAI's
//    logprobs `bytes`), also where it holds half a character.
enum class DecodeOutput { kText, kBytes };

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual Status DecodeChain(std::vector<std::string>* tokens, DecodeOutput output) const = 0;
};

// ByteLevel: maps byte-level characters back to bytes and joins everything into one string,
// replacing invalid UTF-8 by U+FFFD (kBytes: carrying it). A token containing a character
// outside the byte-level alphabet is kept as its own UTF-8 text (what tokenizers does, e.g. for
// added tokens).
std::unique_ptr<Decoder> NewByteLevelDecoder();
// ByteFallback: runs of "<0xXX>" tokens become the bytes they name; an invalid UTF-8 run becomes
// one U+FFFD per byte token (kBytes: each token's byte, carried).
std::unique_ptr<Decoder> NewByteFallbackDecoder();
// Fuse: joins all tokens into one.
std::unique_ptr<Decoder> NewFuseDecoder();
// Strip: removes up to `start` leading and `stop` trailing `content` characters from each token.
std::unique_ptr<Decoder> NewStripDecoder(char32_t content, size_t start, size_t stop);
// Replace: replaces every match of `pattern` in each token by `content`.
std::unique_ptr<Decoder> NewReplaceDecoder(Pattern pattern, std::string content);
// Metaspace: `replacement` becomes ' '; in the first token it is dropped instead when
// `strip_first` (prepend_scheme is not "never"), undoing the prepended space.
std::unique_ptr<Decoder> NewMetaspaceDecoder(char32_t replacement, bool strip_first);
// Applies each decoder in order.
std::unique_ptr<Decoder> NewSequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts);

}  // namespace unmask::tokenizer
