// Property-style checks over many asked requests: whatever is asked and whatever the budget,
// a clamped request is one the samplers accept, fits (unless the policy is off), and every
// change is reported. Links unmask_sampler for ValidateParams and the registry's mode names.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/memory/clamp.h"
#include "common/sampler/generation_params.h"
#include "common/sampler/sampler_registry.h"

namespace unmask::memory {
namespace {

using checkpoint::LladaConfig;

TEST(SamplerKindNames, MatchTheSamplerRegistry) {
  std::vector<std::string> registry;
  for (sampler::SamplerMode mode : sampler::AllSamplerModes()) {
    const std::string name = sampler::SamplerModeName(mode);
    registry.push_back(name);
    auto kind = SamplerKindOf(name);
    ASSERT_TRUE(kind.ok()) << name;
    sampler::CacheKind cache;
    sampler::DecodeRule rule;
    if (!sampler::FastModeOf(mode, &cache, &rule)) {
      EXPECT_EQ(*kind, SamplerKind::kReference);
      continue;
    }
    const SamplerKind expected = cache == sampler::CacheKind::kPrefix ? SamplerKind::kPrefixCache
                                 : cache == sampler::CacheKind::kDual ? SamplerKind::kDualCache
                                                                      : SamplerKind::kBlockLogits;
    EXPECT_EQ(*kind, expected) << name;
    // Changing the cache kind keeps the rule, as the registry spells it.
    for (SamplerKind to : {SamplerKind::kBlockLogits, SamplerKind::kPrefixCache, SamplerKind::kDualCache}) {
      auto mode_to = sampler::ParseSamplerMode(WithSamplerKind(name, to));
      ASSERT_TRUE(mode_to.ok()) << WithSamplerKind(name, to);
      sampler::CacheKind c2;
      sampler::DecodeRule r2;
      ASSERT_TRUE(sampler::FastModeOf(*mode_to, &c2, &r2));
      EXPECT_EQ(r2, rule) << name;
    }
  }
  EXPECT_EQ(registry, SamplerModeNames());
  for (const char* alias : {"block_logits+threshold", "block_logits+factor"}) {
    EXPECT_TRUE(sampler::ParseSamplerMode(alias).ok());
    EXPECT_EQ(*SamplerKindOf(alias), SamplerKind::kBlockLogits);
  }
}

LladaConfig Config(int which) {
  LladaConfig c;  // 0: LLaDA 8B
  if (which == 1) {
    c.d_model = 256;
    c.n_heads = c.n_kv_heads = 4;
    c.n_layers = 4;
    c.mlp_hidden_size = 768;
  } else if (which == 2) {  // grouped KV heads, short context, small vocabulary
    c.d_model = 1024;
    c.n_heads = 16;
    c.n_kv_heads = 4;
    c.n_layers = 8;
    c.mlp_hidden_size = 2816;
    c.vocab_size = c.embedding_size = 32000;
    c.max_sequence_length = 1024;
    c.mask_token_id = 31999;
    c.eos_token_id = c.pad_token_id = 2;
  }
  return c;
}

sampler::GenerationParams ToParams(const GenerationRequest& r, const LladaConfig& c) {
  sampler::GenerationParams p;
  p.steps = r.steps;
  p.gen_length = r.gen_length;
  p.block_length = r.block_length;
  p.temperature = r.temperature;
  p.cfg_scale = r.cfg_scale;
  p.mask_id = c.mask_token_id;
  p.eos_id = c.eos_token_id;
  p.eot_id = c.eot_token_id;
  return p;
}

std::string Str(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// The value of `field` in `r` as Clamp spells it.
std::string FieldValue(const GenerationRequest& r, const std::string& field) {
  if (field == "gen_length") return std::to_string(r.gen_length);
  if (field == "block_length") return std::to_string(r.block_length);
  if (field == "steps") return std::to_string(r.steps);
  if (field == "sampler") return r.sampler;
  if (field == "attention_query_chunk") return std::to_string(r.attention_query_chunk);
  if (field == "temperature") return Str(r.temperature);
  if (field == "cfg_scale") return Str(r.cfg_scale);
  return "?";
}

std::uint64_t Needs(const LladaConfig& config, const GenerationRequest& r, std::uint64_t weights) {
  RequestShape s = *ShapeOf(r);
  s.weights_bytes = weights;
  return EstimateRequest(config, s).total();
}

TEST(ClampProperty, EveryResultIsValidFitsAndIsFullyReported) {
  std::mt19937_64 rng(20240607);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<std::string> samplers = SamplerModeNames();
  samplers.push_back("block_logits+threshold");
  const std::vector<std::string> fields = {"gen_length", "block_length", "steps", "sampler",
                                           "attention_query_chunk", "temperature", "cfg_scale"};
  std::uint64_t weight_bytes[3][2];
  for (int which = 0; which < 3; ++which)
    for (int int4 = 0; int4 < 2; ++int4)
      weight_bytes[which][int4] = *WeightBytes(Config(which), *weights::PrecisionSpec::Parse(int4 ? "int4" : "bf16"));
  int ok = 0, exhausted = 0, clamped = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    const int which = static_cast<int>(pick(0, 2));
    const LladaConfig config = Config(which);
    const std::uint64_t weights = weight_bytes[which][pick(0, 1)];
    GenerationRequest asked;
    asked.batch = pick(1, 4);
    const std::int64_t prompts[] = {0, 1, 7, 100, 500, 1000, 3000, config.max_sequence_length - 20,
                                    config.max_sequence_length - 1};
    do asked.prompt_length = prompts[pick(0, 8)];
    while (asked.prompt_length >= config.max_sequence_length || asked.prompt_length < 0);
    const std::int64_t blocks = pick(1, 16);
    asked.block_length = pick(0, 1) ? (std::int64_t{1} << pick(0, 8)) : pick(1, 160);
    asked.gen_length = blocks * asked.block_length;
    asked.steps = blocks * pick(1, asked.block_length);
    asked.temperature = pick(0, 1) ? 0.0 : 0.25 * static_cast<double>(pick(1, 8));
    asked.cfg_scale = pick(0, 2) ? 0.0 : 0.5 * static_cast<double>(pick(1, 6));
    asked.sampler = samplers[pick(0, static_cast<std::int64_t>(samplers.size()) - 1)];
    asked.compute_dtype_bytes = pick(0, 1) ? 2 : 4;
    const std::int64_t chunks[] = {0, 0, 16, 100, 512};
    asked.attention_query_chunk = chunks[pick(0, 4)];
    const ClampPolicy policy = static_cast<ClampPolicy>(pick(0, 2));
    const double log_extra = std::uniform_real_distribution<double>(std::log(1e6), std::log(2e11))(rng);
    const std::uint64_t budget = weights + static_cast<std::uint64_t>(std::exp(log_extra)) - (pick(0, 9) ? 0 : weights / 2);

    SCOPED_TRACE("iter " + std::to_string(iter) + " config " + std::to_string(which) + " policy " +
                 ClampPolicyName(policy) + " prompt " + std::to_string(asked.prompt_length) + " gen " +
                 std::to_string(asked.gen_length) + " block " + std::to_string(asked.block_length) + " steps " +
                 std::to_string(asked.steps) + " sampler " + asked.sampler + " budget " + std::to_string(budget));
    const bool over_long = asked.prompt_length + asked.gen_length > config.max_sequence_length;
    // The floor below which gen_length is never cut: 16, or less when the asked (or the
    // length-limited: the largest multiple of the block in the room left) gen_length is shorter.
    const std::int64_t room = config.max_sequence_length - asked.prompt_length;
    const std::int64_t limited = !over_long ? asked.gen_length
                                 : asked.block_length <= room ? room / asked.block_length * asked.block_length
                                                              : room;
    const std::int64_t floor = std::min<std::int64_t>(limited, 16);
    auto result = Clamp(config, asked, budget, weights, policy);
    if (!result.ok()) {
      if (policy == ClampPolicy::kOff) {
        EXPECT_TRUE(over_long);
        EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
        continue;
      }
      ASSERT_EQ(result.status().code(), StatusCode::kResourceExhausted) << result.status().ToString();
      ++exhausted;
      // Refused only when the frugal minimum really does not fit.
      GenerationRequest least = asked;
      least.gen_length = floor;
      least.block_length = 1;
      least.steps = least.gen_length;
      if (policy == ClampPolicy::kExtreme) {
        least.sampler = WithSamplerKind(asked.sampler, SamplerKind::kBlockLogits);
        least.attention_query_chunk = 16;
        least.temperature = least.cfg_scale = 0;
      }
      EXPECT_GT(Needs(config, least, weights), budget);
      EXPECT_NE(result.status().message().find(std::to_string(budget) + " bytes"), std::string::npos);
      continue;
    }
    ++ok;
    const GenerationRequest& got = result->applied;
    // The samplers accept it.
    const Status valid = sampler::ValidateParams(ToParams(got, config), config, got.prompt_length);
    EXPECT_TRUE(valid.ok()) << valid.ToString();
    EXPECT_TRUE(sampler::ParseSamplerMode(got.sampler).ok()) << got.sampler;
    // What Clamp never changes.
    EXPECT_EQ(got.batch, asked.batch);
    EXPECT_EQ(got.prompt_length, asked.prompt_length);
    EXPECT_EQ(got.compute_dtype_bytes, asked.compute_dtype_bytes);
    EXPECT_LE(got.gen_length, asked.gen_length);
    EXPECT_LE(got.block_length, asked.block_length);
    EXPECT_GE(got.gen_length, floor);
    // The estimate is the applied request's.
    EXPECT_EQ(result->estimate.total(), Needs(config, got, weights));
    if (policy == ClampPolicy::kOff) {
      EXPECT_EQ(result->fits, result->estimate.total() <= budget);
      EXPECT_EQ(result->adjustments.empty(), result->fits);
      if (!result->fits) {
        EXPECT_EQ(result->adjustments[0].field, "memory");
      }
      EXPECT_EQ(got.gen_length, asked.gen_length);
      continue;
    }
    EXPECT_TRUE(result->fits);
    EXPECT_LE(result->estimate.total(), budget);
    if (policy == ClampPolicy::kStandard) {
      EXPECT_EQ(got.sampler, asked.sampler);
      EXPECT_EQ(got.temperature, asked.temperature);
      EXPECT_EQ(got.cfg_scale, asked.cfg_scale);
      EXPECT_EQ(got.attention_query_chunk, asked.attention_query_chunk);
    }
    // Every change is reported once, with what was asked and what runs; nothing else is.
    for (const std::string& field : fields) {
      int entries = 0;
      for (const auto& a : result->adjustments) {
        if (a.field != field) continue;
        ++entries;
        EXPECT_EQ(a.asked, FieldValue(asked, field)) << field;
        EXPECT_EQ(a.applied, FieldValue(got, field)) << field;
        EXPECT_FALSE(a.reason.empty()) << field;
      }
      const bool changed = FieldValue(asked, field) != FieldValue(got, field);
      EXPECT_EQ(entries, changed ? 1 : 0) << field;
    }
    EXPECT_EQ(result->adjustments.size() > 0, !(got.gen_length == asked.gen_length && got.block_length == asked.block_length &&
                                                got.steps == asked.steps && got.sampler == asked.sampler &&
                                                got.temperature == asked.temperature && got.cfg_scale == asked.cfg_scale &&
                                                got.attention_query_chunk == asked.attention_query_chunk));
    if (!result->adjustments.empty()) ++clamped;
  }
  // The loop covers all outcomes.
  EXPECT_GT(ok, 1000);
  EXPECT_GT(clamped, 300);
  EXPECT_GT(exhausted, 50);
}

}  // namespace
}  // namespace unmask::memory
