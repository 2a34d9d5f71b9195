// config.json: the fuzz bytes are the text given to LladaConfig::FromJsonText. An accepted
// config is then used as the loader and the memory model use it: its parameter count and the
// list of tensors it expects (whose shapes must be positive).
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/checkpoint/llada_config.h"
#include "fuzz/fuzz_check.h"

using unmask::checkpoint::LladaConfig;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = LladaConfig::FromJsonText(text, "config.json");
  if (!config.ok()) {
    UNMASK_FUZZ_CHECK(config.status().message().rfind("config.json: ", 0) == 0, "the error names the file");
    return 0;
  }
  UNMASK_FUZZ_CHECK(config->parameter_count() > 0, "a valid config has a positive parameter count");
  for (const auto& t : unmask::checkpoint::ExpectedTensors(*config)) {
    for (std::int64_t d : t.shape) UNMASK_FUZZ_CHECK(d > 0, "expected tensors have positive dimensions");
  }
  auto again = LladaConfig::FromJsonText(config->ToJsonText(), "config.json");
  UNMASK_FUZZ_CHECK(again.ok(), "a written config parses again");
  UNMASK_FUZZ_CHECK(again->parameter_count() == config->parameter_count(), "and describes the same model");
  return 0;
}
