#include "common/tokenizer/decoders.h"

#include <utility>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

class ByteLevelDecoder final : public Decoder {
 public:
  Status DecodeChain(std::vector<std::string>* tokens, DecodeOutput output) const override {
    std::string bytes;
    for (const std::string& token : *tokens) {
      const size_t mark = bytes.size();
      size_t pos = 0;
      bool mapped = true;
      while (pos < token.size()) {
        const int b = CharToByte(NextCodePoint(token, &pos));
        if (b < 0) {
          mapped = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!mapped) {
        bytes.resize(mark);
        bytes.append(token);
      }
    }
    tokens->assign(1, output == DecodeOutput::kText ? LossyUtf8(bytes) : CarryInvalidBytes(bytes));
    return OkStatus();
  }
};

// Parses "<0xXX>" (upper- or lowercase hex digits); -1 when `token` is not of that form.
int ParseByteToken(const std::string& token) {
  if (token.size() != 6 || token[0] != '<' || token[1] != '0' || token[2] != 'x' || token[5] != '>') {
    return -1;
  }
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(token[3]);
  const int lo = hex(token[4]);
  return (hi < 0 || lo < 0) ? -1 : hi * 16 + lo;
}

class ByteFallbackDecoder final : public Decoder {
 public:
  Status DecodeChain(std::vector<std::string>* tokens, DecodeOutput output) const override {
    std::vector<std::string> out;
    out.reserve(tokens->size());
    std::string run;  // bytes of consecutive byte tokens
    size_t run_tokens = 0;
    auto flush = [&] {
      if (run_tokens == 0) return;
      if (FindInvalidUtf8(run) == kNoInvalidUtf8) {
        out.push_back(run);
      } else if (output == DecodeOutput::kText) {
        for (size_t i = 0; i < run_tokens; ++i) out.emplace_back("\xEF\xBF\xBD");
      } else {
        for (char b : run) out.push_back(CarryInvalidBytes(std::string_view(&b, 1)));
      }
      run.clear();
      run_tokens = 0;
    };
    for (std::string& token : *tokens) {
      const int b = ParseByteToken(token);
      if (b >= 0) {
        run.push_back(static_cast<char>(b));
        ++run_tokens;
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    *tokens = std::move(out);
    return OkStatus();
  }
};

class FuseDecoder final : public Decoder {
 public:
  Status DecodeChain(std::vector<std::string>* tokens, DecodeOutput /*output*/) const override {
    std::string joined;
    for (const std::string& t : *tokens) joined += t;
    tokens->assign(1, std::move(joined));
    return OkStatus();
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  Status DecodeChain(std::vector<std::string>* tokens, DecodeOutput /*output*/) const override {
    for (std::string& token : *tokens) {
      size_t begin = 0;
      for (size_t i = 0; i < start_ && begin < token.size(); ++i) {
        size_t next = begin;
        if (NextCodePoint(token, &next) != content_) break;
        begin = next;
      }
      size_t end = token.size();
      for (size_t i = 0; i < stop_ && end > begin; ++i) {
        size_t prev = end;
        if (PrevCodePoint(token, &prev) != content_) break;
        end = prev;
      }
      token = token.substr(begin, end - begin);
    }
    return OkStatus();
  }

 private:
  char32_t content_;
  size_t start_;
  size_t stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Status DecodeChain(std::vector<std::string>* tokens, DecodeOutput /*output*/) const override {
    std::string out;
    for (std::string& token : *tokens) {
      UNMASK_RETURN_IF_ERROR(pattern_.ReplaceAll(token, content_, &out));
      token.swap(out);
    }
    return OkStatus();
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, bool strip_first) : replacement_(replacement), strip_first_(strip_first) {}
  Status DecodeChain(std::vector<std::string>* tokens, DecodeOutput /*output*/) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      const std::string& token = (*tokens)[i];
      std::string out;
      out.reserve(token.size());
      size_t pos = 0;
      while (pos < token.size()) {
        const size_t begin = pos;
        const char32_t c = NextCodePoint(token, &pos);
        if (c != replacement_) {
          out.append(token, begin, pos - begin);
        } else if (!(i == 0 && strip_first_)) {
          // tokenizers drops every replacement character of the first token, not only a leading one.
          out.push_back(' ');
        }
      }
      (*tokens)[i] = std::move(out);
    }
    return OkStatus();
  }

 private:
  char32_t replacement_;
  bool strip_first_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  Status DecodeChain(std::vector<std::string>* tokens, DecodeOutput output) const override {
    for (const auto& part : parts_) UNMASK_RETURN_IF_ERROR(part->DecodeChain(tokens, output));
    return OkStatus();
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> NewByteLevelDecoder() { return std::make_unique<ByteLevelDecoder>(); }
std::unique_ptr<Decoder> NewByteFallbackDecoder() { return std::make_unique<ByteFallbackDecoder>(); }
std::unique_ptr<Decoder> NewFuseDecoder() { return std::make_unique<FuseDecoder>(); }
std::unique_ptr<Decoder> NewStripDecoder(char32_t content, size_t start, size_t stop) {
  return std::make_unique<StripDecoder>(content, start, stop);
}
std::unique_ptr<Decoder> NewReplaceDecoder(Pattern pattern, std::string content) {
  return std::make_unique<ReplaceDecoder>(std::move(pattern), std::move(content));
}
std::unique_ptr<Decoder> NewMetaspaceDecoder(char32_t replacement, bool strip_first) {
  return std::make_unique<MetaspaceDecoder>(replacement, strip_first);
}
std::unique_ptr<Decoder> NewSequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) {
  return std::make_unique<SequenceDecoder>(std::move(parts));
}

}  // namespace unmask::tokenizer
