#include "common/tokenizer/byte_level.h"

#include <array>

#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_char;
  std::array<int, 0x144> char_to_byte;  // every mapped code point is below U+0144

  Tables() {
    char_to_byte.fill(-1);
    // openai/gpt-2 encoder.py bytes_to_unicode(): printable bytes keep their code point, the
    // remaining ones get 256, 257, ... in byte order.
    auto keeps_code_point = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = keeps_code_point(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      AppendUtf8(cp, &byte_to_char[b]);
      char_to_byte[cp] = b;
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

const std::string& ByteToChar(unsigned char b) { return GetTables().byte_to_char[b]; }

int CharToByte(char32_t c) {
  const Tables& t = GetTables();
  return c < t.char_to_byte.size() ? t.char_to_byte[c] : -1;
}

void AppendByteLevel(std::string_view bytes, std::string* out) {
  const Tables& t = GetTables();
  // Every mapped character is 1 or 2 bytes: size for the worst case, write in place, trim. This
  // is on the hot path of every byte-level encode (a std::string::append per byte is 3x slower).
  const size_t old_size = out->size();
  out->resize(old_size + 2 * bytes.size());
  char* dst = out->data() + old_size;
  for (char c : bytes) {
    const std::string& ch = t.byte_to_char[static_cast<unsigned char>(c)];
    dst[0] = ch[0];
    if (ch.size() == 2) dst[1] = ch[1];
    dst += ch.size();
  }
  out->resize(static_cast<size_t>(dst - out->data()));
}

}  // namespace unmask::tokenizer
