// Step-level batching (step_sampler.h: StepTogether): generations of different prompts, lengths,
// blocks, steps, sampler modes, temperatures, seeds and guidance, packed into one forward per
// step and joining at different steps (mid-block), give what each gives alone, token for token
// and step for step, on the official golden cases (tests/data/tiny-llada.golden.json), on every
// few-row kernel path and in float32 and bfloat16 compute. Failures stay with their generation.
#include <gtest/gtest.h>

#include <cctype>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "common/model/llada_model.h"
#include "common/sampler/sampler_registry.h"
#include "common/sampler/step_sampler.h"
#include "tests/fixtures/gemm_paths.h"
#include "tests/fixtures/test_paths.h"
#include "tests/fixtures/golden_case.h"

namespace unmask {
namespace {

using nlohmann::json;

struct Job {
  sampler::PromptBatch prompts;
  generation::GenerationParams params;
  int joins_at = 0;  // the batch step at which it starts
};

struct Outcome {
  sampler::GenerationResult result;
  std::vector<sampler::StepEvent> events;
};

const json& Golden() {
  static const json* golden = [] {
    std::ifstream in(testing::TestDataPath("tiny-llada.golden.json"));
    return new json(json::parse(in));
  }();
  return *golden;
}

Job CaseJob(int index, generation::SamplerMode mode) {
  const json& c = Golden()["cases"][index];
  Job job;
  job.params = testing::GoldenCaseParams(c);
  job.params.sampler = mode;
  job.prompts = testing::GoldenCasePrompts(c);
  return job;
}

void ExpectSameEvents(const std::vector<sampler::StepEvent>& got, const std::vector<sampler::StepEvent>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_EQ(got[i].step, want[i].step);
    EXPECT_EQ(got[i].block, want[i].block);
    EXPECT_EQ(got[i].step_in_block, want[i].step_in_block);
    EXPECT_EQ(got[i].positions, want[i].positions);
    EXPECT_EQ(got[i].tokens, want[i].tokens);
  }
}

class StepBatchBase {
 protected:
  void Load(model::Precision precision) {
    model::ModelOptions options;
    options.precision = precision;
    auto loaded = model::LladaModel::Load(testing::TestDataPath("tiny-llada"), options);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    model_ = std::move(*loaded);
  }

  Outcome Alone(const Job& job) {
    Outcome run;
    auto r = sampler::Generate(*model_, job.prompts, job.params, [&](const sampler::StepEvent& ev) {
      run.events.push_back(ev);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) run.result = *r;
    return run;
  }

  // Every job in one batch: each starts at its joins_at step and leaves when it is done.
  std::vector<Outcome> Together(const std::vector<Job>& jobs) {
    std::vector<Outcome> runs(jobs.size());
    std::vector<std::unique_ptr<sampler::StepSampler>> samplers(jobs.size());
    std::size_t finished = 0;
    for (int tick = 0; finished < jobs.size(); ++tick) {
      std::vector<sampler::StepSampler*> active;
      std::vector<std::size_t> which;
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        if (jobs[j].joins_at == tick) {
          auto s = sampler::StartStepSampler(*model_, jobs[j].prompts, jobs[j].params);
          EXPECT_TRUE(s.ok()) << s.status().ToString();
          if (!s.ok()) return runs;
          samplers[j] = std::move(*s);
        }
        if (samplers[j] != nullptr && samplers[j]->running()) {
          active.push_back(samplers[j].get());
          which.push_back(j);
        }
      }
      auto events = sampler::StepTogether(*model_, active);
      for (std::size_t i = 0; i < active.size(); ++i) {
        EXPECT_TRUE(events[i].ok()) << events[i].status().ToString();
        if (!events[i].ok()) return runs;
        runs[which[i]].events.push_back(*events[i]);
        if (!active[i]->running()) {
          runs[which[i]].result = active[i]->Result();
          ++finished;
        }
      }
      EXPECT_LT(tick, 10000) << "the batch never finished";
      if (tick >= 10000) return runs;
    }
    return runs;
  }

  void ExpectTogetherEqualsAlone(const std::vector<Job>& jobs) {
    const std::vector<Outcome> together = Together(jobs);
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      SCOPED_TRACE("job " + std::to_string(j) + " (" + generation::SamplerModeName(jobs[j].params.sampler) + ")");
      const Outcome alone = Alone(jobs[j]);
      EXPECT_EQ(together[j].result.output, alone.result.output);
      EXPECT_EQ(together[j].result.steps_run, alone.result.steps_run);
      ExpectSameEvents(together[j].events, alone.events);
    }
  }

  std::unique_ptr<model::LladaModel> model_;
};

class StepBatchTest : public StepBatchBase,
                      public ::testing::TestWithParam<std::tuple<model::Precision, model::GemmPath>> {
 protected:
  void SetUp() override {
    const auto [precision, path] = GetParam();
    UNMASK_SKIP_UNLESS_GEMM_PATH_RUNS(path);
    gemm_ = std::make_unique<testing::ScopedGemmPath>(path);
    ASSERT_TRUE(gemm_->ok());
    Load(precision);
  }
  std::unique_ptr<testing::ScopedGemmPath> gemm_;
};

// On the CPU's own kernel path (the mixed test below covers every path).
class StepBatchEveryModeTest : public StepBatchBase, public ::testing::TestWithParam<model::Precision> {
 protected:
  void SetUp() override { Load(GetParam()); }
};

// One test per mode and precision (each runs 15-20 s; ctest spreads them over the cores).
class StepBatchPerModeTest : public StepBatchBase,
                             public ::testing::TestWithParam<std::tuple<model::Precision, generation::SamplerMode>> {
 protected:
  void SetUp() override { Load(std::get<0>(GetParam())); }
};

// Each mode on six golden cases at once (prompts of 8-16 tokens, one or two rows, gen 16-32,
// blocks 8-32, guidance, temperature 0.7, random remasking), joining every third step; the mixed
// test below runs all ten.
TEST_P(StepBatchPerModeTest, BatchedEqualsAloneOnTheGoldenCases) {
  const generation::SamplerMode mode = std::get<1>(GetParam());
  std::vector<Job> jobs;
  for (int i : {0, 1, 3, 6, 7, 8}) {
    jobs.push_back(CaseJob(i, mode));
    jobs.back().joins_at = static_cast<int>(3 * jobs.size());
  }
  ExpectTogetherEqualsAlone(jobs);
}

// One batch mixing every mode, every case, sampled and greedy, and the same prompt with two seeds.
TEST_P(StepBatchTest, MixedModesAndSeedsBatchedEqualAlone) {
  const auto modes = generation::LladaSamplerModes();
  const int cases = static_cast<int>(Golden()["cases"].size());
  std::vector<Job> jobs;
  for (int i = 0; i < cases; ++i) {
    jobs.push_back(CaseJob(i, modes[i % modes.size()]));
    jobs.back().joins_at = i % 4;
  }
  for (std::uint64_t seed : {7u, 8u}) {
    Job sampled = CaseJob(1, generation::SamplerMode::kDualCacheThreshold);
    sampled.params.temperature = 0.9;
    sampled.params.seed = seed;
    sampled.joins_at = 2;
    jobs.push_back(sampled);
  }
  ExpectTogetherEqualsAlone(jobs);
}

TEST_P(StepBatchTest, TheReferenceBatchedGivesTheOfficialOutput) {
  if (std::get<0>(GetParam()) != model::Precision::kFloat32) GTEST_SKIP() << "the golden outputs are float32's";
  std::vector<Job> jobs;
  const int cases = static_cast<int>(Golden()["cases"].size());
  for (int i = 0; i < cases; ++i) {
    jobs.push_back(CaseJob(i, generation::SamplerMode::kReference));
    jobs.back().joins_at = i;
  }
  const std::vector<Outcome> runs = Together(jobs);
  for (int i = 0; i < cases; ++i) {
    EXPECT_EQ(runs[i].result.output, Golden()["cases"][i]["output"].get<std::vector<std::vector<std::int64_t>>>())
        << "case " << i;
  }
}

// A generation whose forward cannot run (a token id past the vocabulary): the packed forward
// throws, and StepTogether runs each segment alone so that only this one fails.
class BrokenSampler : public sampler::StepSampler {
 public:
  bool running() const override { return true; }
  model::PackedSegment NextForward() override {
    model::PackedSegment seg;
    seg.ids = at::full({1, 4}, std::int64_t{1} << 40, at::kLong);
    return seg;
  }
  sampler::StepEvent FinishStep(const at::Tensor&) override { return {}; }
  sampler::GenerationResult Result() const override { return {}; }
  std::int64_t CacheBytes() const override { return 0; }
};

TEST_P(StepBatchEveryModeTest, AFailingGenerationLeavesTheOthersExact) {
  const Job job = CaseJob(1, generation::SamplerMode::kDualCacheThreshold);
  auto good = sampler::StartStepSampler(*model_, job.prompts, job.params);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  BrokenSampler broken;
  std::vector<sampler::StepEvent> events;
  while ((*good)->running()) {
    auto step = sampler::StepTogether(*model_, {&broken, good->get()});
    ASSERT_EQ(step.size(), 2u);
    EXPECT_EQ(step[0].status().code(), StatusCode::kInternal);
    EXPECT_NE(step[0].status().message().find("reference sampler"), std::string::npos) << step[0].status().ToString();
    ASSERT_TRUE(step[1].ok()) << step[1].status().ToString();
    events.push_back(*step[1]);
  }
  const Outcome alone = Alone(job);
  EXPECT_EQ((*good)->Result().output, alone.result.output);
  ExpectSameEvents(events, alone.events);
}

INSTANTIATE_TEST_SUITE_P(Precisions, StepBatchEveryModeTest,
                         ::testing::Values(model::Precision::kFloat32, model::Precision::kBFloat16),
                         [](const auto& info) { return std::string(model::PrecisionName(info.param)); });
INSTANTIATE_TEST_SUITE_P(PrecisionsAndModes, StepBatchPerModeTest,
                         ::testing::Combine(::testing::Values(model::Precision::kFloat32, model::Precision::kBFloat16),
                                            ::testing::ValuesIn(generation::LladaSamplerModes())),
                         [](const auto& info) {
                           std::string name = std::string(model::PrecisionName(std::get<0>(info.param))) + "_" +
                                              generation::SamplerModeName(std::get<1>(info.param));
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });
INSTANTIATE_TEST_SUITE_P(PrecisionsAndPaths, StepBatchTest,
                         ::testing::Combine(::testing::Values(model::Precision::kFloat32, model::Precision::kBFloat16),
                                            testing::kAllGemmPaths),
                         [](const auto& info) {
                           return std::string(model::PrecisionName(std::get<0>(info.param))) + "_" +
                                  model::GemmPathName(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace unmask
