#include "common/tokenizer/normalizers.h"

#include <utility>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(UnicodeForm form) : form_(form) {}
  Status Normalize(std::string* text) const override { return NormalizeUnicode(form_, text); }

 private:
  UnicodeForm form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  Status Normalize(std::string* text) const override { return LowercaseUnicode(text); }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  Status Normalize(std::string* text) const override {
    for (const auto& part : parts_) UNMASK_RETURN_IF_ERROR(part->Normalize(text));
    return OkStatus();
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Status Normalize(std::string* text) const override {
    std::string out;
    UNMASK_RETURN_IF_ERROR(pattern_.ReplaceAll(*text, content_, &out));
    *text = std::move(out);
    return OkStatus();
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  Status Normalize(std::string* text) const override {
    if (!text->empty()) text->insert(0, prefix_);
    return OkStatus();
  }

 private:
  std::string prefix_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  Status Normalize(std::string* text) const override {
    size_t begin = 0;
    size_t end = text->size();
    if (left_) {
      while (begin < end) {
        size_t next = begin;
        if (!IsWhitespace(NextCodePoint(*text, &next))) break;
        begin = next;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t prev = end;
        if (!IsWhitespace(PrevCodePoint(*text, &prev))) break;
        end = prev;
      }
    }
    *text = text->substr(begin, end - begin);
    return OkStatus();
  }

 private:
  bool left_;
  bool right_;
};

class StripAccentsNormalizer final : public Normalizer {
 public:
  Status Normalize(std::string* text) const override {
    if (IsAscii(*text)) return OkStatus();
    std::string out;
    out.reserve(text->size());
    size_t pos = 0;
    while (pos < text->size()) {
      const size_t begin = pos;
      const char32_t c = NextCodePoint(*text, &pos);
      if (!IsNonspacingMark(c)) out.append(*text, begin, pos - begin);
    }
    *text = std::move(out);
    return OkStatus();
  }
};

class ByteLevelNormalizer final : public Normalizer {
 public:
  Status Normalize(std::string* text) const override {
    std::string out;
    out.reserve(text->size() * 2);
    AppendByteLevel(*text, &out);
    *text = std::move(out);
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<Normalizer> NewUnicodeNormalizer(UnicodeForm form) {
  return std::make_unique<UnicodeNormalizer>(form);
}
std::unique_ptr<Normalizer> NewLowercaseNormalizer() { return std::make_unique<LowercaseNormalizer>(); }
std::unique_ptr<Normalizer> NewSequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> normalizers) {
  return std::make_unique<SequenceNormalizer>(std::move(normalizers));
}
std::unique_ptr<Normalizer> NewReplaceNormalizer(Pattern pattern, std::string content) {
  return std::make_unique<ReplaceNormalizer>(std::move(pattern), std::move(content));
}
std::unique_ptr<Normalizer> NewPrependNormalizer(std::string prefix) {
  return std::make_unique<PrependNormalizer>(std::move(prefix));
}
std::unique_ptr<Normalizer> NewStripNormalizer(bool left, bool right) {
  return std::make_unique<StripNormalizer>(left, right);
}
std::unique_ptr<Normalizer> NewStripAccentsNormalizer() { return std::make_unique<StripAccentsNormalizer>(); }
std::unique_ptr<Normalizer> NewByteLevelNormalizer() { return std::make_unique<ByteLevelNormalizer>(); }

}  // namespace unmask::tokenizer
