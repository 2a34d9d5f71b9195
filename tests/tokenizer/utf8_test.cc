// Invalid UTF-8 input to encode, unknown ids to decode, and the UTF-8 helpers.
#include <random>

#include "common/tokenizer/utf8.h"
#include "test_util.h"

namespace unmask::tokenizer::testing {
namespace {

void ExpectInvalidAt(const std::string& text, size_t offset) {
  auto ids = Gpt2().Encode(text, true);
  ASSERT_FALSE(ids.ok()) << "accepted: " << ::testing::PrintToString(text);
  EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ids.status().message().find("not valid UTF-8"), std::string::npos) << ids.status().message();
  EXPECT_NE(ids.status().message().find("byte offset " + std::to_string(offset) + " "), std::string::npos)
      << ids.status().message();
}

TEST(Utf8, EncodeRefusesInvalidUtf8NamingTheOffset) {
  ExpectInvalidAt("ab\xC3(", 2);              // lead byte without continuation
  ExpectInvalidAt("abc\xE2\x82", 3);          // truncated at the end
  ExpectInvalidAt("\x80", 0);                 // lone continuation byte
  ExpectInvalidAt("ok \xC0\xAF", 3);          // overlong '/'
  ExpectInvalidAt("x\xED\xA0\x80", 1);        // UTF-16 surrogate
  ExpectInvalidAt("\xF4\x90\x80\x80", 0);     // above U+10FFFF
  ExpectInvalidAt("\xC3\xA9\xFF", 2);         // never valid
  ExpectInvalidAt(std::string("a\0b\xFE", 4), 3);
  EXPECT_NE(Gpt2().Encode("ab\xC3(", false).status().message().find("(byte 0xC3)"), std::string::npos);
  // NUL and the largest code point are valid.
  EXPECT_TRUE(Gpt2().Encode(std::string("a\0b", 3), false).ok());
  EXPECT_TRUE(Gpt2().Encode("\xF4\x8F\xBF\xBF", false).ok());
}

TEST(Utf8, DecodeRefusesUnknownIdsNamingThem) {
  for (int32_t bad : {50257, -1, 1 << 30}) {
    auto text = Gpt2().Decode(std::vector<int32_t>{15496, bad}, false);
    ASSERT_FALSE(text.ok()) << bad;
    EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(text.status().message().find("id " + std::to_string(bad) + " "), std::string::npos)
        << text.status().message();
  }
  // The fixture's ids are sparse: a gap inside the range is refused too.
  auto gap = LladaLike().Decode(std::vector<int32_t>{100000}, false);
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("id 100000 "), std::string::npos);
}

TEST(Utf8, DecodeOfPartialCharactersGivesReplacementCharacters) {
  // "é" is one GPT-2 token per byte when cut: ids of the byte-level characters of C3 and A9.
  const std::vector<int32_t> e_acute = EncodeOrDie(Gpt2(), "\xC3\xA9", false);
  ASSERT_FALSE(e_acute.empty());
  const auto first_byte = Gpt2().TokenToId("\xC3\x83");  // byte 0xC3 -> U+00C3
  ASSERT_TRUE(first_byte.has_value());
  EXPECT_EQ(*Gpt2().Decode(std::vector<int32_t>{*first_byte}, false), "\xEF\xBF\xBD");
  EXPECT_EQ(*Gpt2().Decode(std::vector<int32_t>{*first_byte, 15496}, false), "\xEF\xBF\xBDHello");
}

TEST(Utf8, Helpers) {
  EXPECT_EQ(FindInvalidUtf8("plain \xE6\x97\xA5\xF0\x9F\x98\x80"), kNoInvalidUtf8);
  EXPECT_EQ(FindInvalidUtf8("\xE6\x97"), 0u);
  // Maximal-subpart replacement: E2 82 is one U+FFFD, FF another.
  EXPECT_EQ(LossyUtf8("a\xE2\x82\xFF" "b"), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  EXPECT_EQ(LossyUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  std::string out;
  AppendUtf8(U'\U0001F600', &out);
  EXPECT_EQ(out, "\xF0\x9F\x98\x80");
}

TEST(Utf8, CarriedBytesComeBackExactly) {
  // Valid text is left alone; each byte of an invalid sequence becomes U+10FE00 + byte.
  EXPECT_EQ(CarryInvalidBytes("a\xC3\xA9"), "a\xC3\xA9");
  EXPECT_EQ(CarryInvalidBytes("\xFF"), "\xF4\x8F\xBB\xBF");
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 12, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 128 : 0x80 + rng() % 128);
    const std::string carried = CarryInvalidBytes(bytes);
    EXPECT_EQ(FindInvalidUtf8(carried), kNoInvalidUtf8);
    EXPECT_EQ(RestoreCarriedBytes(carried), bytes);
  }
}

}  // namespace
}  // namespace unmask::tokenizer::testing
