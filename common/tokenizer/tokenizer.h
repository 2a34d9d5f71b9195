// A Hugging Face tokenizer.json reader: encode text to ids and decode ids to text, matching the
// `tokenizers` library on the features LLaDA-style (byte-level BPE) tokenizers use.
//
// Supported tokenizer.json parts:
//   model          BPE: vocab, merges ("a b" strings or ["a", "b"] pairs), unk_token, fuse_unk,
//                  byte_fallback, continuing_subword_prefix, end_of_word_suffix, ignore_merges.
//                  dropout is ignored (always the deterministic, dropout-free encoding).
//   added_tokens   id, content, special, lstrip, rstrip, normalized, single_word.
//   normalizer     NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Strip, StripAccents,
//                  ByteLevel, Sequence.
//   pre_tokenizer  ByteLevel (add_prefix_space, use_regex), Split (String/Regex pattern, the five
//                  behaviors, invert), Digits, Whitespace, WhitespaceSplit, Punctuation, Metaspace,
//                  Sequence.
//   decoder        ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, Sequence.
//   post_processor ignored: Encode never adds BOS/EOS or other template tokens (the LLaDA chat
//                  template writes its BOS itself). ByteLevel's post-processing only trims
//                  offsets, which this library does not produce.
//   truncation, padding: ignored (callers decide lengths).
// Other model / normalizer / pre-tokenizer / decoder types are refused when the file is loaded.
//
// Divergences from `tokenizers`, all outside what byte-level BPE files exercise: no offsets are
// computed; when special-token parsing is off, special tokens are simply not matched (so a
// non-special added token overlapping one can still match); an added token whose content is in
// model.vocab under a different id is refused instead of silently taking the vocab's id.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/util/status.h"

namespace unmask::tokenizer {

class AddedVocabulary;
class BpeModel;
class Decoder;
enum class DecodeOutput;  // decoders.h
class Normalizer;
class PreTokenizer;

class Tokenizer {
 public:
  // Loads a tokenizer.json file. NotFound when it cannot be read; InvalidArgument (or
  // Unimplemented for recognized but unsupported types) when it is malformed. Every message
  // starts with the path and names the offending field, e.g.
  // "x/tokenizer.json: model.merges[7] ('a' 'b'): 'b' is not in the vocabulary".
  static StatusOr<std::unique_ptr<Tokenizer>> FromFile(const std::string& path);
  // Same from the JSON text; `source` names it in error messages.
  static StatusOr<std::unique_ptr<Tokenizer>> FromJson(std::string_view json, const std::string& source);
  // The tokenizer a Hugging Face checkpoint directory ships: its tokenizer.json, or, when it has
  // none, a slow tokenizer's files (vocab.json, merges.txt, tokenizer_config.json naming the
  // tokenizer_class; added tokens from its added_tokens_decoder or added_tokens.json), converted
  // as transformers converts them (Qwen2Tokenizer and Dream's DreamTokenizer: NFC and Qwen2's split
  // pattern; GPT2Tokenizer: GPT-2's). Dream-v0 ships that layout. Errors name the file and the
  // field or line ("d/merges.txt: line 7: 'b' is not in vocab.json").
  static StatusOr<std::unique_ptr<Tokenizer>> FromDirectory(const std::string& dir);
  // FromDirectory for a directory, FromFile otherwise (a tokenizer.json).
  static StatusOr<std::unique_ptr<Tokenizer>> FromPath(const std::string& path);
  // Whether `dir` has a tokenizer FromDirectory would try: tokenizer.json, or vocab.json with
  // merges.txt.
  static bool DirectoryHasTokenizer(const std::string& dir);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Encodes UTF-8 `text`: added tokens are cut out first (leftmost-longest; special ones only
  // when `parse_special_tokens`), the rest is normalized, pre-tokenized and BPE-merged.
  // Invalid UTF-8 gives InvalidArgument naming the byte offset where the first ill-formed
  // sequence starts ("... at byte offset 5 (byte 0xC3)"); nothing is encoded then.
  // Thread-safe (the word cache is internally locked).
  StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool parse_special_tokens) const;

  // Decodes ids to text. With `skip_special_tokens`, added tokens flagged special are left out.
  // An id that is neither in the vocabulary nor an added token gives InvalidArgument naming the
  // id and its position. Byte sequences that are not valid UTF-8 (e.g. half a character) decode
  // to U+FFFD, as in tokenizers. No "clean-up of tokenization spaces" is applied.
  StatusOr<std::string> Decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
  StatusOr<std::string> Decode(const int32_t* ids, size_t count, bool skip_special_tokens) const;
  // The bytes `ids` decode to, special tokens included, where Decode would put U+FFFD kept as
  // they are: a token holding half a UTF-8 character gives those bytes (OpenAI's logprobs
  // `bytes`). Where Decode gives valid text without U+FFFD, the same bytes. Errors as Decode.
  StatusOr<std::string> DecodeBytes(const std::vector<int32_t>& ids) const;

  // The id of a token string (added tokens first, then the model vocabulary).
  std::optional<int32_t> TokenToId(std::string_view token) const;
  // The token string of an id (added-token content or vocabulary entry, e.g. "Ġthe").
  std::optional<std::string> IdToToken(int32_t id) const;
  // Whether `id` is an added token flagged special.
  bool IsSpecialToken(int32_t id) const;
  // One past the largest id the tokenizer can produce (the embedding rows it needs).
  int32_t id_limit() const { return id_limit_; }
  // Where the tokenizer was loaded from (path or the `source` given to FromJson).
  const std::string& source() const { return source_; }

 private:
  Tokenizer();
  Status EncodeSegment(std::string_view raw, bool at_start, bool parse_special, std::vector<int32_t>* ids) const;
  Status EncodeWords(std::string text, bool at_start, std::vector<int32_t>* ids) const;
  StatusOr<std::string> DecodeAs(const int32_t* ids, size_t count, bool skip_special_tokens, DecodeOutput output) const;

  std::string source_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<AddedVocabulary> added_;
  std::unique_ptr<Normalizer> normalizer_;      // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer_;  // may be null
  std::unique_ptr<Decoder> decoder_;            // may be null: tokens are joined with ' '
  int32_t id_limit_ = 0;
};

}  // namespace unmask::tokenizer
