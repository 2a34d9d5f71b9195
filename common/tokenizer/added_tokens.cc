#include "common/tokenizer/added_tokens.h"

#include <algorithm>
#include <utility>

#include "common/tokenizer/unicode.h"
#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

// The helpers below mirror tokenizers' added_vocabulary.rs, which uses the Rust regexes
// `\w$`, `^\w`, `\s*$` and `^\s*` (Unicode classes) for the single_word / lstrip / rstrip rules.
bool EndsWithWord(std::string_view s) {
  if (s.empty()) return false;
  size_t pos = s.size();
  return IsWordChar(PrevCodePoint(s, &pos));
}

bool StartsWithWord(std::string_view s) {
  if (s.empty()) return false;
  size_t pos = 0;
  return IsWordChar(NextCodePoint(s, &pos));
}

// Start of the whitespace run that ends `s` (s.size() when there is none).
size_t LeftmostSpaceAtEnd(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t prev = end;
    if (!IsWhitespace(PrevCodePoint(s, &prev))) break;
    end = prev;
  }
  return end;
}

// Length of the whitespace run that starts `s`.
size_t RightmostSpaceAtStart(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!IsWhitespace(NextCodePoint(s, &next))) break;
    pos = next;
  }
  return pos;
}

}  // namespace

void AddedVocabulary::Trie::Insert(std::string_view key, int32_t token) {
  if (nodes.empty()) {
    nodes.emplace_back();
    first.fill(-1);
  }
  int32_t node = 0;
  for (size_t i = 0; i < key.size(); ++i) {
    const auto byte = static_cast<unsigned char>(key[i]);
    auto& children = nodes[node].children;
    auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1}));
    if (it != children.end() && it->first == byte) {
      node = it->second;
      continue;
    }
    const auto child = static_cast<int32_t>(nodes.size());
    children.insert(it, {byte, child});  // before emplace_back, which invalidates `children`
    if (node == 0) first[byte] = child;
    nodes.emplace_back();
    node = child;
  }
  if (nodes[node].token < 0) nodes[node].token = token;  // the first token with this text wins
}

Status AddedVocabulary::Build(std::vector<AddedToken> tokens, const Normalizer* normalizer) {
  tokens_ = std::move(tokens);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    if (t.content.empty()) return InvalidArgumentError("added token with id " + std::to_string(t.id) + " is empty");
    by_id_.emplace(t.id, i);
    by_content_.emplace(t.content, i);
    if (t.normalized) {
      std::string key = t.content;
      if (normalizer != nullptr) UNMASK_RETURN_IF_ERROR(normalizer->Normalize(&key));
      if (!key.empty()) normalized_.Insert(key, static_cast<int32_t>(i));
    } else {
      raw_.Insert(t.content, static_cast<int32_t>(i));
    }
  }
  return OkStatus();
}

int32_t AddedVocabulary::LongestAt(const Trie& trie, std::string_view text, size_t pos, bool parse_special,
                                   size_t* len) const {
  int32_t best = -1;
  int32_t node = trie.first[static_cast<unsigned char>(text[pos])];
  size_t i = pos + 1;
  while (node >= 0) {
    const Trie::Node& n = trie.nodes[node];
    if (n.token >= 0 && (parse_special || !tokens_[n.token].special)) {
      best = n.token;
      *len = i - pos;
    }
    if (i >= text.size()) break;
    const auto byte = static_cast<unsigned char>(text[i]);
    auto it = std::lower_bound(n.children.begin(), n.children.end(), std::make_pair(byte, int32_t{-1}));
    if (it == n.children.end() || it->first != byte) break;
    node = it->second;
    ++i;
  }
  return best;
}

void AddedVocabulary::Split(std::string_view text, bool normalized_pass, bool parse_special,
                            std::vector<Segment>* out) const {
  out->clear();
  const Trie& trie = normalized_pass ? normalized_ : raw_;
  if (trie.nodes.empty()) {
    if (!text.empty()) out->push_back(Segment{0, text.size(), -1});
    return;
  }
  size_t start_offset = 0;  // end of the last emitted token
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = 0;
    const int32_t index = trie.first[static_cast<unsigned char>(text[pos])] < 0
                              ? -1
                              : LongestAt(trie, text, pos, parse_special, &len);
    if (index < 0) {
      ++pos;  // tokens are valid UTF-8, so a match can only start on a character boundary
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t start = pos;
    size_t stop = pos + len;
    if (token.single_word) {
      const bool space_before = start == 0 || !EndsWithWord(text.substr(0, start));
      const bool space_after = stop == text.size() || !StartsWithWord(text.substr(stop));
      if (!space_before || !space_after) {
        pos = stop;  // like tokenizers' non-overlapping match iteration, resume after the match
        continue;
      }
    }
    if (token.lstrip) start = std::max(LeftmostSpaceAtEnd(text.substr(0, start)), start_offset);
    if (token.rstrip) stop += RightmostSpaceAtStart(text.substr(stop));
    if (start_offset < start) out->push_back(Segment{start_offset, start, -1});
    out->push_back(Segment{start, stop, token.id});
    start_offset = stop;
    pos = stop;
  }
  if (start_offset < text.size()) out->push_back(Segment{start_offset, text.size(), -1});
}

const AddedToken* AddedVocabulary::FindById(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::FindByContent(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

}  // namespace unmask::tokenizer
