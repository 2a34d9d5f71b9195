#include "common/tokenizer/bpe_trainer.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <unordered_map>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/pre_tokenizers.h"
#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

struct Word {
  std::vector<int> symbols;
  std::int64_t count = 0;
};

using Pair = std::pair<int, int>;

struct PairHash {
  size_t operator()(const Pair& p) const { return std::hash<std::uint64_t>()((std::uint64_t(p.first) << 32) | unsigned(p.second)); }
};

// Splits a byte-level word into its characters (each one UTF-8 code point).
std::vector<std::string> Characters(const std::string& word) {
  std::vector<std::string> out;
  for (size_t i = 0; i < word.size(); ++i) {
    if ((static_cast<unsigned char>(word[i]) & 0xC0) != 0x80 || out.empty()) out.emplace_back();
    out.back() += word[i];
  }
  return out;
}

StatusOr<std::map<std::string, std::int64_t>> CountWords(const std::vector<std::string>& texts) {
  UNMASK_ASSIGN_OR_RETURN(auto pre, NewByteLevelPreTokenizer(/*add_prefix_space=*/false, /*use_regex=*/true));
  std::map<std::string, std::int64_t> counts;
  for (size_t i = 0; i < texts.size(); ++i) {
    const size_t bad = FindInvalidUtf8(texts[i]);
    if (bad != kNoInvalidUtf8)
      return InvalidArgumentError("BPE training: text " + std::to_string(i) + " is not valid UTF-8 at byte offset " +
                                  std::to_string(bad));
    std::vector<Piece> pieces{{texts[i], true}};
    UNMASK_RETURN_IF_ERROR(pre->PreTokenize(&pieces));
    for (const auto& p : pieces) ++counts[p.text];
  }
  return counts;
}

Status CheckOptions(const BpeTrainerOptions& o) {
  std::set<std::string> seen;
  for (size_t i = 0; i < o.special_tokens.size(); ++i) {
    const auto& s = o.special_tokens[i];
    if (s.empty()) return InvalidArgumentError("BPE training: special_tokens[" + std::to_string(i) + "] is empty");
    if (!seen.insert(s).second) return InvalidArgumentError("BPE training: special token '" + s + "' is given twice");
  }
  const std::int64_t floor = static_cast<std::int64_t>(o.special_tokens.size()) + 256;
  if (o.vocab_size < floor)
    return InvalidArgumentError("BPE training: vocab_size " + std::to_string(o.vocab_size) + " is too small for the " +
                                std::to_string(o.special_tokens.size()) + " special tokens and 256 byte characters (at least " +
                                std::to_string(floor) + ")");
  if (o.min_frequency < 1) return InvalidArgumentError("BPE training: min_frequency must be at least 1");
  return OkStatus();
}

using PairCounts = std::unordered_map<Pair, std::int64_t, PairHash>;

void AddPairs(PairCounts& pair_counts, const Word& w, std::int64_t sign) {
  for (size_t i = 0; i + 1 < w.symbols.size(); ++i) pair_counts[{w.symbols[i], w.symbols[i + 1]}] += sign * w.count;
}

// The most frequent pair; ties go to the pair whose joined text sorts first (deterministic).
// {-1, -1} when no pair is frequent enough.
Pair BestPair(const PairCounts& pair_counts, const std::vector<std::string>& symbols, std::int64_t min_frequency) {
  Pair best{-1, -1};
  std::int64_t best_count = 0;
  std::string best_text;
  for (const auto& [pair, count] : pair_counts) {
    if (count < min_frequency || count < best_count) continue;
    std::string text = symbols[pair.first] + " " + symbols[pair.second];
    if (count > best_count || text < best_text) {
      best = pair;
      best_count = count;
      best_text = std::move(text);
    }
  }
  return best;
}

// Replaces every `best` pair in the words with the symbol `merged`, keeping the pair counts.
void ApplyMerge(std::vector<Word>& words, PairCounts& pair_counts, const Pair& best, int merged) {
  for (auto& w : words) {
    bool has = false;
    for (size_t i = 0; i + 1 < w.symbols.size() && !has; ++i) has = w.symbols[i] == best.first && w.symbols[i + 1] == best.second;
    if (!has) continue;
    AddPairs(pair_counts, w, -1);
    std::vector<int> next;
    for (size_t i = 0; i < w.symbols.size(); ++i) {
      if (i + 1 < w.symbols.size() && w.symbols[i] == best.first && w.symbols[i + 1] == best.second) {
        next.push_back(merged);
        ++i;
      } else {
        next.push_back(w.symbols[i]);
      }
    }
    w.symbols = std::move(next);
    AddPairs(pair_counts, w, 1);
  }
  for (auto it = pair_counts.begin(); it != pair_counts.end();) it = it->second == 0 ? pair_counts.erase(it) : std::next(it);
}

// tokenizer.json (the Hugging Face layout) of a byte-level BPE with these symbols and merges.
std::string TokenizerJson(const BpeTrainerOptions& o, const std::vector<std::string>& symbols,
                          const std::vector<Pair>& merges) {
  using Json = nlohmann::ordered_json;
  Json added = Json::array();
  for (size_t i = 0; i < o.special_tokens.size(); ++i) {
    added.push_back({{"id", i}, {"content", o.special_tokens[i]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  Json vocab = Json::object();
  for (size_t i = 0; i < symbols.size(); ++i) vocab[symbols[i]] = i;
  Json merge_list = Json::array();
  for (const auto& m : merges) merge_list.push_back(symbols[m.first] + " " + symbols[m.second]);
  const Json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  Json out = {{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", nullptr},
              {"pre_tokenizer", byte_level},
              {"post_processor", byte_level},
              {"decoder", byte_level},
              {"model",
               {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},
                {"vocab", vocab},
                {"merges", merge_list}}}};
  return out.dump(1) + "\n";
}

}  // namespace

StatusOr<std::string> TrainByteLevelBpe(const std::vector<std::string>& texts, const BpeTrainerOptions& o) {
  UNMASK_RETURN_IF_ERROR(CheckOptions(o));
  UNMASK_ASSIGN_OR_RETURN(auto word_counts, CountWords(texts));
  if (word_counts.empty()) return InvalidArgumentError("BPE training: the corpus has no text");

  // Symbols: specials first (ids 0..), then the 256 byte characters, then one per merge.
  std::vector<std::string> symbols(o.special_tokens.begin(), o.special_tokens.end());
  std::unordered_map<std::string, int> symbol_id;
  for (int b = 0; b < 256; ++b) {
    symbol_id[ByteToChar(static_cast<unsigned char>(b))] = static_cast<int>(symbols.size());
    symbols.push_back(ByteToChar(static_cast<unsigned char>(b)));
  }
  std::vector<Word> words;
  for (const auto& [text, count] : word_counts) {
    Word w{{}, count};
    for (const auto& c : Characters(text)) w.symbols.push_back(symbol_id.at(c));
    words.push_back(std::move(w));
  }

  PairCounts pair_counts;
  for (const auto& w : words) AddPairs(pair_counts, w, 1);
  std::vector<Pair> merges;
  while (static_cast<int>(symbols.size()) < o.vocab_size) {
    const Pair best = BestPair(pair_counts, symbols, o.min_frequency);
    if (best.first < 0) break;
    const int merged = static_cast<int>(symbols.size());
    symbols.push_back(symbols[best.first] + symbols[best.second]);
    merges.push_back(best);
    ApplyMerge(words, pair_counts, best, merged);
  }
  return TokenizerJson(o, symbols, merges);
}

}  // namespace unmask::tokenizer
