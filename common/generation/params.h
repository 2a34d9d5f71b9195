// The one set of generation parameters: what a request asks for, whichever door it comes through
// (the gRPC API, the OpenAI-compatible HTTP API, the `unmask` CLI, `unmask-engine`), what the
// scheduler's memory clamp changes, and what the executor's samplers run. No LibTorch.
//
// The first fields are the arguments of the official LLaDA generate() plus a seed; then the
// sampler mode and its options. Every field has one default, documented here and applied in one
// place (ResolveLengths for the three lengths, whose defaults depend on each other).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/checkpoint/llada_config.h"
#include "common/generation/sampler_mode.h"
#include "common/util/status.h"

namespace unmask::generation {

enum class Remasking { kLowConfidence, kRandom };
StatusOr<Remasking> ParseRemasking(const std::string& text);  // "low_confidence" | "random"
const char* RemaskingName(Remasking r);

// Dream's `alg` (its generation_utils.py): which masked positions a step commits.
//   origin        each masked position independently, with probability 1 - s/t (random draws
//                 even at temperature 0)
//   maskgit_plus  the most confident (probability of the sampled token)
//   topk_margin   the largest margin between the two most likely tokens
//   entropy       the lowest entropy (the model card's choice, and the default here)
enum class DreamAlg { kOrigin, kMaskgitPlus, kTopkMargin, kEntropy };
StatusOr<DreamAlg> ParseDreamAlg(const std::string& text);  // error names the field "alg"
const char* DreamAlgName(DreamAlg alg);

// Defaults of the lengths (see ResolveLengths).
constexpr std::int64_t kDefaultGenLength = 128;
constexpr std::int64_t kDefaultMaxBlockLength = 32;
// Upper bounds a request may ask for (the model's max_sequence_length bounds them further).
constexpr std::int64_t kMaxGenLength = 16384;
constexpr std::int64_t kMaxAttentionQueryChunk = 1 << 20;
constexpr double kMaxTemperature = 100;
constexpr double kMaxCfgScale = 100;
constexpr double kMaxFactor = 1e6;
// The threshold of the threshold modes when a request gives none; LLaDA2's generate() uses 0.95.
constexpr double kDefaultThreshold = 0.9;
constexpr double kDefaultLlada2Threshold = 0.95;
constexpr std::int64_t kMaxPostSteps = 1024;
constexpr std::int32_t kMaxLogprobs = 20;  // top alternatives a request may ask for (OpenAI's limit)
// The Monte Carlo likelihood's defaults (official get_log_likelihood()) and bounds.
constexpr std::int32_t kDefaultMcNum = 128;
constexpr std::int32_t kDefaultMcBatchSize = 16;
constexpr std::int32_t kMaxMcNum = 65536;

// The official Monte Carlo estimate of log p(continuation | context): the prompt's last
// continuation_tokens tokens are the continuation, the rest the context
// (common/sampler/likelihood.h says how each model family estimates it). A job that asks for it
// generates nothing.
struct LikelihoodParams {
  std::int64_t continuation_tokens = 0;  // >= 1, at most the prompt's length
  std::int32_t mc_num = kDefaultMcNum;    // rows drawn in all, a multiple of batch_size
  std::int32_t batch_size = kDefaultMcBatchSize;  // rows of one draw (the estimate depends on it)
  bool check_greedy = false;  // also whether greedy unmasking gives the continuation (LLaDA only)
  // The most samples one forward runs, <= batch_size; 0: the scheduler's memory clamp chooses
  // (fitting::Clamp; unmask-engine: batch_size). The executor runs one where it is still 0.
  std::int32_t rows_per_forward = 0;
};

struct GenerationParams {
  std::int64_t gen_length = kDefaultGenLength;  // tokens to generate
  std::int64_t block_length = kDefaultMaxBlockLength;  // semi-autoregressive block length
  std::int64_t steps = kDefaultGenLength;        // diffusion steps in total
  double temperature = 0.0;  // 0: argmax; > 0: Gumbel-max noise in float64
  double cfg_scale = 0.0;    // classifier-free guidance; 0: off
  Remasking remasking = Remasking::kLowConfidence;
  bool logits_eos_inf = false;          // EOS logit -inf before sampling
  bool confidence_eos_eot_inf = false;  // see common/sampler/reference_sampler.h for the exact semantics
  std::uint64_t seed = 0;

  SamplerMode sampler = SamplerMode::kReference;
  double threshold = kDefaultThreshold;  // threshold modes: unmask every masked token with confidence >= this
                                         // (llada2: > this; default kDefaultLlada2Threshold, see ResolveThreshold)
  double factor = 1.0;     // factor modes: Fast-dLLM's factor f (common/sampler/parallel_decoding.h)
  bool early_stop = true;  // fast modes: a row stops once a block ends in EOS (reference: no effect)
  bool stop_at_eos = false;  // cut the returned ids at the first EOS / EOT
  std::int64_t attention_query_chunk = 0;  // > 0: attention in chunks of this many query rows; 0: the executor's

  // The block-diffusion modes only (LLaDA2MoeModelLM.generate's arguments; any other mode refuses
  // a value but the default). There `steps` counts the steps of each block, capped at gen_length /
  // minimal_topk (llada21's generate() computes that cap and uses neither).
  std::int64_t minimal_topk = 1;  // in [1, gen_length]
  std::int64_t top_k = 0;         // temperature > 0: keep the k most likely tokens; 0 = off
  double top_p = 1.0;             // temperature > 0: nucleus of probability top_p, in (0, 1]; 1 = off
  bool eos_early_stop = false;    // stop once an EOS is committed with nothing masked before it
  // llada21 only (token editing): a committed token of the current block is replaced by a new
  // sample whose probability is above editing_threshold; a block runs at most max_post_steps
  // steps once it has no mask left; each step commits at least num_to_transfer masked tokens.
  double editing_threshold = 0.9;    // in [0, 1]
  std::int64_t max_post_steps = 16;  // in [0, kMaxPostSteps]
  std::int64_t num_to_transfer = 1;  // in [1, block_length]
  // dream only (Dream's diffusion_generate; it also takes temperature, top_k and top_p, applied
  // top_p first): `steps` are all the steps, over the whole generation (no blocks), and step i
  // runs from time t_i to t_(i+1) of linspace(1, eps, steps + 1).
  DreamAlg alg = DreamAlg::kEntropy;
  double alg_temp = 0;  // > 0: commit positions drawn from softmax(confidence / alg_temp); 0 = the top ones
  double eps = 1e-3;    // the schedule's last time, in (0, 1)

  // Log-probabilities (every mode): < 0 none; k in [0, kMaxLogprobs]: every committed token's
  // log-probability — the log-softmax of the logits of the step that committed it, after guidance
  // and the EOS switches, before temperature, noise and top-k/top-p — and its k most likely
  // alternatives at that step (StepEvent::logprobs).
  std::int32_t logprobs = -1;
  // Log-probabilities of the prompt's own tokens: < 0 none; k in [0, kMaxLogprobs]: each prompt
  // token's log-probability given the tokens before it, and its k most likely alternatives
  // (common/sampler/prompt_logprobs.h: how a diffusion model scores them).
  std::int32_t prompt_logprobs = -1;
  // Set: the job estimates the continuation's log-likelihood and generates nothing.
  std::optional<LikelihoodParams> likelihood;
  // With prompt_logprobs: the job scores its prompt and generates nothing.
  bool score_only = false;

  // The model's token ids the sampler acts on (WithModelTokens sets them from config.json; the
  // official code fixes them to LLaDA-8B's, the defaults here).
  std::int64_t mask_id = 126336;
  std::int64_t eos_id = 126081;
  std::int64_t eot_id = 126348;
};

// The lengths a request leaves out get their defaults, in one place; they depend on
// params.sampler, which must be set first:
//   gen_length    128
//   block_length  the largest divisor of gen_length not above 32 (32 when gen_length is a
//                 multiple of 32, as in the official examples; gen_length itself when shorter);
//                 llada2, llada21: 32 (their blocks are counted from position 0, they need not
//                 divide it)
//   steps         gen_length (one token unmasked per step); llada2, llada21: block_length (steps
//                 per block)
//   dream has no blocks: block_length = gen_length (one block), steps gen_length
// A length that is given is kept as it is, valid or not (ValidateFields judges it).
void ResolveLengths(std::optional<std::int64_t> gen_length, std::optional<std::int64_t> block_length,
                    std::optional<std::int64_t> steps, GenerationParams& params);

// The threshold, or when none is given the default of params.sampler (set it first):
// kDefaultLlada2Threshold for the block-diffusion modes, kDefaultThreshold otherwise.
void ResolveThreshold(std::optional<double> threshold, GenerationParams& params);

// The mode a request that names none runs on this model: llada21 on an LLaDA2.1 model, llada2 on
// an LLaDA2.0 one, dream on Dream, the reference on LLaDA and LLaDA-MoE.
SamplerMode DefaultSampler(const checkpoint::LladaConfig& config);

// The mask / EOS / EOT ids of the model.
void WithModelTokens(const checkpoint::LladaConfig& config, GenerationParams& params);

// What the fast samplers read: the mode's cache kind and decoding rule with their options.
struct FastOptions {
  CacheKind cache = CacheKind::kNone;
  DecodeRule rule = DecodeRule::kSchedule;
  double threshold = 0.9;
  double factor = 1.0;
  bool early_stop = true;
};
// The fast options of params (params.sampler must not be kReference: it has none).
FastOptions FastOptionsOf(const GenerationParams& params);

}  // namespace unmask::generation
