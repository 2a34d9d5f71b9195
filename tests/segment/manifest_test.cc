#include "common/segment/manifest.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "common/segment/layout.h"
#include "common/segment/segment_format.h"
#include "tests/fixtures/weight_checkpoints.h"

namespace unmask::weights {
namespace {

using nlohmann::json;

Manifest PlannedManifest(const std::string& spec_text) {
  auto spec = PrecisionSpec::Parse(spec_text);
  EXPECT_TRUE(spec.ok());
  auto m = PlanLayout(testing::SmallConfig(64, 2, 128, 300), *spec);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  m->model_id = "org/model";
  m->source_dir = "/models/org/model";
  m->config_json = "{\"d_model\": 64, \"note\": \"quotes \\\" and unicode \xc3\xa9\"}";
  PlanSegment(*m);
  return *m;
}

TEST(ManifestTest, JsonRoundTripKeepsEveryField) {
  for (const char* spec : {"bf16", "fp32", "int8:head", "int4:g64:asym:prune=0.25", "int4:g32:sym:emb"}) {
    const Manifest m = PlannedManifest(spec);
    ASSERT_TRUE(m.Validate().ok()) << m.Validate().ToString();
    auto parsed = Manifest::FromJson(m.ToJson());
    ASSERT_TRUE(parsed.ok()) << spec << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->ToJson(), m.ToJson());
    EXPECT_EQ(parsed->model_id, "org/model");
    EXPECT_EQ(parsed->config_json, m.config_json);
    EXPECT_EQ(parsed->precision, spec);
    EXPECT_EQ(parsed->data_offset, m.data_offset);
    EXPECT_TRUE(parsed->totals == m.totals);
    ASSERT_EQ(parsed->tensors.size(), m.tensors.size());
    for (std::size_t i = 0; i < m.tensors.size(); ++i) {
      const TensorEntry &a = m.tensors[i], &b = parsed->tensors[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.dtype, b.dtype);
      EXPECT_EQ(a.shape, b.shape);
      EXPECT_EQ(a.offset, b.offset);
      EXPECT_EQ(a.nbytes, b.nbytes);
      EXPECT_EQ(a.pruned, b.pruned);
      EXPECT_EQ(a.quant.scheme, b.quant.scheme);
      EXPECT_EQ(a.quant.group_size, b.quant.group_size);
      EXPECT_EQ(a.quant.symmetric, b.quant.symmetric);
      EXPECT_EQ(a.quant.scales_offset, b.quant.scales_offset);
      EXPECT_EQ(a.quant.scales_nbytes, b.quant.scales_nbytes);
      EXPECT_EQ(a.quant.scales_dtype, b.quant.scales_dtype);
      EXPECT_EQ(a.quant.zeros_offset, b.quant.zeros_offset);
      EXPECT_EQ(a.quant.zeros_nbytes, b.quant.zeros_nbytes);
    }
  }
}

TEST(ManifestTest, RegionsAreAlignedAndTotalsAddUp) {
  for (const char* spec : {"bf16", "fp16", "int8", "int4:g32:asym", "int4:g128:sym:emb:head"}) {
    const Manifest m = PlannedManifest(spec);
    std::uint64_t float_bytes = 0, quant_bytes = 0, meta = 0;
    for (const auto& t : m.tensors) {
      EXPECT_EQ(t.offset % kTensorAlignment, 0u) << t.name;
      if (t.quantized()) {
        EXPECT_EQ(t.quant.scales_offset % kTensorAlignment, 0u) << t.name;
        EXPECT_EQ(t.quant.zeros_offset % kTensorAlignment, 0u) << t.name;
        quant_bytes += t.nbytes;
        meta += t.quant.scales_nbytes + t.quant.zeros_nbytes;
      } else {
        float_bytes += t.nbytes;
      }
    }
    EXPECT_EQ(m.totals.float_bytes, float_bytes) << spec;
    EXPECT_EQ(m.totals.quantized_bytes, quant_bytes) << spec;
    EXPECT_EQ(m.totals.quant_meta_bytes, meta) << spec;
    EXPECT_EQ(m.totals.data_bytes, float_bytes + quant_bytes + meta + m.totals.padding_bytes) << spec;
    std::uint64_t by_role = 0;
    for (const auto& [role, bytes] : m.totals.by_role) by_role += bytes;
    EXPECT_EQ(by_role, float_bytes + quant_bytes + meta) << spec;
    EXPECT_EQ(m.data_offset % 4096, 0u);
    EXPECT_EQ(m.segment_bytes, m.data_offset + m.totals.data_bytes);
  }
  const Manifest bf16 = PlannedManifest("bf16");
  const Manifest int4 = PlannedManifest("int4:g128:sym");
  EXPECT_LT(int4.totals.data_bytes, bf16.totals.data_bytes);
  EXPECT_GT(int4.totals.source_quantized_bytes, 0u);
  EXPECT_EQ(bf16.totals.quantized_bytes, 0u);
  EXPECT_EQ(bf16.totals.source_bytes, int4.totals.source_bytes);
}

TEST(ManifestTest, BadManifestsNameTheField) {
  const json good = json::parse(PlannedManifest("int4:g64:asym").ToJson());
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"tensors missing", [](json& j) { j.erase("tensors"); }, "manifest: 'tensors' must be an array"},
      {"model_id wrong type", [](json& j) { j["model_id"] = 5; }, "manifest: 'model_id' must be a string"},
      {"version", [](json& j) { j["format_version"] = 2; }, "'format_version' 2 is not supported"},
      {"unaligned offset", [](json& j) { j["tensors"][2]["offset"] = j["tensors"][2]["offset"].get<int>() + 3; },
       "tensors[2] ('model.transformer.blocks.0.q_proj.weight'): 'offset' offset"},
      {"unknown dtype", [](json& j) { j["tensors"][0]["dtype"] = "Q7"; },
       "tensors[0] ('model.transformer.wte.weight'): 'dtype' unknown dtype 'Q7'"},
      {"negative offset", [](json& j) { j["tensors"][1]["offset"] = -64; },
       "tensors[1] ('model.transformer.blocks.0.attn_norm.weight'): 'offset' must be a non-negative integer"},
      {"nbytes", [](json& j) { j["tensors"][1]["nbytes"] = 4; }, "'offset' region has 4 bytes, expected 128"},
      {"scheme", [](json& j) { j["tensors"][2]["quant"]["scheme"] = "int3"; },
       "'quant': 'scheme' unknown quantization scheme 'int3'"},
      {"scales missing", [](json& j) { j["tensors"][2]["quant"].erase("scales_offset"); },
       "'quant': 'scales_offset' is missing"},
      {"group size", [](json& j) { j["tensors"][2]["quant"]["group_size"] = 48; }, "group size 48 is not one of"},
      {"name missing", [](json& j) { j["tensors"][3].erase("name"); }, "tensors[3]: 'name' is missing"},
      {"duplicate", [](json& j) { j["tensors"][3]["name"] = j["tensors"][2]["name"]; }, "duplicate tensor name"},
      {"overlap", [](json& j) { j["tensors"][3]["offset"] = j["tensors"][2]["offset"]; }, "overlaps"},
      {"past end", [](json& j) { j["totals"]["data_bytes"] = 64; }, "ends past the data region"},
      {"totals", [](json& j) { j["totals"]["float_bytes"] = 1; }, "manifest: 'totals': do not match the tensors"},
      {"shape", [](json& j) { j["tensors"][1]["shape"] = json::array({-1}); }, "'shape' has a dimension"},
      {"by_role", [](json& j) { j["totals"]["by_role"] = 3; }, "'totals': 'by_role' must be an object"},
      {"alignment", [](json& j) { j["alignment"] = 32; }, "'alignment' must be 64"},
  };
  for (const auto& c : cases) {
    json j = good;
    c.mutate(j);
    auto parsed = Manifest::FromJson(j.dump());
    ASSERT_FALSE(parsed.ok()) << c.what;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(parsed.status().message().find(c.expected), std::string::npos)
        << c.what << ": got '" << parsed.status().message() << "'";
  }
  EXPECT_NE(Manifest::FromJson("{not json").status().message().find("not well-formed JSON"), std::string::npos);
  EXPECT_NE(Manifest::FromJson("[1, 2]").status().message().find("not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace unmask::weights
