#include "common/tokenizer/tokenizer.h"

#include <cstdio>

#include "common/tokenizer/added_tokens.h"
#include "common/tokenizer/bpe_model.h"
#include "common/tokenizer/decoders.h"
#include "common/tokenizer/normalizers.h"
#include "common/tokenizer/pre_tokenizers.h"
#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text, bool parse_special_tokens) const {
  const size_t bad = FindInvalidUtf8(text);
  if (bad != kNoInvalidUtf8) {
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(text[bad]));
    return InvalidArgumentError("encode: input is not valid UTF-8: ill-formed sequence at byte offset " +
                                std::to_string(bad) + " (byte " + byte + ")");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<Segment> segments;
  added_->Split(text, /*normalized_pass=*/false, parse_special_tokens, &segments);
  for (const Segment& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    UNMASK_RETURN_IF_ERROR(EncodeSegment(text.substr(seg.begin, seg.end - seg.begin), seg.begin == 0,
                                         parse_special_tokens, &ids));
  }
  return ids;
}

Status Tokenizer::EncodeSegment(std::string_view raw, bool at_start, bool parse_special,
                                std::vector<int32_t>* ids) const {
  std::string text(raw);
  if (normalizer_) UNMASK_RETURN_IF_ERROR(normalizer_->Normalize(&text));
  if (!added_->has_normalized_tokens()) return EncodeWords(std::move(text), at_start, ids);
  // Tokens with normalized=true are looked for in the normalized text (their content was
  // normalized the same way when the file was loaded).
  std::vector<Segment> segments;
  added_->Split(text, /*normalized_pass=*/true, parse_special, &segments);
  for (const Segment& seg : segments) {
    if (seg.id >= 0) {
      ids->push_back(seg.id);
    } else {
      UNMASK_RETURN_IF_ERROR(EncodeWords(text.substr(seg.begin, seg.end - seg.begin), at_start && seg.begin == 0, ids));
    }
  }
  return OkStatus();
}

Status Tokenizer::EncodeWords(std::string text, bool at_start, std::vector<int32_t>* ids) const {
  if (text.empty()) return OkStatus();
  std::vector<Piece> pieces;
  pieces.push_back(Piece{std::move(text), at_start});
  if (pre_tokenizer_) UNMASK_RETURN_IF_ERROR(pre_tokenizer_->PreTokenize(&pieces));
  for (const Piece& piece : pieces) model_->Tokenize(piece.text, ids);
  return OkStatus();
}

StatusOr<std::string> Tokenizer::Decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  return Decode(ids.data(), ids.size(), skip_special_tokens);
}

StatusOr<std::string> Tokenizer::Decode(const int32_t* ids, size_t count, bool skip_special_tokens) const {
  return DecodeAs(ids, count, skip_special_tokens, DecodeOutput::kText);
}

StatusOr<std::string> Tokenizer::DecodeBytes(const std::vector<int32_t>& ids) const {
  UNMASK_ASSIGN_OR_RETURN(std::string carried, DecodeAs(ids.data(), ids.size(), false, DecodeOutput::kBytes));
  return RestoreCarriedBytes(carried);
}

StatusOr<std::string> Tokenizer::DecodeAs(const int32_t* ids, size_t count, bool skip_special_tokens,
                                          DecodeOutput output) const {
  std::vector<std::string> tokens;
  tokens.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const int32_t id = ids[i];
    if (const AddedToken* added = added_->FindById(id)) {
      if (!(skip_special_tokens && added->special)) tokens.push_back(added->content);
      continue;
    }
    const std::string* token = model_->IdToToken(id);
    if (token == nullptr) {
      return InvalidArgumentError("decode: id " + std::to_string(id) + " (position " + std::to_string(i) +
                                  ") is not in the vocabulary (ids are below " + std::to_string(id_limit()) +
                                  " and must name a token)");
    }
    tokens.push_back(*token);
  }
  std::string text;
  if (!decoder_) {
    // tokenizers joins with a space when the file has no decoder.
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) text.push_back(' ');
      text += tokens[i];
    }
    return text;
  }
  UNMASK_RETURN_IF_ERROR(decoder_->DecodeChain(&tokens, output));
  for (const std::string& t : tokens) text += t;
  return text;
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  if (const AddedToken* added = added_->FindByContent(token)) return added->id;
  return model_->TokenToId(token);
}

std::optional<std::string> Tokenizer::IdToToken(int32_t id) const {
  if (const AddedToken* added = added_->FindById(id)) return added->content;
  if (const std::string* token = model_->IdToToken(id)) return *token;
  return std::nullopt;
}

bool Tokenizer::IsSpecialToken(int32_t id) const {
  const AddedToken* added = added_->FindById(id);
  return added != nullptr && added->special;
}

}  // namespace unmask::tokenizer
