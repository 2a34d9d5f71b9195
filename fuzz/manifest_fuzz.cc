// The weight segment's manifest: the fuzz bytes are the JSON given to Manifest::FromJson (which
// validates). Properties of an accepted manifest: its totals are what ComputeTotals gives, and
// ToJson writes a manifest that parses back to the same JSON.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/segment/manifest.h"
#include "fuzz/fuzz_check.h"

using unmask::weights::Manifest;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto manifest = Manifest::FromJson(text);
  if (!manifest.ok()) {
    UNMASK_FUZZ_CHECK(manifest.status().message().rfind("manifest", 0) == 0, "the error names the manifest");
    return 0;
  }
  UNMASK_FUZZ_CHECK(manifest->ComputeTotals() == manifest->totals, "totals are consistent");
  for (const auto& t : manifest->tensors) UNMASK_FUZZ_CHECK(manifest->Find(t.name) != nullptr, "tensors are found by name");
  const std::string json = manifest->ToJson();
  auto again = Manifest::FromJson(json);
  UNMASK_FUZZ_CHECK(again.ok(), "a written manifest parses again");
  UNMASK_FUZZ_CHECK(again->ToJson() == json, "and writes the same JSON");
  return 0;
}
