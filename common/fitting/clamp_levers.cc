#include "common/fitting/clamp_levers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <optional>

namespace unmask::fitting {
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
  const std::int64_t seq = r.prompt_length + r.params.gen_length;
  return r.params.attention_query_chunk > 0 && r.params.attention_query_chunk < seq ? r.params.attention_query_chunk : seq;
}

void SetChunk(Clamper& c, std::int64_t chunk, const std::string& why) {
  c.Record("attention_query_chunk", Str(c.asked().params.attention_query_chunk), Str(chunk), why);
  c.request().params.attention_query_chunk = chunk;
}

void SetSampler(Clamper& c, generation::SamplerMode sampler, const std::string& why) {
  c.Record("sampler", generation::SamplerModeName(c.asked().params.sampler), generation::SamplerModeName(sampler), why);
  c.request().params.sampler = sampler;
}

}  // namespace

MemoryEstimate Clamper::Estimate(const GenerationRequest& r) const {
  RequestShape shape = ShapeOf(r);
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
  if (l.gen != r_.params.gen_length) Record("gen_length", Str(asked_.params.gen_length), Str(l.gen), why_gen);
  const bool dream = generation::HasNoBlocks(r_.params.sampler);  // no blocks: block_length follows gen_length
  if (l.block != r_.params.block_length && !dream) Record("block_length", Str(asked_.params.block_length), Str(l.block), why_block);
  r_.params.gen_length = l.gen;
  r_.params.block_length = l.block;
}

void Clamper::FinishSteps() {
  if (r_.params.gen_length == asked_.params.gen_length && r_.params.block_length == asked_.params.block_length) return;
  if (generation::HasNoBlocks(r_.params.sampler)) {  // all the steps, over gen_length
    const std::int64_t steps = std::max<std::int64_t>(
        1, std::llround(static_cast<double>(asked_.params.steps) * r_.params.gen_length / asked_.params.gen_length));
    if (steps != asked_.params.steps)
      Record("steps", Str(asked_.params.steps), Str(steps),
             Str(steps) + " steps keep about the asked steps per token over gen_length " + Str(r_.params.gen_length));
    r_.params.steps = steps;
    return;
  }
  if (generation::IsBlockDiffusion(r_.params.sampler)) {  // steps per block
    if (r_.params.block_length == asked_.params.block_length) return;
    const double per_token = static_cast<double>(asked_.params.steps) / asked_.params.block_length;
    const std::int64_t steps = std::max<std::int64_t>(1, std::llround(per_token * r_.params.block_length));
    if (steps != asked_.params.steps)
      Record("steps", Str(asked_.params.steps), Str(steps),
             "llada2 counts steps per block: " + Str(steps) + " steps keep about the asked steps per token in blocks of " +
                 Str(r_.params.block_length));
    r_.params.steps = steps;
    return;
  }
  const std::int64_t blocks = r_.params.gen_length / r_.params.block_length;
  const double target = static_cast<double>(asked_.params.steps) * r_.params.gen_length / asked_.params.gen_length;
  const std::int64_t per_block = std::max<std::int64_t>(1, std::llround(target / blocks));
  const std::int64_t steps = std::min(per_block * blocks, r_.params.gen_length);
  if (steps != asked_.params.steps)
    Record("steps", Str(asked_.params.steps), Str(steps),
           "gen_length " + Str(r_.params.gen_length) + " in " + Str(blocks) + " block(s): " + Str(steps) +
               " steps keep about the asked steps per token, as a multiple of the number of blocks and at most gen_length");
  r_.params.steps = steps;
}

void ChunkLever(Clamper& c) {
  if (c.Fits()) return;
  const GenerationRequest& r = c.request();
  const MemoryEstimate before = c.Estimate(r);
  std::optional<std::int64_t> pick;
  for (std::int64_t chunk : kChunks) {
    if (chunk >= QueryRows(r)) continue;
    GenerationRequest t = r;
    t.params.attention_query_chunk = chunk;
    const MemoryEstimate e = c.Estimate(t);
    if (e.total() <= c.budget()) {
      pick = chunk;
      break;
    }
    if (chunk == kSmallestChunk && e.peak < before.peak) pick = chunk;
  }
  if (!pick) return;
  GenerationRequest t = r;
  t.params.attention_query_chunk = *pick;
  SetChunk(c, *pick,
           "attention scores of " + Str(QueryRows(r)) + " query rows need " + HumanBytes(before.attention_scores) +
               " per layer (peak " + HumanBytes(before.peak) + "); chunks of " + Str(*pick) + " rows need " +
               HumanBytes(c.Estimate(t).attention_scores) + " (peak " + HumanBytes(c.Estimate(t).peak) + ")");
}

void SamplerLever(Clamper& c) {
  if (c.Fits()) return;
  const GenerationRequest& r = c.request();
  const SamplerKind kind = SamplerKindOf(r.params.sampler);
  if (kind == SamplerKind::kLlada2) return;  // the one mode of LLaDA2 models
  const MemoryEstimate before = c.Estimate(r);
  for (SamplerKind to : {SamplerKind::kDualCache, SamplerKind::kBlockLogits}) {
    if (to == kind) continue;
    GenerationRequest t = r;
    t.params.sampler = WithSamplerKind(r.params.sampler, to);
    const MemoryEstimate e = c.Estimate(t);
    if (e.total() > c.budget() && !(to == SamplerKind::kBlockLogits && e.peak < before.peak)) continue;
    SetSampler(c, t.params.sampler,
               std::string(generation::SamplerModeName(r.params.sampler)) + " peaks at " + HumanBytes(before.peak) + " (" + before.peak_phase + "); " + generation::SamplerModeName(t.params.sampler) +
                   " computes logits for the current block only and peaks at " + HumanBytes(e.peak));
    return;
  }
}

void NoiseAndGuidanceLevers(Clamper& c) {
  GenerationRequest& r = c.request();
  if (!c.Fits() && r.params.temperature > 0) {
    GenerationRequest t = r;
    t.params.temperature = 0;
    const MemoryEstimate before = c.Estimate(r), after = c.Estimate(t);
    if (after.peak < before.peak) {
      c.Record("temperature", Str(c.asked().params.temperature), "0",
               "float64 Gumbel noise over the logits rows peaks at " + HumanBytes(before.peak) +
                   "; greedy decoding peaks at " + HumanBytes(after.peak));
      r.params.temperature = 0;
    }
  }
  if (!c.Fits() && r.params.cfg_scale > 0) {
    GenerationRequest t = r;
    t.params.cfg_scale = 0;
    const MemoryEstimate before = c.Estimate(r), after = c.Estimate(t);
    if (after.peak < before.peak) {
      c.Record("cfg_scale", Str(c.asked().params.cfg_scale), "0",
               "classifier-free guidance doubles the batch (peak " + HumanBytes(before.peak) +
                   "); without it the peak is " + HumanBytes(after.peak));
      r.params.cfg_scale = 0;
    }
  }
}

void AllLevers(Clamper& c) {
  GenerationRequest& r = c.request();
  const std::string why = "nothing fits at the minimum gen_length otherwise";
  if (QueryRows(r) > kSmallestChunk) SetChunk(c, kSmallestChunk, why);
  // The cache modes give up their K/V. Not the reference: greedy (as it is made below) it already
  // computes what block_logits does, so the switch would change nothing but the name.
  const SamplerKind kind = SamplerKindOf(r.params.sampler);
  if (kind != SamplerKind::kBlockLogits && kind != SamplerKind::kLlada2 && kind != SamplerKind::kReference)
    SetSampler(c, WithSamplerKind(r.params.sampler, SamplerKind::kBlockLogits), why);
  if (r.params.temperature > 0) {
    c.Record("temperature", Str(c.asked().params.temperature), "0", why);
    r.params.temperature = 0;
  }
  if (r.params.cfg_scale > 0) {
    c.Record("cfg_scale", Str(c.asked().params.cfg_scale), "0", why);
    r.params.cfg_scale = 0;
  }
}

void Relax(Clamper& c) {
  GenerationRequest& r = c.request();
  const GenerationRequest& asked = c.asked();
  if (r.params.sampler != asked.params.sampler) {
    GenerationRequest t = r;
    t.params.sampler = asked.params.sampler;
    if (c.Fits(t)) {
      r.params.sampler = asked.params.sampler;
      c.Drop("sampler");
    } else if (SamplerKindOf(r.params.sampler) == SamplerKind::kBlockLogits) {
      t.params.sampler = WithSamplerKind(asked.params.sampler, SamplerKind::kDualCache);
      if (t.params.sampler != r.params.sampler && c.Fits(t)) SetSampler(c, t.params.sampler, std::string(generation::SamplerModeName(t.params.sampler)) + " fits after the other changes");
    }
  }
  if (r.params.cfg_scale != asked.params.cfg_scale) {
    GenerationRequest t = r;
    t.params.cfg_scale = asked.params.cfg_scale;
    if (c.Fits(t)) {
      r.params.cfg_scale = asked.params.cfg_scale;
      c.Drop("cfg_scale");
    }
  }
  if (r.params.temperature != asked.params.temperature) {
    GenerationRequest t = r;
    t.params.temperature = asked.params.temperature;
    if (c.Fits(t)) {
      r.params.temperature = asked.params.temperature;
      c.Drop("temperature");
    }
  }
  if (r.params.attention_query_chunk == asked.params.attention_query_chunk) return;
  // Chunking changes speed, not results: take back as much of it as fits.
  std::vector<std::int64_t> tries = {asked.params.attention_query_chunk};
  for (std::int64_t chunk : kChunks)
    if (chunk > r.params.attention_query_chunk && chunk < QueryRows(asked)) tries.push_back(chunk);
  for (std::int64_t chunk : tries) {
    GenerationRequest t = r;
    t.params.attention_query_chunk = chunk;
    if (!c.Fits(t)) continue;
    if (chunk == asked.params.attention_query_chunk) {
      r.params.attention_query_chunk = chunk;
      c.Drop("attention_query_chunk");
    } else {
      SetChunk(c, chunk, "a chunk of " + Str(chunk) + " rows fits after the other changes");
    }
    return;
  }
}

}  // namespace unmask::fitting
