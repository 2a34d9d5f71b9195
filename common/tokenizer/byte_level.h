// GPT-2's reversible byte <-> character mapping used by byte-level BPE. Every byte maps to one
// printable code point (printable Latin-1 bytes map to themselves, the others to U+0100..U+0143),
// so any byte string becomes a string of "characters" that a BPE vocabulary can hold as JSON text.
#pragma once

#include <string>
#include <string_view>

namespace unmask::tokenizer {

// The UTF-8 encoding of the character that byte `b` maps to.
const std::string& ByteToChar(unsigned char b);

// The byte that code point `c` stands for, or -1 when `c` is not in the mapping.
int CharToByte(char32_t c);

// Appends the byte-level form of `bytes` to *out.
void AppendByteLevel(std::string_view bytes, std::string* out);

}  // namespace unmask::tokenizer
