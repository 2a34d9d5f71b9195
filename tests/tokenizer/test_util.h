// Shared helpers for the tokenizer tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/tokenizer.h"

namespace unmask::tokenizer::testing {

using Json = nlohmann::json;

inline std::string DataPath(const std::string& relative) { return std::string(UNMASK_TEST_DATA) + "/" + relative; }

// Loads a tokenizer that the tests need; aborts the test binary if it cannot (every test of the
// file would fail anyway, and with a less clear message).
inline const Tokenizer& LoadShared(const std::string& relative) {
  auto tok = Tokenizer::FromFile(DataPath(relative));
  if (!tok.ok()) {
    ADD_FAILURE() << tok.status().ToString();
    std::abort();
  }
  return *std::move(tok).value().release();  // lives for the whole test run
}

inline const Tokenizer& Gpt2() {
  static const Tokenizer& tok = LoadShared("gpt2/tokenizer.json");
  return tok;
}

inline const Tokenizer& LladaLike() {
  static const Tokenizer& tok = LoadShared("tokenizers/llada-like.tokenizer.json");
  return tok;
}

// A minimal byte-level BPE tokenizer.json: the 256 byte characters with id == byte value, no
// merges, ByteLevel(use_regex=false) pre-tokenizer and ByteLevel decoder. Encoding without added
// tokens therefore yields the UTF-8 bytes of the (normalized) text, which makes every effect of a
// normalizer or added token visible in the ids. Tests add fields to it.
inline Json ByteLevelBase() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[ByteToChar(static_cast<unsigned char>(b))] = b;
  return Json{
      {"version", "1.0"},
      {"added_tokens", Json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}},
  };
}

inline Json AddedTokenJson(int id, const std::string& content, bool special = false) {
  return Json{{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
              {"rstrip", false}, {"normalized", false}, {"special", special}};
}

inline std::unique_ptr<Tokenizer> MustLoad(const Json& json) {
  auto tok = Tokenizer::FromJson(json.dump(), "test.json");
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? *std::move(tok) : nullptr;
}

// The ids ByteLevelBase gives for raw bytes.
inline std::vector<int32_t> Bytes(std::string_view s) {
  std::vector<int32_t> ids;
  for (char c : s) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

inline std::vector<int32_t> Concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

inline std::vector<int32_t> EncodeOrDie(const Tokenizer& tok, std::string_view text, bool special) {
  auto ids = tok.Encode(text, special);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

}  // namespace unmask::tokenizer::testing
