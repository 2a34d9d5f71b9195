// Added tokens (tokenizer.json "added_tokens"): strings that are cut out of the input before
// normalization and pre-tokenization and map straight to one id, like "<|eot_id|>".
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/tokenizer/normalizers.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;  // match only when not inside a word (no \w character on either side)
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // the match swallows whitespace on its right
  bool normalized = false;   // matched against normalized text (else against the raw input)
  bool special = false;      // split out only with special-token parsing on; skippable in decode
};

// One cut of a split: a byte range of the text and the added token it is, or -1 for plain text.
struct Segment {
  size_t begin = 0;
  size_t end = 0;
  int32_t id = -1;
};

class AddedVocabulary {
 public:
  // Builds the matchers. Tokens with normalized=true are matched on normalized text, so their
  // content is normalized with `normalizer` (may be null) first, as tokenizers does.
  Status Build(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Cuts `text` at the added tokens of one pass: `normalized_pass` false matches the tokens with
  // normalized=false against raw input, true the others against normalized text. Matching is
  // leftmost-longest; special tokens are ignored unless `parse_special`. The segments cover the
  // text in order; empty ones are omitted.
  void Split(std::string_view text, bool normalized_pass, bool parse_special, std::vector<Segment>* out) const;

  bool has_normalized_tokens() const { return !normalized_.nodes.empty(); }
  bool empty() const { return tokens_.empty(); }
  const AddedToken* FindById(int32_t id) const;
  const AddedToken* FindByContent(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // A byte trie over token contents. Node 0 is the root; `first` indexes the root's children by
  // byte so that scanning text without any token start costs one table load per byte.
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
      int32_t token = -1;                                       // index into tokens_
    };
    std::vector<Node> nodes;
    std::array<int32_t, 256> first{};
    void Insert(std::string_view key, int32_t token);
  };

  // Longest token of `trie` starting at text[pos] that is allowed (special only when
  // parse_special); returns its index into tokens_ and its length, or -1.
  int32_t LongestAt(const Trie& trie, std::string_view text, size_t pos, bool parse_special, size_t* len) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
  Trie raw_;
  Trie normalized_;
};

}  // namespace unmask::tokenizer
