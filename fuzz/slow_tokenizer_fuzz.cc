// A checkpoint directory with a slow tokenizer's files instead of tokenizer.json (Dream-v0's
// layout, Tokenizer::FromDirectory): the fuzz bytes are the files, separated by kSeparator, in the
// order vocab.json, merges.txt, tokenizer_config.json, added_tokens.json (a missing part: no such
// file). Every refusal must name a file of the directory; a tokenizer that loads encodes and
// decodes a fixed text and decodes every id below its limit without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_files.h"
#include "fuzz/tokenizer_use.h"

using unmask::tokenizer::Tokenizer;

namespace {
constexpr std::string_view kSeparator = "\n~~~file~~~\n";
constexpr const char* kFiles[] = {"vocab.json", "merges.txt", "tokenizer_config.json", "added_tokens.json"};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const unmask::fuzz::ScratchDir dir("slow_tokenizer");
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t at = input.find(kSeparator, start);
    parts.push_back(input.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos || parts.size() == 4) break;
    start = at + kSeparator.size();
  }
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string path = dir.path() + "/" + kFiles[i];
    if (i < parts.size()) {
      dir.Write(kFiles[i], std::string(parts[i]));
    } else {
      std::remove(path.c_str());
    }
  }
  auto tok = Tokenizer::FromDirectory(dir.path());
  if (!tok.ok()) {
    UNMASK_FUZZ_CHECK(tok.status().message().rfind(dir.path(), 0) == 0, "the error names the directory's file");
    return 0;
  }
  unmask::fuzz::UseTokenizer(**tok, "In the beginning <|mask|> God  créa\tles 123 cieux!\n");
  return 0;
}
