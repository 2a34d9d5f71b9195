#include "bench/memory/memory_weights.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "common/fitting/memory_model.h"
#include "common/registry/progressive_loader.h"

namespace unmask::bench::memory {

std::string WeightsTable(const std::string& dir, const checkpoint::LladaConfig& config,
                         const std::vector<std::string>& specs, double& worst, int& failures) {
  std::string md =
      "\n| weights | predicted (`WeightBytes`) | manifest segment_bytes | segment mapped | ratio |\n"
      "|---|---|---|---|---|\n";
  for (const std::string& text : specs) {
    auto spec = weights::PrecisionSpec::Parse(text);
    if (!spec.ok()) {
      std::cerr << "weights " << text << ": " << spec.status().ToString() << "\n";
      ++failures;
      continue;
    }
    auto predicted = fitting::WeightBytes(config, *spec);
    if (!predicted.ok()) {
      std::cerr << "weights " << text << ": " << predicted.status().ToString() << "\n";
      ++failures;
      continue;
    }
    auto loaded = weights::LoadModelDir(dir, *spec, "bench-memory-" + std::to_string(::getpid()));
    if (!loaded.ok()) {
      std::cerr << "weights " << text << ": " << loaded.status().ToString() << "\n";
      ++failures;
      continue;
    }
    const std::uint64_t manifest = loaded->manifest.segment_bytes, mapped = loaded->segment.size();
    (void)loaded->segment.Unlink();  // the mapping goes with `loaded`; no name is left in /dev/shm
    const double ratio = static_cast<double>(mapped) / static_cast<double>(*predicted);
    worst = std::max({worst, ratio, 1.0 / ratio});
    char row[256];
    std::snprintf(row, sizeof(row), "| %s | %llu (%s) | %llu | %llu | %.4f |\n", text.c_str(),
                  static_cast<unsigned long long>(*predicted), fitting::HumanBytes(*predicted).c_str(),
                  static_cast<unsigned long long>(manifest), static_cast<unsigned long long>(mapped), ratio);
    md += row;
    std::cerr << row;
  }
  return md;
}

}  // namespace unmask::bench::memory
