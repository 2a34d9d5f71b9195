// tokenizer.json: the fuzz bytes are the JSON given to Tokenizer::FromJson. A tokenizer that
// loads then encodes and decodes a fixed text (with and without special tokens) and decodes
// every id below its id limit: whatever the file says, using it must not crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/tokenizer/tokenizer.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/tokenizer_use.h"

using unmask::tokenizer::Tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto tok = Tokenizer::FromJson(json, "tokenizer.json");
  if (!tok.ok()) {
    UNMASK_FUZZ_CHECK(tok.status().message().rfind("tokenizer.json", 0) == 0, "the error names the file");
    return 0;
  }
  unmask::fuzz::UseTokenizer(**tok, "In the beginning <|eot_id|> God  créa\tles 123 cieux!\n");
  return 0;
}
