// Property-style checks over many asked requests: whatever is asked and whatever the budget,
// a clamped request is one the samplers accept (generation::ValidateParams, the samplers' own
// check), fits (unless the policy is off), and every change is reported.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <random>
#include <vector>

#include "common/generation/validate.h"
#include "common/fitting/clamp.h"

namespace unmask::generation {
// gtest prints a mode by its name.
inline void PrintTo(SamplerMode mode, std::ostream* os) { *os << SamplerModeName(mode); }
}  // namespace unmask::generation

namespace unmask::fitting {
namespace {

using checkpoint::LladaConfig;
using generation::SamplerMode;

// The memory model's view of a mode (its cache kind) is the one generation::FastModeOf gives,
// and changing the cache kind keeps the decoding rule.
TEST(SamplerKind, AgreesWithFastModeOfForEveryMode) {
  auto kind_of_cache = [](generation::CacheKind cache) {
    return cache == generation::CacheKind::kPrefix ? SamplerKind::kPrefixCache
           : cache == generation::CacheKind::kDual ? SamplerKind::kDualCache
                                                   : SamplerKind::kBlockLogits;
  };
  for (SamplerMode mode : generation::LladaSamplerModes()) {
    const std::string name = generation::SamplerModeName(mode);
    generation::CacheKind cache = generation::CacheKind::kNone;
    generation::DecodeRule rule = generation::DecodeRule::kSchedule;
    const bool fast = generation::FastModeOf(mode, &cache, &rule);
    EXPECT_EQ(fast, mode != SamplerMode::kReference) << name;
    EXPECT_EQ(SamplerKindOf(mode), fast ? kind_of_cache(cache) : SamplerKind::kReference) << name;
    EXPECT_TRUE(WithSamplerKind(mode, SamplerKind::kReference) == SamplerMode::kReference) << name;
    for (SamplerKind to : {SamplerKind::kBlockLogits, SamplerKind::kPrefixCache, SamplerKind::kDualCache}) {
      const SamplerMode changed = WithSamplerKind(mode, to);
      generation::CacheKind c2;
      generation::DecodeRule r2;
      ASSERT_TRUE(generation::FastModeOf(changed, &c2, &r2)) << name << " -> " << SamplerKindName(to);
      EXPECT_EQ(kind_of_cache(c2), to) << name << " -> " << generation::SamplerModeName(changed);
      EXPECT_EQ(SamplerKindOf(changed), to) << name << " -> " << generation::SamplerModeName(changed);
      EXPECT_TRUE(r2 == rule) << name << " -> " << generation::SamplerModeName(changed);  // the reference's: schedule
    }
  }
  for (const char* alias : {"block_logits+threshold", "block_logits+factor"}) {
    auto mode = generation::ParseSamplerMode(alias);
    ASSERT_TRUE(mode.ok()) << alias;
    EXPECT_EQ(SamplerKindOf(*mode), SamplerKind::kBlockLogits);
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

generation::GenerationParams ToParams(const GenerationRequest& r, const LladaConfig& c) {
  generation::GenerationParams p = r.params;
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
  if (field == "gen_length") return std::to_string(r.params.gen_length);
  if (field == "block_length") return std::to_string(r.params.block_length);
  if (field == "steps") return std::to_string(r.params.steps);
  if (field == "sampler") return generation::SamplerModeName(r.params.sampler);
  if (field == "attention_query_chunk") return std::to_string(r.params.attention_query_chunk);
  if (field == "temperature") return Str(r.params.temperature);
  if (field == "cfg_scale") return Str(r.params.cfg_scale);
  return "?";
}

std::uint64_t Needs(const LladaConfig& config, const GenerationRequest& r, std::uint64_t weights) {
  RequestShape s = ShapeOf(r);
  s.weights_bytes = weights;
  return EstimateRequest(config, s).total();
}

TEST(ClampProperty, EveryResultIsValidFitsAndIsFullyReported) {
  std::mt19937_64 rng(20240607);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<SamplerMode> samplers = generation::LladaSamplerModes();
  samplers.push_back(*generation::ParseSamplerMode("block_logits+threshold"));  // as the alias's name parses
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
    asked.params.block_length = pick(0, 1) ? (std::int64_t{1} << pick(0, 8)) : pick(1, 160);
    asked.params.gen_length = blocks * asked.params.block_length;
    asked.params.steps = blocks * pick(1, asked.params.block_length);
    asked.params.temperature = pick(0, 1) ? 0.0 : 0.25 * static_cast<double>(pick(1, 8));
    asked.params.cfg_scale = pick(0, 2) ? 0.0 : 0.5 * static_cast<double>(pick(1, 6));
    asked.params.sampler = samplers[pick(0, static_cast<std::int64_t>(samplers.size()) - 1)];
    asked.compute_dtype_bytes = pick(0, 1) ? 2 : 4;
    const std::int64_t chunks[] = {0, 0, 16, 100, 512};
    asked.params.attention_query_chunk = chunks[pick(0, 4)];
    const ClampPolicy policy = static_cast<ClampPolicy>(pick(0, 2));
    const double log_extra = std::uniform_real_distribution<double>(std::log(1e6), std::log(2e11))(rng);
    const std::uint64_t budget = weights + static_cast<std::uint64_t>(std::exp(log_extra)) - (pick(0, 9) ? 0 : weights / 2);

    SCOPED_TRACE("iter " + std::to_string(iter) + " config " + std::to_string(which) + " policy " +
                 ClampPolicyName(policy) + " prompt " + std::to_string(asked.prompt_length) + " gen " +
                 std::to_string(asked.params.gen_length) + " block " + std::to_string(asked.params.block_length) +
                 " steps " + std::to_string(asked.params.steps) + " sampler " +
                 generation::SamplerModeName(asked.params.sampler) + " budget " + std::to_string(budget));
    const bool over_long = asked.prompt_length + asked.params.gen_length > config.max_sequence_length;
    // The floor below which gen_length is never cut: 16, or less when the asked (or the
    // length-limited: the largest multiple of the block in the room left) gen_length is shorter.
    const std::int64_t room = config.max_sequence_length - asked.prompt_length;
    const std::int64_t block = asked.params.block_length;
    const std::int64_t limited = !over_long ? asked.params.gen_length : block <= room ? room / block * block : room;
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
      least.params.gen_length = floor;
      least.params.block_length = 1;
      least.params.steps = least.params.gen_length;
      if (policy == ClampPolicy::kExtreme) {
        least.params.sampler = WithSamplerKind(asked.params.sampler, SamplerKind::kBlockLogits);
        least.params.attention_query_chunk = 16;
        least.params.temperature = least.params.cfg_scale = 0;
      }
      EXPECT_GT(Needs(config, least, weights), budget);
      EXPECT_NE(result.status().message().find(std::to_string(budget) + " bytes"), std::string::npos);
      continue;
    }
    ++ok;
    const GenerationRequest& got = result->applied;
    // The samplers accept it.
    const Status valid = generation::ValidateParams(ToParams(got, config), config, got.prompt_length);
    EXPECT_TRUE(valid.ok()) << valid.ToString();
    const auto named = generation::ParseSamplerMode(generation::SamplerModeName(got.params.sampler));
    EXPECT_TRUE(named.ok() && *named == got.params.sampler) << generation::SamplerModeName(got.params.sampler);
    // What Clamp never changes.
    EXPECT_EQ(got.batch, asked.batch);
    EXPECT_EQ(got.prompt_length, asked.prompt_length);
    EXPECT_EQ(got.compute_dtype_bytes, asked.compute_dtype_bytes);
    EXPECT_LE(got.params.gen_length, asked.params.gen_length);
    EXPECT_LE(got.params.block_length, asked.params.block_length);
    EXPECT_GE(got.params.gen_length, floor);
    // The estimate is the applied request's.
    EXPECT_EQ(result->estimate.total(), Needs(config, got, weights));
    if (policy == ClampPolicy::kOff) {
      EXPECT_EQ(result->fits, result->estimate.total() <= budget);
      EXPECT_EQ(result->adjustments.empty(), result->fits);
      if (!result->fits) {
        EXPECT_EQ(result->adjustments[0].field, "memory");
      }
      EXPECT_EQ(got.params.gen_length, asked.params.gen_length);
      continue;
    }
    EXPECT_TRUE(result->fits);
    EXPECT_LE(result->estimate.total(), budget);
    if (policy == ClampPolicy::kStandard) {
      EXPECT_EQ(got.params.sampler, asked.params.sampler);
      EXPECT_EQ(got.params.temperature, asked.params.temperature);
      EXPECT_EQ(got.params.cfg_scale, asked.params.cfg_scale);
      EXPECT_EQ(got.params.attention_query_chunk, asked.params.attention_query_chunk);
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
    const generation::GenerationParams &g = got.params, &a = asked.params;
    EXPECT_EQ(result->adjustments.size() > 0,
              !(g.gen_length == a.gen_length && g.block_length == a.block_length && g.steps == a.steps &&
                g.sampler == a.sampler && g.temperature == a.temperature && g.cfg_scale == a.cfg_scale &&
                g.attention_query_chunk == a.attention_query_chunk));
    if (!result->adjustments.empty()) ++clamped;
  }
  // The loop covers all outcomes.
  EXPECT_GT(ok, 1000);
  EXPECT_GT(clamped, 300);
  EXPECT_GT(exhausted, 50);
}

}  // namespace
}  // namespace unmask::fitting
