// What the tokenizer targets do with a tokenizer that loaded: encode a fixed text with and without
// special tokens (every id below id_limit) and decode it, and decode every id below the limit
// (at most 4096), as text and as bytes: whatever the files said, using the tokenizer must not crash.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "fuzz/fuzz_check.h"

namespace unmask::fuzz {

inline void UseTokenizer(const tokenizer::Tokenizer& tok, std::string_view text) {
  for (bool special : {false, true}) {
    auto ids = tok.Encode(text, special);
    if (ids.ok()) {
      for (int32_t id : *ids) UNMASK_FUZZ_CHECK(id >= 0 && id < tok.id_limit(), "encoded ids lie below id_limit");
      (void)tok.Decode(*ids, special);
    }
  }
  const int32_t limit = std::min<int32_t>(tok.id_limit(), 4096);
  std::vector<int32_t> all(static_cast<std::size_t>(limit));
  for (int32_t i = 0; i < limit; ++i) all[static_cast<std::size_t>(i)] = i;
  auto decoded = tok.Decode(all, false);
  auto bytes = tok.DecodeBytes(all);
  UNMASK_FUZZ_CHECK(decoded.ok() == bytes.ok(), "DecodeBytes fails exactly where Decode does");
  // Without U+FFFD (and without the code points DecodeBytes carries bytes as) the text is the bytes.
  if (decoded.ok() && decoded->find("\xEF\xBF\xBD") == std::string::npos && decoded->find("\xF4\x8F") == std::string::npos)
    UNMASK_FUZZ_CHECK(*bytes == *decoded, "DecodeBytes gives Decode's text where that has no U+FFFD");
  for (int32_t i = 0; i < limit; ++i) (void)tok.IdToToken(i);
}

}  // namespace unmask::fuzz
