// tokenizer.json: the fuzz bytes are the JSON given to Tokenizer::FromJson. A tokenizer that
// loads then encodes and decodes a fixed text (with and without special tokens) and decodes
// every id below its id limit: whatever the file says, using it must not crash.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "fuzz/fuzz_check.h"

using unmask::tokenizer::Tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto tok = Tokenizer::FromJson(json, "tokenizer.json");
  if (!tok.ok()) {
    UNMASK_FUZZ_CHECK(tok.status().message().rfind("tokenizer.json", 0) == 0, "the error names the file");
    return 0;
  }
  static constexpr std::string_view kText = "In the beginning <|eot_id|> God  créa\tles 123 cieux!\n";
  for (bool special : {false, true}) {
    auto ids = (*tok)->Encode(kText, special);
    if (ids.ok()) {
      for (int32_t id : *ids) UNMASK_FUZZ_CHECK(id >= 0 && id < (*tok)->id_limit(), "encoded ids lie below id_limit");
      (void)(*tok)->Decode(*ids, special);
    }
  }
  const int32_t limit = std::min<int32_t>((*tok)->id_limit(), 4096);
  std::vector<int32_t> all(static_cast<std::size_t>(limit));
  for (int32_t i = 0; i < limit; ++i) all[static_cast<std::size_t>(i)] = i;
  (void)(*tok)->Decode(all, false);
  for (int32_t i = 0; i < limit; ++i) (void)(*tok)->IdToToken(i);
  return 0;
}
