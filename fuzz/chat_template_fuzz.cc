// Chat template rendering: the fuzz bytes are a conversation, rendered with
// ApplyLladaChatTemplate and encoded with EncodeLladaChat by a tokenizer with LLaDA's special
// tokens (tests/data/tokenizers/llada-like.tokenizer.json), and rendered with the Ling-2.0
// template of the MoE models (ApplyLingChatTemplate: it renders what LLaDA's does, every message's
// content appears in it, and it ends with the generation prompt when asked).
//
// Input format (so that seeds can be written by hand): byte 0 bit 0 = add_generation_prompt;
// the rest is messages separated by '\0', each "role\x01content" (no '\x01': role "user").
// Properties: a rendering that encodes decodes back to the same text (byte-level BPE is
// lossless), and every id lies below the tokenizer's id limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/ling_chat_template.h"
#include "fuzz/fuzz_check.h"

using namespace unmask::tokenizer;

namespace {

const Tokenizer& LladaLikeTokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    auto t = Tokenizer::FromFile(UNMASK_FUZZ_DATA "/tokenizers/llada-like.tokenizer.json");
    if (!t.ok()) {
      std::fprintf(stderr, "chat_template fuzz: %s\n", t.status().ToString().c_str());
      std::abort();
    }
    return std::move(*t);
  }();
  return *tok;
}

std::vector<ChatMessage> Messages(const char* p, std::size_t n) {
  std::vector<ChatMessage> out;
  std::size_t start = 0;
  while (start <= n) {
    std::size_t end = start;
    while (end < n && p[end] != '\0') ++end;
    const std::string record(p + start, end - start);
    const std::size_t sep = record.find('\x01');
    if (sep == std::string::npos) out.push_back({"user", record});
    else out.push_back({record.substr(0, sep), record.substr(sep + 1)});
    start = end + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool add_generation_prompt = (data[0] & 1) != 0;
  const auto messages = Messages(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto text = ApplyLladaChatTemplate(messages, add_generation_prompt);
  auto ling = ApplyLingChatTemplate(messages, add_generation_prompt);
  UNMASK_FUZZ_CHECK(!text.ok() || ling.ok(), "what LLaDA's template renders, Ling's renders too");
  if (ling.ok() && add_generation_prompt) {
    const std::string prompt = "<role>ASSISTANT</role>";
    UNMASK_FUZZ_CHECK(ling->size() >= prompt.size() && ling->compare(ling->size() - prompt.size(), prompt.size(), prompt) == 0,
                      "the Ling rendering ends with the generation prompt");
  }
  if (ling.ok()) {
    for (const auto& m : messages) {
      if (m.role == "user") UNMASK_FUZZ_CHECK(ling->find(m.content) != std::string::npos, "user content is kept as is");
    }
  }
  auto ids = EncodeLladaChat(LladaLikeTokenizer(), messages, add_generation_prompt);
  UNMASK_FUZZ_CHECK(!ids.ok() || text.ok(), "what encodes also renders");
  if (!ids.ok()) return 0;
  for (int32_t id : *ids) UNMASK_FUZZ_CHECK(id >= 0 && id < LladaLikeTokenizer().id_limit(), "ids lie below id_limit");
  auto decoded = LladaLikeTokenizer().Decode(*ids, /*skip_special_tokens=*/false);
  UNMASK_FUZZ_CHECK(decoded.ok(), "encoded ids decode");
  UNMASK_FUZZ_CHECK(*decoded == *text, "decode(encode(rendered)) == rendered");
  return 0;
}
