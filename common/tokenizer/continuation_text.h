// A likelihood request's text (GenerationParams::likelihood): the context and the continuation
// encoded as the evaluation code encodes them. Every door that takes text uses it (the
// scheduler, unmask-engine).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

// A text prompt's context and continuation as lm-evaluation-harness's models encode them (LLaDA's
// eval_llada.py _encode_pair): the context's trailing whitespace moves to the continuation; the
// continuation's tokens are those of context + continuation after as many as the context alone
// encodes to; the job's prompt is the context's tokens followed by them.
struct EncodedPair {
  std::vector<std::int64_t> ids;  // context, then continuation
  std::int64_t continuation_tokens = 0;
};
StatusOr<EncodedPair> EncodeContextAndContinuation(const Tokenizer& tok, const std::string& context,
                                                   const std::string& continuation);

}  // namespace unmask::tokenizer
