// LLaDA-MoE and LLaDA2.x forward passes against the official modeling code (the `forward` entries
// of tests/data/tiny-llada-moe.golden.json and tiny-llada2.golden.json, made by
// tools/golden/make_moe_golden.py; tests/data/moe-golden.md): per position the argmax, the
// logsumexp and the logits at the listed columns, and the first MoE layer's router choices; and
// LLaDA-MoE's generate() cases through the reference sampler.
//
// Every few-row kernel path runs each check (the bf16 weights read in place or widened for the
// BLAS). Tolerance: the official run is float32 like ours, but sums in other orders (BLAS
// blocking, attention, the experts' row groups), and the JSON keeps 6 decimals: |ours - golden|
// <= 2e-5 + 2e-5 |golden| for logits and logsumexp, 1e-5 for router weights (in [0, 2.5]).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/model/llada_model.h"
#include "common/model/moe.h"
#include "common/sampler/reference_sampler.h"
#include "tests/fixtures/gemm_paths.h"
#include "tests/fixtures/golden_case.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::model {
namespace {

using nlohmann::json;

constexpr double kAbs = 2e-5, kRel = 2e-5, kRouterWeightTol = 1e-5;

json ReadGolden(const std::string& file) {
  std::ifstream in(unmask::testing::TestDataPath(file));
  return json::parse(in);
}

at::Tensor Ids(std::vector<std::int64_t> ids) {
  return at::from_blob(ids.data(), {1, static_cast<std::int64_t>(ids.size())}, at::kLong).clone();
}

// The logits [L, V] (float32) of one golden forward entry, and the routing of `router_layer`.
struct ForwardRun {
  at::Tensor logits;
  Routing routing;
};

ForwardRun RunForward(const LladaModel& model, const json& entry, std::int64_t router_layer) {
  ForwardRun run;
  ScopedRoutingObserver observer([&](std::int64_t layer, const Routing& r) {
    if (layer == router_layer) run.routing = r;
  });
  PackedSegment seg;
  seg.ids = Ids(entry["input"].get<std::vector<std::int64_t>>());
  seg.causal_block = entry.value("block_length", 0);  // LLaDA2: generate()'s block-causal mask
  run.logits = model.HeadLogits(model.HiddenPacked({seg})[0])[0].to(at::kFloat);
  return run;
}

void ExpectNear(double ours, double golden, const std::string& what) {
  EXPECT_LE(std::abs(ours - golden), kAbs + kRel * std::abs(golden))
      << what << ": ours " << ours << ", official " << golden;
}

void ExpectLogitsMatch(const at::Tensor& logits, const json& entry) {
  const auto argmax = entry["argmax"].get<std::vector<std::int64_t>>();
  const auto lse = entry["logsumexp"].get<std::vector<double>>();
  const auto columns = entry["columns"].get<std::vector<std::int64_t>>();
  const auto at_columns = entry["logits_at_columns"].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(logits.size(0), static_cast<std::int64_t>(argmax.size()));
  const at::Tensor our_argmax = logits.argmax(-1), our_lse = at::logsumexp(logits, -1);
  for (std::size_t p = 0; p < argmax.size(); ++p) {
    const auto pos = static_cast<std::int64_t>(p);
    EXPECT_EQ(our_argmax[pos].item<std::int64_t>(), argmax[p]) << "argmax at position " << p;
    ExpectNear(our_lse[pos].item<double>(), lse[p], "logsumexp at position " + std::to_string(p));
    for (std::size_t c = 0; c < columns.size(); ++c) {
      ExpectNear(logits[pos][columns[c]].item<double>(), at_columns[p][c],
                 "logit " + std::to_string(columns[c]) + " at position " + std::to_string(p));
    }
  }
}

// The chosen experts in the official order (descending router score) and their weights.
void ExpectRoutingMatches(const Routing& routing, const json& router) {
  ASSERT_TRUE(routing.experts.defined()) << "layer " << router["layer"] << " reported no routing";
  const auto experts = router["experts"].get<std::vector<std::vector<std::int64_t>>>();
  const auto weights = router["weights"].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(routing.experts.size(0), static_cast<std::int64_t>(experts.size()));
  for (std::size_t t = 0; t < experts.size(); ++t) {
    const auto row = static_cast<std::int64_t>(t);
    for (std::size_t j = 0; j < experts[t].size(); ++j) {
      const auto slot = static_cast<std::int64_t>(j);
      EXPECT_EQ(routing.experts[row][slot].item<std::int64_t>(), experts[t][j]) << "token " << t << " choice " << j;
      EXPECT_NEAR(routing.weights[row][slot].item<double>(), weights[t][j], kRouterWeightTol)
          << "token " << t << " choice " << j;
    }
  }
}

void CheckGoldenForwards(const std::string& golden_file) {
  const json golden = ReadGolden(golden_file);
  ASSERT_FALSE(golden["forward"].empty());
  for (const auto& entry : golden["forward"]) {
    const std::string name = entry["model"];
    SCOPED_TRACE(name);
    auto model = LladaModel::Load(unmask::testing::TestDataPath(name), ModelOptions{});
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const ForwardRun run = RunForward(**model, entry, entry["router"]["layer"].get<std::int64_t>());
    ExpectLogitsMatch(run.logits, entry);
    ExpectRoutingMatches(run.routing, entry["router"]);
  }
}

class MoeGoldenTest : public ::testing::TestWithParam<GemmPath> {
 protected:
  void SetUp() override {
    UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(GetParam());
    path_ = std::make_unique<unmask::testing::ScopedGemmPath>(GetParam());
    ASSERT_TRUE(path_->ok());
  }
  std::unique_ptr<unmask::testing::ScopedGemmPath> path_;
};

TEST_P(MoeGoldenTest, LladaMoeForwardMatchesTheOfficialModel) { CheckGoldenForwards("tiny-llada-moe.golden.json"); }

TEST_P(MoeGoldenTest, Llada2ForwardMatchesTheOfficialModel) { CheckGoldenForwards("tiny-llada2.golden.json"); }

// LLaDA-MoE generates with LLaDA's reference sampler, unchanged, as the official generate() over
// the official LLaDAMoEModelLM: the same ids and the same positions unmasked at every step.
TEST_P(MoeGoldenTest, LladaMoeGeneratesAsTheOfficialGenerate) {
  const json golden = ReadGolden("tiny-llada-moe.golden.json");
  std::map<std::string, std::unique_ptr<LladaModel>> models;
  for (std::size_t i = 0; i < golden["cases"].size(); ++i) {
    const json& c = golden["cases"][i];
    const std::string name = c["model"];
    SCOPED_TRACE("case " + std::to_string(i) + " on " + name);
    if (!models.count(name)) {
      auto model = LladaModel::Load(unmask::testing::TestDataPath(name), ModelOptions{});
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      models[name] = std::move(*model);
    }
    generation::GenerationParams p = unmask::testing::GoldenCaseParams(c);
    p.mask_id = golden["mask_id"];
    EXPECT_EQ(p.mask_id, models[name]->config().mask_token_id) << "the tokenizer's mask id";
    std::vector<std::vector<std::vector<std::int64_t>>> per_step;
    auto on_step = [&](const sampler::StepEvent& ev) {
      per_step.push_back(ev.positions);
      return true;
    };
    auto result = sampler::ReferenceGenerate(*models[name], unmask::testing::GoldenCasePrompts(c), p, on_step);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(result->output, c["output"].get<std::vector<std::vector<std::int64_t>>>());
    EXPECT_EQ(per_step, c["unmasked_per_step"].get<std::vector<std::vector<std::vector<std::int64_t>>>>());
  }
}

// bf16 compute (weights as stored, activations in bf16) stays close: most argmaxes agree.
TEST(MoeBf16Test, Bf16ComputeKeepsMostArgmaxes) {
  ModelOptions bf16;
  bf16.precision = Precision::kBFloat16;
  for (const char* file : {"tiny-llada-moe.golden.json", "tiny-llada2.golden.json"}) {
    const json golden = ReadGolden(file);
    for (const auto& entry : golden["forward"]) {
      const std::string name = entry["model"];
      auto model = LladaModel::Load(unmask::testing::TestDataPath(name), bf16);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      const at::Tensor argmax = RunForward(**model, entry, -1).logits.argmax(-1);
      const auto golden = entry["argmax"].get<std::vector<std::int64_t>>();
      std::size_t same = 0;
      for (std::size_t p = 0; p < golden.size(); ++p)
        same += argmax[static_cast<std::int64_t>(p)].item<std::int64_t>() == golden[p];
      EXPECT_GE(4 * same, 3 * golden.size()) << name << ": " << same << " of " << golden.size() << " argmaxes agree";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKernelPath, MoeGoldenTest, unmask::testing::kAllGemmPaths);

}  // namespace
}  // namespace unmask::model
