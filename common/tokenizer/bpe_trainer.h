// Trains a byte-level BPE tokenizer (GPT-2 style: ByteLevel pre-tokenizer with the GPT-2 split
// pattern, 256 byte characters, then merges) and writes it as a Hugging Face tokenizer.json that
// this library and the `tokenizers` library both read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/util/status.h"

namespace unmask::tokenizer {

struct BpeTrainerOptions {
  // Every id the tokenizer can produce: the special tokens + 256 byte characters + merges.
  int vocab_size = 4096;
  // Added tokens flagged special, given ids 0, 1, ... in this order (never split by encoding).
  std::vector<std::string> special_tokens;
  // Pairs seen fewer times than this are never merged (the vocabulary may end up smaller).
  std::int64_t min_frequency = 2;
};

// Trains on `texts` (each one pre-tokenized on its own). InvalidArgument when the vocabulary
// cannot hold the special tokens and the 256 byte characters, when a special token is empty or
// repeated, or when there is no text at all.
StatusOr<std::string> TrainByteLevelBpe(const std::vector<std::string>& texts, const BpeTrainerOptions& options);

}  // namespace unmask::tokenizer
