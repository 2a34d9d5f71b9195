// The BPE model of tokenizer.json: a vocabulary and a ranked list of merges.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/util/status.h"

namespace unmask::tokenizer {

// Token ids are below 2^24, the largest vocab_size config.json accepts (LLaDA: 126464). A
// tokenizer.json with a larger id is refused: a table indexed by id would not fit in memory.
inline constexpr int64_t kTokenIdLimit = int64_t{1} << 24;

struct BpeOptions {
  std::optional<std::string> unk_token;   // emitted for characters missing from the vocabulary
  std::string continuing_subword_prefix;  // prepended to every symbol but a word's first
  std::string end_of_word_suffix;         // appended to a word's last symbol
  bool fuse_unk = false;                  // consecutive unknown characters give one unk
  bool byte_fallback = false;             // unknown characters become "<0xXX>" byte tokens
  bool ignore_merges = false;             // a word that is itself in the vocabulary is one token
};

class BpeModel {
 public:
  // `merges` are pairs of token strings in rank order (rank = index). Fails when a merge names a
  // token that is not in `vocab`, or its result is not in `vocab`; the message says which merge.
  static StatusOr<std::unique_ptr<BpeModel>> Create(BpeOptions options,
                                                    std::vector<std::pair<std::string, int32_t>> vocab,
                                                    const std::vector<std::pair<std::string, std::string>>& merges);

  // Appends the ids of one pre-tokenized word. Thread-safe; results for words up to
  // kMaxCachedWordBytes are cached (the cache is bounded and cleared when full).
  //
  // As in tokenizers, a character that is neither in the vocabulary nor covered by byte_fallback
  // becomes unk_token, or is dropped when the model has no unk_token.
  void Tokenize(std::string_view word, std::vector<int32_t>* out) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // The token string of `id`, or null when no token has that id.
  const std::string* IdToToken(int32_t id) const;
  // One past the largest id in the vocabulary.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }
  size_t vocab_size() const { return vocab_.size(); }

  static constexpr size_t kMaxCachedWordBytes = 256;
  static constexpr size_t kCacheCapacity = 1 << 16;

 private:
  struct MergeInfo {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  BpeModel() = default;
  // Splits `word` into initial symbols (characters, with unk / byte-fallback handling).
  void InitialSymbols(std::string_view word, std::vector<int32_t>* ids) const;
  // Applies merges, lowest rank first (leftmost first among equal ranks), in place.
  void MergeAll(std::vector<int32_t>* ids) const;
  std::optional<int32_t> CharId(std::string_view ch, bool first, bool last) const;

  BpeOptions options_;
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::vector<int32_t> small_char_ids_;  // id of each code point below 0x800 that is a token
  std::array<int32_t, 256> byte_ids_{};  // id of "<0xXX>", or -1
  std::optional<int32_t> unk_id_;
  std::unordered_map<uint64_t, MergeInfo> merges_;

  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace unmask::tokenizer
