// The MoE-family golden files and tiny checkpoints the LLaDA2 sampler tests share (loaded once per
// test binary): tests/data/tiny-llada2*.golden.json and the checkpoints they name, in float32 as
// the official runs were.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/model/llada_model.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::testing {

inline const nlohmann::json& GoldenJson(const std::string& file) {
  static std::map<std::string, nlohmann::json> files;
  auto it = files.find(file);
  if (it == files.end()) {
    std::ifstream in(TestDataPath(file));
    it = files.emplace(file, nlohmann::json::parse(in)).first;
  }
  return it->second;
}

inline const model::LladaModel& Float32Model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<model::LladaModel>> models;
  auto& m = models[name];
  if (!m) {
    model::ModelOptions options;
    options.precision = model::Precision::kFloat32;
    auto loaded = model::LladaModel::Load(TestDataPath(name), options);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    if (!loaded.ok()) std::abort();
    m = std::move(*loaded);
  }
  return *m;
}

// The ids up to and including the first EOS (what the official generate returns).
inline std::vector<std::int64_t> CutAtEos(std::vector<std::int64_t> ids, std::int64_t eos) {
  const auto it = std::find(ids.begin(), ids.end(), eos);
  if (it != ids.end()) ids.erase(it + 1, ids.end());
  return ids;
}

}  // namespace unmask::testing
