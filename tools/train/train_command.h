// unmask-train's whole run: byte-level BPE tokenizer on the corpus, LLaDA pre-training and chat
// stage, export in the Hugging Face layout the loader reads (config.json, model.safetensors,
// tokenizer.json, tokenizer_config.json with the chat template) and a training.json record.
// Everything resumable lives in the work directory: a rerun reuses its tokenizer and continues
// from its last checkpoint.
#pragma once

#include <ostream>
#include <string>

#include "tools/train/trainer.h"

namespace unmask::train {

struct TrainCommandOptions {
  std::string corpus;  // verse lines (tools/make_corpus.sh)
  std::string out;     // the model directory written at the end
  std::string work;    // tokenizer and checkpoints; resumed from when it holds them
  int vocab_size = 4096;
  int held_out_every = 50;  // every Nth chapter is held out
  TrainOptions train;
};

StatusOr<TrainResult> RunTrainCommand(TrainCommandOptions options, std::ostream& log);

}  // namespace unmask::train
