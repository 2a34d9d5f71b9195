#include "common/sampler/sampling_ops.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <tuple>

#include "common/model/cpu_features.h"
#include "common/model/greedy_rows.h"
#include "common/model/small_gemm.h"

namespace unmask::sampler {

at::Generator MakeSeededGenerator(c10::Device device, std::uint64_t seed) {
  at::Generator gen = device.is_cpu() ? at::make_generator<at::CPUGeneratorImpl>(seed)
                                      : at::globalContext().defaultGenerator(device).clone();
  gen.set_current_seed(seed);
  return gen;
}

at::Tensor AddGumbelNoise(const at::Tensor& logits, double temperature, at::Generator& gen) {
  at::Tensor l64 = logits.to(at::kDouble);
  at::Tensor noise = at::empty_like(l64).uniform_(0, 1, gen);
  at::Tensor gumbel = at::pow(-at::log(noise), temperature);
  return l64.exp() / gumbel;
}

at::Tensor FilterTopK(const at::Tensor& logits, std::int64_t k, double fill) {
  if (k <= 0) return logits;
  const at::Tensor kth = std::get<0>(at::topk(logits, std::min<std::int64_t>(k, logits.size(-1)))).narrow(-1, -1, 1);
  return logits.masked_fill(logits < kth, fill);
}

at::Tensor FilterTopP(const at::Tensor& logits, double p, double fill) {
  if (p >= 1.0) return logits;
  auto [sorted, order] = at::sort(logits, -1, /*descending=*/true);
  const at::Tensor crossed = at::cumsum(at::softmax(sorted, -1), -1) > p;
  at::Tensor drop = at::zeros_like(crossed);
  const std::int64_t v = logits.size(-1);
  drop.narrow(-1, 1, v - 1).copy_(crossed.narrow(-1, 0, v - 1));
  return logits.masked_fill(at::zeros_like(crossed).scatter(-1, order, drop), fill);
}

bool GreedyConfidenceOnCpu(const at::Tensor& logits, const std::vector<std::int64_t>& excluded, at::Tensor* x0,
                           at::Tensor* confidence) {
  const model::GemmPath path = model::ActiveGemmPath();
  const at::ScalarType dtype = logits.scalar_type();
  if (!logits.is_cpu() || logits.dim() != 2 || (dtype != at::kFloat && dtype != at::kBFloat16) ||
      !model::GreedyConfidenceRuns(path))
    return false;
  const at::Tensor l = logits.contiguous();
  const std::int64_t rows = l.size(0), vocab = l.size(1);
  at::Tensor ids = at::empty({rows}, at::kLong), conf = at::empty({rows}, at::kDouble);
  const bool ran = dtype == at::kFloat
                       ? model::GreedyConfidenceF32(path, l.data_ptr<float>(), rows, vocab, excluded,
                                                    ids.data_ptr<std::int64_t>(), conf.data_ptr<double>())
                       : model::GreedyConfidenceBf16(path, static_cast<const std::uint16_t*>(l.data_ptr()), rows,
                                                     vocab, excluded, ids.data_ptr<std::int64_t>(),
                                                     conf.data_ptr<double>());
  if (!ran) return false;
  *x0 = ids;
  *confidence = conf;
  return true;
}

at::Tensor ToTensor(const std::vector<std::vector<std::int64_t>>& rows, c10::Device device) {
  const auto b = static_cast<std::int64_t>(rows.size());
  const auto l = b ? static_cast<std::int64_t>(rows[0].size()) : 0;
  at::Tensor t = at::empty({b, l}, at::kLong);
  auto acc = t.accessor<std::int64_t, 2>();
  for (std::int64_t r = 0; r < b; ++r)
    for (std::int64_t c = 0; c < l; ++c) acc[r][c] = rows[r][c];
  return t.to(device);
}

std::vector<std::vector<std::int64_t>> ToRows(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kLong).contiguous();
  std::vector<std::vector<std::int64_t>> rows(c.size(0));
  const std::int64_t* data = c.data_ptr<std::int64_t>();
  for (std::int64_t r = 0; r < c.size(0); ++r) rows[r].assign(data + r * c.size(1), data + (r + 1) * c.size(1));
  return rows;
}

at::Tensor GuidedLogits(const at::Tensor& logits, double cfg_scale) {
  auto halves = logits.chunk(2, 0);
  return halves[1] + (cfg_scale + 1) * (halves[0] - halves[1]);
}

StepEvent MakeStepEvent(const at::Tensor& transfer, const at::Tensor& x, std::int64_t prompt_len) {
  StepEvent ev;
  at::Tensor t = transfer.cpu();
  at::Tensor xc = x.cpu();
  for (std::int64_t r = 0; r < t.size(0); ++r) {
    at::Tensor idx = t[r].nonzero().view(-1);  // ascending
    std::vector<std::int64_t> positions, tokens;
    auto acc = idx.accessor<std::int64_t, 1>();
    for (std::int64_t j = 0; j < idx.size(0); ++j) {
      positions.push_back(acc[j] - prompt_len);
      tokens.push_back(xc[r][acc[j]].item<std::int64_t>());
    }
    ev.positions.push_back(std::move(positions));
    ev.tokens.push_back(std::move(tokens));
  }
  return ev;
}

InitialSequence MakeInitialSequence(const std::vector<std::vector<std::int64_t>>& prompt_ids,
                                    const std::vector<std::vector<std::int64_t>>& prompt_mask, std::int64_t gen_length,
                                    std::int64_t mask_id, c10::Device device, const generation::Canvas& canvas) {
  const auto long_opts = at::TensorOptions().dtype(at::kLong).device(device);
  const auto batch = static_cast<std::int64_t>(prompt_ids.size());
  const auto suffix_len = static_cast<std::int64_t>(canvas.suffix.size());
  std::vector<std::int64_t> tail = canvas.RegionIds(gen_length, mask_id);
  tail.insert(tail.end(), canvas.suffix.begin(), canvas.suffix.end());
  InitialSequence s;
  s.x = at::cat({ToTensor(prompt_ids, device), ToTensor({tail}, device).expand({batch, gen_length + suffix_len})}, 1);
  if (!prompt_mask.empty())
    s.attention_mask =
        at::cat({ToTensor(prompt_mask, device), at::ones({batch, gen_length + suffix_len}, long_opts)}, 1);
  return s;
}

StatusOr<SamplingStart> StartSampling(const model::ModelBackend& model, const PromptBatch& raw_prompts,
                                      const GenerationParams& p) {
  const auto& config = model.config();
  UNMASK_ASSIGN_OR_RETURN(PromptBatch prompts, NormalizePromptBatch(raw_prompts, config.pad_token_id, config.embedding_size));
  SamplingStart s;
  s.batch = static_cast<std::int64_t>(prompts.ids.size());
  s.prompt_len = static_cast<std::int64_t>(prompts.ids[0].size());
  const auto suffix_len = static_cast<std::int64_t>(prompts.canvas.suffix.size());
  s.total = s.prompt_len + p.gen_length + suffix_len;
  s.canvas = !prompts.canvas.empty() && (suffix_len > 0 || prompts.canvas.has_fixed_region());
  UNMASK_RETURN_IF_ERROR(ValidateParams(p, config, s.prompt_len + suffix_len));
  UNMASK_RETURN_IF_ERROR(ValidateCanvas(prompts.canvas, p.gen_length, config.embedding_size, p.mask_id));
  try {
    const c10::Device device = model.device();
    s.gen = MakeSeededGenerator(device, p.seed);
    InitialSequence seq =
        MakeInitialSequence(prompts.ids, prompts.attention_mask, p.gen_length, p.mask_id, device, prompts.canvas);
    s.x = std::move(seq.x);
    s.attention_mask = std::move(seq.attention_mask);
    s.prompt_index = s.x.ne(p.mask_id);
  } catch (const std::exception& e) {
    return InternalError(std::string("sampler set-up: ") + e.what());
  }
  return s;
}

Status ReportStep(const StepCallback& on_step, StepEvent ev, std::int64_t step, std::int64_t block,
                  std::int64_t step_in_block, std::chrono::steady_clock::time_point start) {
  if (!on_step) return OkStatus();
  ev.step = step;
  ev.block = block;
  ev.step_in_block = step_in_block;
  ev.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!on_step(ev)) return CancelledError("generation cancelled after step " + std::to_string(step));
  return OkStatus();
}

}  // namespace unmask::sampler
