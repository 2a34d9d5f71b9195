#include "common/memory/clamp_levers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <optional>

namespace unmask::memory {
namespace {

std::string Str(std::int64_t v) { return std::to_string(v); }
std::string Str(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

constexpr std::int64_t kChunks[] = {2048, 1024, 512, 256, 128, 64, 32, 16};
constexpr std::int64_t kSmallestChunk = 16;

std::int64_t QueryRows(const GenerationRequest& r) {
  const std::int64_t seq = r.prompt_length + r.gen_length;
  return r.attention_query_chunk > 0 && r.attention_query_chunk < seq ? r.attention_query_chunk : seq;
}

void SetChunk(Clamper& c, std::int64_t chunk, const std::string& why) {
  c.Record("attention_query_chunk", Str(c.asked().attention_query_chunk), Str(chunk), why);
  c.request().attention_query_chunk = chunk;
}

void SetSampler(Clamper& c, const std::string& sampler, const std::string& why) {
  c.Record("sampler", c.asked().sampler, sampler, why);
  c.request().sampler = sampler;
}

}  // namespace

MemoryEstimate Clamper::Estimate(const GenerationRequest& r) const {
  RequestShape shape = *ShapeOf(r);  // validated by Clamp
  shape.weights_bytes = weights_;
  return EstimateRequest(config_, shape);
}

std::string Clamper::Needs(const GenerationRequest& r) const {
  const MemoryEstimate e = Estimate(r);
  return "needs " + HumanBytes(e.total()) + " (weights " + HumanBytes(e.weights) + " + peak " + HumanBytes(e.peak) +
         " in phase " + e.peak_phase + "), the budget is " + HumanBytes(budget_);
}

void Clamper::Record(const std::string& field, const std::string& asked, const std::string& applied,
                     const std::string& why) {
  for (auto& a : adjustments_) {
    if (a.field != field) continue;
    a.applied = applied;
    a.reason += "; then " + why;
    return;
  }
  adjustments_.push_back({field, asked, applied, why});
}

void Clamper::Drop(const std::string& field) {
  adjustments_.erase(std::remove_if(adjustments_.begin(), adjustments_.end(),
                                    [&](const Adjustment& a) { return a.field == field; }),
                     adjustments_.end());
}

void Clamper::SetLengths(const Lengths& l, const std::string& why_gen, const std::string& why_block) {
  if (l.gen != r_.gen_length) Record("gen_length", Str(asked_.gen_length), Str(l.gen), why_gen);
  if (l.block != r_.block_length) Record("block_length", Str(asked_.block_length), Str(l.block), why_block);
  r_.gen_length = l.gen;
  r_.block_length = l.block;
}

void Clamper::FinishSteps() {
  if (r_.gen_length == asked_.gen_length && r_.block_length == asked_.block_length) return;
  const std::int64_t blocks = r_.gen_length / r_.block_length;
  const double target = static_cast<double>(asked_.steps) * r_.gen_length / asked_.gen_length;
  const std::int64_t per_block = std::max<std::int64_t>(1, std::llround(target / blocks));
  const std::int64_t steps = std::min(per_block * blocks, r_.gen_length);
  if (steps != asked_.steps)
    Record("steps", Str(asked_.steps), Str(steps),
           "gen_length " + Str(r_.gen_length) + " in " + Str(blocks) + " block(s): " + Str(steps) +
               " steps keep about the asked steps per token, as a multiple of the number of blocks and at most gen_length");
  r_.steps = steps;
}

void ChunkLever(Clamper& c) {
  if (c.Fits()) return;
  const GenerationRequest& r = c.request();
  const MemoryEstimate before = c.Estimate(r);
  std::optional<std::int64_t> pick;
  for (std::int64_t chunk : kChunks) {
    if (chunk >= QueryRows(r)) continue;
    GenerationRequest t = r;
    t.attention_query_chunk = chunk;
    const MemoryEstimate e = c.Estimate(t);
    if (e.total() <= c.budget()) {
      pick = chunk;
      break;
    }
    if (chunk == kSmallestChunk && e.peak < before.peak) pick = chunk;
  }
  if (!pick) return;
  GenerationRequest t = r;
  t.attention_query_chunk = *pick;
  SetChunk(c, *pick,
           "attention scores of " + Str(QueryRows(r)) + " query rows need " + HumanBytes(before.attention_scores) +
               " per layer (peak " + HumanBytes(before.peak) + "); chunks of " + Str(*pick) + " rows need " +
               HumanBytes(c.Estimate(t).attention_scores) + " (peak " + HumanBytes(c.Estimate(t).peak) + ")");
}

void SamplerLever(Clamper& c) {
  if (c.Fits()) return;
  const GenerationRequest& r = c.request();
  const SamplerKind kind = *SamplerKindOf(r.sampler);
  const MemoryEstimate before = c.Estimate(r);
  for (SamplerKind to : {SamplerKind::kDualCache, SamplerKind::kBlockLogits}) {
    if (to == kind) continue;
    GenerationRequest t = r;
    t.sampler = WithSamplerKind(r.sampler, to);
    const MemoryEstimate e = c.Estimate(t);
    if (e.total() > c.budget() && !(to == SamplerKind::kBlockLogits && e.peak < before.peak)) continue;
    SetSampler(c, t.sampler,
               r.sampler + " peaks at " + HumanBytes(before.peak) + " (" + before.peak_phase + "); " + t.sampler +
                   " computes logits for the current block only and peaks at " + HumanBytes(e.peak));
    return;
  }
}

void NoiseAndGuidanceLevers(Clamper& c) {
  GenerationRequest& r = c.request();
  if (!c.Fits() && r.temperature > 0) {
    GenerationRequest t = r;
    t.temperature = 0;
    const MemoryEstimate before = c.Estimate(r), after = c.Estimate(t);
    if (after.peak < before.peak) {
      c.Record("temperature", Str(c.asked().temperature), "0",
               "float64 Gumbel noise over the logits rows peaks at " + HumanBytes(before.peak) +
                   "; greedy decoding peaks at " + HumanBytes(after.peak));
      r.temperature = 0;
    }
  }
  if (!c.Fits() && r.cfg_scale > 0) {
    GenerationRequest t = r;
    t.cfg_scale = 0;
    const MemoryEstimate before = c.Estimate(r), after = c.Estimate(t);
    if (after.peak < before.peak) {
      c.Record("cfg_scale", Str(c.asked().cfg_scale), "0",
               "classifier-free guidance doubles the batch (peak " + HumanBytes(before.peak) +
                   "); without it the peak is " + HumanBytes(after.peak));
      r.cfg_scale = 0;
    }
  }
}

void AllLevers(Clamper& c) {
  GenerationRequest& r = c.request();
  const std::string why = "nothing fits at the minimum gen_length otherwise";
  if (QueryRows(r) > kSmallestChunk) SetChunk(c, kSmallestChunk, why);
  if (*SamplerKindOf(r.sampler) != SamplerKind::kBlockLogits)
    SetSampler(c, WithSamplerKind(r.sampler, SamplerKind::kBlockLogits), why);
  if (r.temperature > 0) {
    c.Record("temperature", Str(c.asked().temperature), "0", why);
    r.temperature = 0;
  }
  if (r.cfg_scale > 0) {
    c.Record("cfg_scale", Str(c.asked().cfg_scale), "0", why);
    r.cfg_scale = 0;
  }
}

void Relax(Clamper& c) {
  GenerationRequest& r = c.request();
  const GenerationRequest& asked = c.asked();
  if (r.sampler != asked.sampler) {
    GenerationRequest t = r;
    t.sampler = asked.sampler;
    if (c.Fits(t)) {
      r.sampler = asked.sampler;
      c.Drop("sampler");
    } else if (*SamplerKindOf(r.sampler) == SamplerKind::kBlockLogits) {
      t.sampler = WithSamplerKind(asked.sampler, SamplerKind::kDualCache);
      if (t.sampler != r.sampler && c.Fits(t)) SetSampler(c, t.sampler, t.sampler + " fits after the other changes");
    }
  }
  if (r.cfg_scale != asked.cfg_scale) {
    GenerationRequest t = r;
    t.cfg_scale = asked.cfg_scale;
    if (c.Fits(t)) {
      r.cfg_scale = asked.cfg_scale;
      c.Drop("cfg_scale");
    }
  }
  if (r.temperature != asked.temperature) {
    GenerationRequest t = r;
    t.temperature = asked.temperature;
    if (c.Fits(t)) {
      r.temperature = asked.temperature;
      c.Drop("temperature");
    }
  }
  if (r.attention_query_chunk == asked.attention_query_chunk) return;
  // Chunking changes speed, not results: take back as much of it as fits.
  std::vector<std::int64_t> tries = {asked.attention_query_chunk};
  for (std::int64_t chunk : kChunks)
    if (chunk > r.attention_query_chunk && chunk < QueryRows(asked)) tries.push_back(chunk);
  for (std::int64_t chunk : tries) {
    GenerationRequest t = r;
    t.attention_query_chunk = chunk;
    if (!c.Fits(t)) continue;
    if (chunk == asked.attention_query_chunk) {
      r.attention_query_chunk = chunk;
      c.Drop("attention_query_chunk");
    } else {
      SetChunk(c, chunk, "a chunk of " + Str(chunk) + " rows fits after the other changes");
    }
    return;
  }
}

}  // namespace unmask::memory
