// The committed trained model's tokenizer (models/unmask-kjv) and its special ids, for the HTTP
// output tests: text is streamed and rendered as a user of that model gets it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace unmask::scheduler::http::testing {

inline constexpr std::int64_t kMask = 2, kEos = 0, kEot = 5;  // models/unmask-kjv/config.json

inline std::shared_ptr<const tokenizer::Tokenizer> Kjv() {
  static std::shared_ptr<const tokenizer::Tokenizer> tok = [] {
    auto t = tokenizer::Tokenizer::FromFile(std::string(UNMASK_MODELS_DIR) + "/unmask-kjv/tokenizer.json");
    if (!t.ok()) throw std::runtime_error(t.status().ToString());
    return std::shared_ptr<const tokenizer::Tokenizer>(std::move(*t));
  }();
  return tok;
}

inline std::vector<std::int64_t> Encode(const std::string& text) {
  auto ids = Kjv()->Encode(text, /*parse_special_tokens=*/false);
  EXPECT_TRUE(ids.ok());
  return ids.ok() ? std::vector<std::int64_t>(ids->begin(), ids->end()) : std::vector<std::int64_t>{};
}

}  // namespace unmask::scheduler::http::testing
