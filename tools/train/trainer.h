// Trains a LLaDA-architecture mask predictor with LibTorch autograd over the engine's own model
// code (common/model's LladaModel), so that the checkpoint the engine serves computes exactly
// what was trained.
//
// Objective (LLaDA): per sequence t ~ U(eps, 1], every token masked with probability t,
// cross-entropy on the masked tokens only, weighted by 1/t, summed and divided by the tokens in
// the batch. Two stages: pre-training on random windows of the corpus's token stream, then
// supervised chat steps (only the answer, padded with EOS, is masked; the loss of a pair is
// divided by its answer length), interleaved with pre-training steps so that plain continuation
// is kept. Every random draw derives from (seed, step), so a run resumed from a checkpoint
// continues exactly as the uninterrupted run would.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/model/model_options.h"
#include "common/util/status.h"
#include "tools/train/training_data.h"

namespace unmask::train {

struct TrainOptions {
  checkpoint::LladaConfig model;  // shape; token ids and vocabulary come from the tokenizer
  std::int64_t seq_len = 256;     // pre-training window
  std::int64_t chat_len = 128;    // longest chat pair (prompt + answer + EOT)
  // Chat answers are padded with EOS: to the longest pair of the batch (kBatch, LLaDA's SFT) or
  // always to chat_len (kFull; the first model's recipe: so much EOS that EOS became the most
  // confident prediction everywhere and replies came out empty).
  enum class ChatPadding { kBatch, kFull };
  ChatPadding chat_padding = ChatPadding::kBatch;
  std::int64_t batch = 16;
  std::int64_t pretrain_steps = 4000;
  std::int64_t chat_steps = 800;  // after pre-training; each is a chat step and a pre-training step
  double lr = 1e-3, min_lr_ratio = 0.1, weight_decay = 0.1, grad_clip = 1.0;
  // The chat stage restarts the schedule: cosine from chat_lr down to min_lr_ratio * chat_lr
  // (pre-training's cosine ends low, too low to learn the chat format in a short stage).
  double chat_lr = 3e-4;
  std::int64_t warmup_steps = 200;
  double mask_eps = 1e-3;  // t ~ U(eps, 1]
  std::uint64_t seed = 1;
  model::Precision compute = model::Precision::kBFloat16;  // master weights stay float32
  std::int64_t log_every = 25, eval_every = 250, checkpoint_every = 200;
  std::string work_dir;  // checkpoints to resume from
  // Intra-op threads; 0: one per core. (LibTorch's own default counts physical cores by a rule
  // that gave 1 on this 2-core machine and halved the speed.)
  int threads = 0;
  // Where the forward and backward run ("cpu", "cuda", "cuda:1"). Every random draw is made on
  // the CPU, so the data and masks are the same on any device; the arithmetic is not bit-equal.
  std::string device = "cpu";
};

struct TrainData {
  std::vector<std::int32_t> train_stream, held_out_stream;
  std::vector<ChatExample> chat;
  std::int32_t mask_id = 0, eos_id = 0;
};

struct StepReport {
  std::int64_t step = 0, total_steps = 0;
  const char* stage = "";
  double loss = 0, held_out_loss = -1, tokens_per_second = 0, eta_seconds = 0, lr = 0;
};

struct TrainResult {
  std::int64_t steps = 0;
  std::int64_t resumed_from = 0;  // 0: a fresh run
  double seconds = 0;             // of this process (not counting the part before a resume)
  double final_loss = 0, final_held_out_loss = 0;
  std::int64_t tokens_seen = 0;
  std::string threading;  // what ConfigureThreading set up (model/threading.h)
};

class Trainer {
 public:
  // InvalidArgument for options that cannot train (empty streams, sequence longer than the
  // stream, a model config that does not parse, ...), naming the field.
  static StatusOr<std::unique_ptr<Trainer>> Create(TrainOptions options, TrainData data);
  ~Trainer();

  // Runs (or continues, when work_dir holds a checkpoint) to the last step; `report` is called
  // every log_every steps. Writes a checkpoint every checkpoint_every steps and at the end.
  StatusOr<TrainResult> Run(const std::function<void(const StepReport&)>& report);
  // Stops after the next step that writes a checkpoint (for tests of resuming).
  void StopAfterStep(std::int64_t step) { stop_after_ = step; }

  // The held-out loss: the same estimator on fixed windows of the held-out stream with fixed,
  // stratified mask ratios (nats per token; an upper bound on the negative log-likelihood).
  double HeldOutLoss();
  // Writes config.json, model.safetensors (bf16) next to what is already in `dir`.
  Status Export(const std::string& dir) const;

  struct State;

 private:
  explicit Trainer(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
  std::int64_t stop_after_ = -1;
};

}  // namespace unmask::train
