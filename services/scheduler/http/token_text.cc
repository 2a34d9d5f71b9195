#include "services/scheduler/http/token_text.h"

#include <climits>

#include "common/util/strings.h"

namespace unmask::scheduler::http {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD: what half a character decodes to

bool EndsWithReplacement(const std::string& text) {
  return text.size() >= 3 && text.compare(text.size() - 3, 3, kReplacement) == 0;
}

bool Known(const tokenizer::Tokenizer& tokenizer, std::int64_t id) {
  return id >= 0 && id <= INT32_MAX && tokenizer.IdToToken(static_cast<std::int32_t>(id)).has_value();
}

}  // namespace

std::string DecodeIds(const tokenizer::Tokenizer* tokenizer, const std::vector<std::int64_t>& ids, std::size_t begin,
                      std::size_t end, bool skip_special_tokens) {
  if (!tokenizer) return "";
  std::vector<std::int32_t> known;
  known.reserve(end > begin ? end - begin : 0);
  for (std::size_t i = begin; i < end && i < ids.size(); ++i) {
    if (Known(*tokenizer, ids[i])) known.push_back(static_cast<std::int32_t>(ids[i]));
  }
  auto text = tokenizer->Decode(known, skip_special_tokens);
  return text.ok() ? *text : "";
}

std::string TokenString(const tokenizer::Tokenizer* tokenizer, std::int64_t id) {
  if (!tokenizer || !Known(*tokenizer, id)) return "token_id:" + std::to_string(id);
  auto text = tokenizer->Decode(std::vector<std::int32_t>{static_cast<std::int32_t>(id)}, /*skip_special_tokens=*/false);
  return text.ok() ? *text : "token_id:" + std::to_string(id);
}

std::string TokenBytes(const tokenizer::Tokenizer* tokenizer, std::int64_t id) {
  if (!tokenizer || !Known(*tokenizer, id)) return TokenString(tokenizer, id);
  auto bytes = tokenizer->DecodeBytes(std::vector<std::int32_t>{static_cast<std::int32_t>(id)});
  return bytes.ok() ? *bytes : TokenString(tokenizer, id);
}

std::size_t CodePoints(std::string_view utf8) {
  std::size_t n = 0;
  for (unsigned char c : utf8) n += (c & 0xC0) != 0x80;
  return n;
}

void TokenPieces::Extend(std::int64_t id) {
  ids_.push_back(id);
  const std::string before = DecodeIds(tokenizer_, ids_, prefix_, read_, skip_special_);
  const std::string after = DecodeIds(tokenizer_, ids_, prefix_, ids_.size(), skip_special_);
  if (after.size() > before.size() && !EndsWithReplacement(after)) {
    pieces_.push_back(StartsWith(after, before) ? after.substr(before.size()) : after.substr(std::min(before.size(), after.size())));
    prefix_ = read_;
    read_ = ids_.size();
  } else {
    pieces_.emplace_back();  // nothing yet: half a character, or a special token left out
  }
}

const std::vector<std::string>& TokenPieces::Update(const std::vector<std::int64_t>& ids) {
  std::size_t same = 0;
  while (same < ids_.size() && same < ids.size() && ids_[same] == ids[same]) ++same;
  if (same < ids_.size()) {  // a token seen before changed (or the sequence shrank): start over
    ids_.clear();
    pieces_.clear();
    prefix_ = read_ = 0;
    same = 0;
  }
  for (std::size_t i = same; i < ids.size(); ++i) Extend(ids[i]);
  return pieces_;
}

std::vector<std::string> TokenPieces::Of(const tokenizer::Tokenizer* tokenizer, const std::vector<std::int64_t>& ids,
                                         bool skip_special_tokens) {
  TokenPieces p(tokenizer, skip_special_tokens);
  p.Update(ids);
  if (p.read_ < ids.size() && !ids.empty()) {
    const std::string before = DecodeIds(tokenizer, ids, p.prefix_, p.read_, skip_special_tokens);
    const std::string after = DecodeIds(tokenizer, ids, p.prefix_, ids.size(), skip_special_tokens);
    if (after.size() > before.size()) p.pieces_.back() += after.substr(before.size());
  }
  return std::move(p.pieces_);
}

}  // namespace unmask::scheduler::http
