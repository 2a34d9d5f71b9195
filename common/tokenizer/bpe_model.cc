#include "common/tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>

#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {

StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(BpeOptions options,
                                                     std::vector<std::pair<std::string, int32_t>> vocab,
                                                     const std::vector<std::pair<std::string, std::string>>& merges) {
  std::unique_ptr<BpeModel> model(new BpeModel());
  model->options_ = std::move(options);
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0) return InvalidArgumentError("vocab['" + token + "']: negative id " + std::to_string(id));
    if (id >= kTokenIdLimit) {
      return InvalidArgumentError("vocab['" + token + "']: id " + std::to_string(id) + " is not below 2^24");
    }
    max_id = std::max(max_id, id);
  }
  model->id_to_token_.resize(static_cast<size_t>(max_id) + 1);
  model->has_id_.assign(static_cast<size_t>(max_id) + 1, false);
  model->vocab_.reserve(vocab.size());
  for (auto& [token, id] : vocab) {
    if (!model->has_id_[id]) {  // two tokens sharing an id: the first one decodes
      model->has_id_[id] = true;
      model->id_to_token_[id] = token;
    }
    model->vocab_.emplace(std::move(token), id);
  }

  // Lookup tables that spare a hash of a std::string for the common single-character symbols.
  model->small_char_ids_.assign(0x800, -1);
  model->byte_ids_.fill(-1);
  for (const auto& [token, id] : model->vocab_) {
    size_t pos = 0;
    if (!token.empty() && token.size() <= 2) {
      const char32_t cp = NextCodePoint(token, &pos);
      if (pos == token.size() && cp < 0x800) model->small_char_ids_[cp] = id;
    }
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);  // tokenizers' format!("<{:#04X}>", b)
    if (auto id = model->TokenToId(name)) model->byte_ids_[b] = *id;
  }

  const BpeOptions& opt = model->options_;
  if (opt.unk_token) {
    auto it = model->vocab_.find(*opt.unk_token);
    if (it == model->vocab_.end()) {
      return InvalidArgumentError("unk_token '" + *opt.unk_token + "' is not in the vocabulary");
    }
    model->unk_id_ = it->second;
  }

  model->merges_.reserve(merges.size());
  const std::string& prefix = opt.continuing_subword_prefix;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const std::string where = "merges[" + std::to_string(rank) + "] ('" + a + "' '" + b + "')";
    auto ia = model->vocab_.find(a);
    if (ia == model->vocab_.end()) return InvalidArgumentError(where + ": '" + a + "' is not in the vocabulary");
    auto ib = model->vocab_.find(b);
    if (ib == model->vocab_.end()) return InvalidArgumentError(where + ": '" + b + "' is not in the vocabulary");
    // With a continuing-subword prefix ("##"), "a" + "##b" merges into "ab".
    const bool strip = !prefix.empty() && b.compare(0, prefix.size(), prefix) == 0;
    const std::string merged = a + (strip ? b.substr(prefix.size()) : b);
    auto im = model->vocab_.find(merged);
    if (im == model->vocab_.end()) {
      return InvalidArgumentError(where + ": the merged token '" + merged + "' is not in the vocabulary");
    }
    // A repeated pair keeps its last rank, like tokenizers' HashMap collect.
    model->merges_[PairKey(ia->second, ib->second)] = MergeInfo{static_cast<int32_t>(rank), im->second};
  }
  return model;
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || id >= id_limit() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

std::optional<int32_t> BpeModel::CharId(std::string_view ch, bool first, bool last) const {
  const bool affixes = !options_.continuing_subword_prefix.empty() || !options_.end_of_word_suffix.empty();
  if (!affixes) {
    if (ch.size() <= 2) {
      size_t pos = 0;
      const int32_t id = small_char_ids_[NextCodePoint(ch, &pos)];
      if (id >= 0) return id;
    }
    return TokenToId(ch);
  }
  std::string key;
  if (!first) key = options_.continuing_subword_prefix;
  key.append(ch);
  if (last) key += options_.end_of_word_suffix;
  return TokenToId(key);
}

void BpeModel::InitialSymbols(std::string_view word, std::vector<int32_t>* ids) const {
  std::optional<int32_t> pending_unk;  // an unk not emitted yet, so that fuse_unk can extend it
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t begin = pos;
    pos = std::min(word.size(), pos + Utf8Length(static_cast<unsigned char>(word[pos])));
    const std::string_view ch = word.substr(begin, pos - begin);
    if (const std::optional<int32_t> id = CharId(ch, begin == 0, pos == word.size())) {
      if (pending_unk) ids->push_back(*std::exchange(pending_unk, std::nullopt));
      ids->push_back(*id);
      continue;
    }
    if (options_.byte_fallback &&
        std::all_of(ch.begin(), ch.end(), [&](char c) { return byte_ids_[static_cast<unsigned char>(c)] >= 0; })) {
      if (pending_unk) ids->push_back(*std::exchange(pending_unk, std::nullopt));
      for (char c : ch) ids->push_back(byte_ids_[static_cast<unsigned char>(c)]);
      continue;
    }
    if (!unk_id_) continue;  // no unk token: the character is dropped (tokenizers does the same)
    if (pending_unk && options_.fuse_unk) continue;
    if (pending_unk) ids->push_back(*pending_unk);
    pending_unk = unk_id_;
  }
  if (pending_unk) ids->push_back(*pending_unk);
}

void BpeModel::MergeAll(std::vector<int32_t>* ids) const {
  const auto n = static_cast<int32_t>(ids->size());
  if (n < 2) return;
  // A doubly linked list of symbols plus a min-heap of candidate merges keyed by (rank, position):
  // the same algorithm as tokenizers' Word::merge_all, O(n log n) even for very long words.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
  };
  auto later = [](const Candidate& x, const Candidate& y) {
    return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
  };
  std::vector<Symbol> sym(n);
  for (int32_t i = 0; i < n; ++i) sym[i] = Symbol{(*ids)[i], i - 1, i + 1 < n ? i + 1 : -1, true};
  std::vector<Candidate> heap;
  heap.reserve(n);
  auto push = [&](int32_t pos) {
    const int32_t next = sym[pos].next;
    if (next < 0) return;
    auto it = merges_.find(PairKey(sym[pos].id, sym[next].id));
    if (it == merges_.end()) return;
    heap.push_back(Candidate{it->second.rank, pos, it->second.new_id});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& s = sym[top.pos];
    if (!s.alive || s.next < 0) continue;
    // Skip stale candidates: the pair at this position changed since it was queued.
    auto it = merges_.find(PairKey(s.id, sym[s.next].id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    Symbol& right = sym[s.next];
    s.id = top.new_id;
    right.alive = false;
    s.next = right.next;
    if (s.next >= 0) sym[s.next].prev = top.pos;
    if (s.prev >= 0) push(s.prev);
    push(top.pos);
  }
  ids->clear();
  for (int32_t i = 0; i >= 0; i = sym[i].next) ids->push_back(sym[i].id);
}

void BpeModel::Tokenize(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const std::optional<int32_t> id = TokenToId(word)) {
      out->push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  InitialSymbols(word, &ids);
  MergeAll(&ids);
  out->insert(out->end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();  // bounded memory; refills with hot words
    cache_.emplace(std::move(key), std::move(ids));
  }
}

}  // namespace unmask::tokenizer
