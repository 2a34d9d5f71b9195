#include "common/sampler/llada2_sampler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/model/llada_model.h"
#include "common/sampler/sampling_ops.h"
#include "common/sampler/step_logprobs.h"
#include "common/sampler/transfer_schedule.h"

namespace unmask::sampler {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Status CheckOptions(const PromptBatch& prompts, const GenerationParams& p, const Llada2Options& o) {
  if (prompts.ids.size() != 1)
    return InvalidFieldError("prompts", "LLaDA2's sampler takes one prompt, got " + std::to_string(prompts.ids.size()));
  if (prompts.ids[0].empty()) return InvalidFieldError("prompts", "the prompt is empty");
  if (!prompts.canvas.suffix.empty())
    return InvalidFieldError("canvas.suffix", "LLaDA2's block-causal attention lets no block see the text after it, "
                                              "so a suffix cannot steer the gap; infill with a bidirectional model "
                                              "(LLaDA, LLaDA-MoE, Dream), or give the text as a template's fixed tokens");
  if (p.gen_length < 1) return InvalidFieldError("gen_length", "must be at least 1");
  if (p.block_length < 1) return InvalidFieldError("block_length", "must be at least 1");
  if (p.steps < 1) return InvalidFieldError("steps", "must be at least 1");
  if (!(p.temperature >= 0) || !std::isfinite(p.temperature)) return InvalidFieldError("temperature", "must be >= 0");
  if (o.minimal_topk < 1 || o.minimal_topk > p.gen_length)
    return InvalidFieldError("minimal_topk", "must be between 1 and gen_length (" + std::to_string(p.gen_length) + ")");
  if (!(o.threshold >= 0 && o.threshold <= 1)) return InvalidFieldError("threshold", "must be in [0, 1]");
  if (o.top_k < 0) return InvalidFieldError("top_k", "must be >= 0 (0 = off)");
  if (!(o.top_p > 0 && o.top_p <= 1)) return InvalidFieldError("top_p", "must be in (0, 1] (1 = off)");
  if (!o.token_editing) return OkStatus();
  if (!(o.editing_threshold >= 0 && o.editing_threshold <= 1))
    return InvalidFieldError("editing_threshold", "must be in [0, 1]");
  if (o.max_post_steps < 0) return InvalidFieldError("max_post_steps", "must be >= 0");
  if (o.num_to_transfer < 1) return InvalidFieldError("num_to_transfer", "must be >= 1");
  return OkStatus();
}

class Llada2StepSampler : public StepSampler {
 public:
  Llada2StepSampler(const model::LladaModel& model, std::vector<std::int64_t> prompt, const Canvas& canvas,
                    const GenerationParams& p, const Llada2Options& o)
      : model_(model), p_(p), o_(o), prompt_len_(static_cast<std::int64_t>(prompt.size())), bl_(p.block_length),
        gen_(MakeSeededGenerator(model.device(), p.seed)), eos_ends_(!canvas.has_fixed_region()) {
    steps_ = std::min(p.steps, p.gen_length / o.minimal_topk);
    // The official _get_num_transfer_tokens(block_length, steps): LLaDA's schedule over a whole block.
    schedule_ = NumTransferTokens(bl_, steps_);  // steps_ >= 1: minimal_topk <= gen_length
    num_blocks_ = (prompt_len_ + p.gen_length + bl_ - 1) / bl_;
    x_ = at::full({1, num_blocks_ * bl_}, p.mask_id, at::TensorOptions().dtype(at::kLong).device(model.device()));
    x_.narrow(1, 0, prompt_len_).copy_(ToTensor({prompt}, model.device()));
    x_.narrow(1, prompt_len_, p.gen_length).copy_(ToTensor({canvas.RegionIds(p.gen_length, p.mask_id)}, model.device()));
    fixed_ = x_[0].ne(p.mask_id);  // the prompt and a template's fixed tokens: never edited
    first_block_ = prompt_len_ / bl_;
    block_ = first_block_;
    result_.sampler = o.token_editing ? "llada21" : "llada2";
    Advance();
  }

  bool running() const override { return running_; }

  // The window up to the block's end (the block's first step, or every step without the cache),
  // or the block alone against the cached K/V of the blocks before it.
  model::PackedSegment NextForward() override {
    model::PackedSegment seg;
    seg.whole = !o_.cache || step_in_block_ == 0;
    seg.ids = seg.whole ? x_.narrow(1, 0, (block_ + 1) * bl_) : Block();
    seg.offset = seg.whole ? 0 : block_ * bl_;
    seg.cache = o_.cache ? &cache_ : nullptr;
    seg.causal_block = bl_;
    seg.attention_query_chunk = p_.attention_query_chunk;
    hidden_offset_ = seg.offset;
    return seg;
  }

  StepEvent FinishStep(const at::Tensor& hidden) override;

  GenerationResult Result() const override {
    GenerationResult r = result_;
    r.output = ToRows(x_.narrow(1, prompt_len_, p_.gen_length));
    return r;
  }
  std::int64_t CacheBytes() const override { return cache_.Bytes(); }

 private:
  at::Tensor Block() const { return x_.narrow(1, block_ * bl_, bl_); }  // a view: writes land in x_
  // The block's tokens and their probabilities, [bl] each.
  std::pair<at::Tensor, at::Tensor> Sample(const at::Tensor& logits);
  at::Tensor PickTransfers(const at::Tensor& confidence, const at::Tensor& masked) const;
  // LLaDA2.1: the committed, non-prompt positions of the block whose new sample differs and is
  // more probable than editing_threshold.
  at::Tensor PickEdits(const at::Tensor& x0, const at::Tensor& p0, const at::Tensor& masked) const;
  // Whether the block has another step to run; counts LLaDA2.1's post steps.
  bool BlockContinues();
  // True when an EOS committed this step ends the generation at once (eos_early_stop).
  bool EarlyStop(const at::Tensor& x0, const at::Tensor& transfer) const;
  // The next step to run: the current block while it has masks and steps left, else the next
  // block, unless the last block ended or an EOS was generated.
  void Advance();
  void Stop();

  const model::LladaModel& model_;
  const GenerationParams p_;
  const Llada2Options o_;
  const std::int64_t prompt_len_, bl_;
  at::Generator gen_;
  std::int64_t steps_ = 0, num_blocks_ = 0, first_block_ = 0, block_ = 0, step_in_block_ = 0, step_ = 0;
  std::int64_t post_steps_ = 0;  // LLaDA2.1: steps of this block that began with no mask
  bool block_done_ = false;      // LLaDA2.1: a step found no mask and edited nothing
  std::vector<std::int64_t> schedule_;
  at::Tensor x_;  // [1, num_blocks * bl]: the whole canvas, padded to whole blocks
  model::KvCache cache_;
  std::int64_t hidden_offset_ = 0;  // the position of the last forward's first hidden row
  bool running_ = true;
  GenerationResult result_;
  // False for a template (fixed tokens in the region): an EOS then ends nothing early, and
  // nothing after it is overwritten, so every hole is filled and every fixed token stays.
  const bool eos_ends_;
  at::Tensor fixed_;  // [num_blocks * bl] bool
};

std::pair<at::Tensor, at::Tensor> Llada2StepSampler::Sample(const at::Tensor& raw) {
  at::Tensor logits = raw.to(at::kFloat);
  if (p_.temperature == 0) {
    const at::Tensor probs = at::softmax(logits, -1);
    // LLaDA2.0 takes the argmax of the probabilities, LLaDA2.1 that of the logits (ties aside, the same).
    const at::Tensor token = (o_.token_editing ? logits : probs).argmax(-1, /*keepdim=*/true);
    return {token.squeeze(-1), probs.gather(-1, token).squeeze(-1)};
  }
  if (p_.temperature != 1.0) logits = logits / p_.temperature;
  logits = FilterTopP(FilterTopK(logits, o_.top_k, kNegInf), o_.top_p, kNegInf);  // top_k first, as the official code
  const at::Tensor probs = at::softmax(logits, -1);
  const at::Tensor token = at::multinomial(probs, 1, /*replacement=*/false, gen_);
  return {token.squeeze(-1), probs.gather(-1, token).squeeze(-1)};
}

at::Tensor Llada2StepSampler::PickTransfers(const at::Tensor& confidence, const at::Tensor& masked) const {
  const at::Tensor high = confidence > o_.threshold;
  const std::int64_t wanted =
      o_.token_editing ? o_.num_to_transfer : schedule_[static_cast<std::size_t>(step_in_block_)];
  if (high.sum().item<std::int64_t>() >= wanted) return high;
  at::Tensor transfer = at::zeros_like(masked);
  const std::int64_t k = std::min(wanted, masked.sum().item<std::int64_t>());
  if (k > 0) transfer.index_fill_(0, std::get<1>(at::topk(confidence, k)), true);
  return transfer;
}

at::Tensor Llada2StepSampler::PickEdits(const at::Tensor& x0, const at::Tensor& p0, const at::Tensor& masked) const {
  const at::Tensor editable = masked.logical_not().logical_and(fixed_.narrow(0, block_ * bl_, bl_).logical_not());
  return editable.logical_and(p0.to(at::kFloat) > o_.editing_threshold).logical_and(x0.ne(Block()[0]));
}

bool Llada2StepSampler::EarlyStop(const at::Tensor& x0, const at::Tensor& transfer) const {
  if (!eos_ends_ || !o_.eos_early_stop || !x0.masked_select(transfer).eq(p_.eos_id).any().item<bool>()) return false;
  const at::Tensor window = x_[0].narrow(0, 0, (block_ + 1) * bl_);
  const at::Tensor eos = window.eq(p_.eos_id).nonzero();
  if (eos.numel() == 0) return false;
  const std::int64_t first = eos[0][0].item<std::int64_t>();
  return first < prompt_len_ || !window.narrow(0, prompt_len_, first - prompt_len_).eq(p_.mask_id).any().item<bool>();
}

StepEvent Llada2StepSampler::FinishStep(const at::Tensor& hidden) {
  const at::Tensor logits = model_.HeadLogits(hidden[0].narrow(0, block_ * bl_ - hidden_offset_, bl_));  // [bl, V]
  at::Tensor block = Block()[0];
  const at::Tensor masked = block.eq(p_.mask_id);
  StepLogprobs lp;  // every position of the block: LLaDA2.1's edits are commits too
  if (p_.logprobs >= 0) {
    const at::Tensor positions = at::arange(block_ * bl_, (block_ + 1) * bl_, masked.options().dtype(at::kLong));
    lp = StepLogprobs::Take(logits, at::zeros_like(positions), positions, p_.logprobs);
  }
  auto [x0, p0] = Sample(logits);
  const at::Tensor confidence = at::where(masked, p0.to(at::kFloat), at::full_like(p0, kNegInf, at::kFloat));
  at::Tensor transfer = PickTransfers(confidence, masked);
  if (o_.token_editing) {
    const at::Tensor edits = PickEdits(x0, p0, masked);
    block_done_ = !masked.any().item<bool>() && !edits.any().item<bool>();
    transfer = transfer.logical_or(edits);
  }
  block.copy_(at::where(transfer, x0, block));
  const bool stop_now = !o_.token_editing && EarlyStop(x0, transfer);  // LLaDA2.1 checks after the block

  // The event reports the generated positions only (not the padding of the last block), and not
  // a position given the mask token itself: it stays masked, to be predicted again.
  at::Tensor placed = at::zeros_like(x_, at::kBool);
  placed[0].narrow(0, block_ * bl_, bl_).copy_(transfer.logical_and(x0.ne(p_.mask_id)));
  placed.narrow(1, prompt_len_ + p_.gen_length, placed.size(1) - prompt_len_ - p_.gen_length).fill_(false);
  StepEvent ev = MakeStepEvent(placed.narrow(1, 0, prompt_len_ + p_.gen_length),
                               x_.narrow(1, 0, prompt_len_ + p_.gen_length), prompt_len_);
  lp.Attach(ev, prompt_len_);
  ev.step = step_++;
  ev.block = block_ - first_block_;
  ev.step_in_block = step_in_block_++;
  ++result_.steps_run;
  if (stop_now) {
    Stop();
  } else {
    Advance();
  }
  return ev;
}

bool Llada2StepSampler::BlockContinues() {
  const bool masks_left = Block().eq(p_.mask_id).any().item<bool>();
  if (!o_.token_editing) return step_in_block_ < steps_ && masks_left;
  if (block_done_) return false;
  if (masks_left) return true;
  return ++post_steps_ <= o_.max_post_steps;  // the official loop counts a post step before it runs
}

void Llada2StepSampler::Advance() {
  while (block_ < num_blocks_) {
    if (BlockContinues()) return;
    // The block is done: an EOS anywhere generated so far ends the generation.
    const std::int64_t end = (block_ + 1) * bl_;
    if (eos_ends_ && x_[0].narrow(0, prompt_len_, end - prompt_len_).eq(p_.eos_id).any().item<bool>()) break;
    ++block_;
    step_in_block_ = post_steps_ = 0;
    block_done_ = false;
  }
  Stop();
}

// The official generate returns the ids up to the first EOS; the rest of the generated part is
// made EOS here too, so that the output has gen_length ids and reads the same when cut at EOS.
void Llada2StepSampler::Stop() {
  running_ = false;
  if (!eos_ends_) return;
  at::Tensor gen = x_[0].narrow(0, prompt_len_, p_.gen_length);
  const at::Tensor eos = gen.eq(p_.eos_id).nonzero();
  if (eos.numel() == 0) return;
  const std::int64_t first = eos[0][0].item<std::int64_t>();
  gen.narrow(0, first, p_.gen_length - first).fill_(p_.eos_id);
}

}  // namespace

Llada2Options Llada2OptionsOf(const GenerationParams& p) {
  Llada2Options o;
  o.threshold = p.threshold;
  o.minimal_topk = p.minimal_topk;
  o.top_k = p.top_k;
  o.top_p = p.top_p;
  o.eos_early_stop = p.eos_early_stop;
  o.token_editing = p.sampler == generation::SamplerMode::kLlada21;
  o.editing_threshold = p.editing_threshold;
  o.max_post_steps = p.max_post_steps;
  o.num_to_transfer = p.num_to_transfer;
  return o;
}

StatusOr<std::unique_ptr<StepSampler>> StartLlada2StepSampler(const model::LladaModel& model, const PromptBatch& prompts,
                                                              const GenerationParams& params,
                                                              const Llada2Options& options) {
  UNMASK_RETURN_IF_ERROR(CheckOptions(prompts, params, options));
  const auto& config = model.config();
  UNMASK_RETURN_IF_ERROR(ValidateCanvas(prompts.canvas, params.gen_length, config.embedding_size, params.mask_id));
  UNMASK_ASSIGN_OR_RETURN(PromptBatch normal, NormalizePromptBatch(prompts, config.pad_token_id, config.embedding_size));
  if (params.mask_id < 0 || params.mask_id >= config.embedding_size)
    return InvalidFieldError("mask_id", std::to_string(params.mask_id) + " is outside the vocabulary");
  try {
    return std::unique_ptr<StepSampler>(std::make_unique<Llada2StepSampler>(model, normal.ids[0], normal.canvas, params, options));
  } catch (const std::exception& e) {
    return InternalError(std::string("llada2 sampler: ") + e.what());
  }
}

}  // namespace unmask::sampler
