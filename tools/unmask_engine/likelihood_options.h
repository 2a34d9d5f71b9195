// `unmask-engine generate --continuation TEXT` (or --continuation-tokens N with --prompt-ids):
// the official Monte Carlo likelihood of a continuation, run in-process as the executor runs a
// likelihood job (common/sampler/likelihood.h), instead of a generation.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/generation/params.h"
#include "common/sampler/likelihood_result.h"
#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"

namespace unmask::cli {

struct LikelihoodOptions {
  std::optional<std::string> continuation;          // with --prompt
  std::optional<std::int64_t> continuation_tokens;  // with --prompt-ids
  std::optional<int> mc_num, batch_size, rows_per_forward;
  bool check_greedy = false;

  bool asked() const {
    return continuation || continuation_tokens || mc_num || batch_size || rows_per_forward || check_greedy;
  }
};

void AddLikelihoodOptions(CLI::App* cmd, LikelihoodOptions& o);

// Before the parameters are resolved: the flags that cannot go with a likelihood (the lengths, a
// batch of prompts, a canvas, --logprobs, --prompt-logprobs), named. `prompt_rows`: the --prompt-ids rows given.
Status CheckLikelihoodFlags(const LikelihoodOptions& o, bool text_prompt, std::size_t prompt_rows,
                            bool lengths_given, bool canvas_given, bool logprobs_given);

// The job's prompt and params.likelihood: with --continuation the text pair encoded as the
// scheduler encodes it (tokenizer::EncodeContextAndContinuation), replacing the prompt's ids.
Status ApplyLikelihood(const LikelihoodOptions& o, const std::string& prompt_text, const tokenizer::Tokenizer* tok,
                       std::vector<std::int64_t>& prompt_ids, generation::GenerationParams& params);

// {"likelihood": {"loglikelihood", "standard_error", "samples", "continuation_tokens",
// "forwards", "rows_per_forward", "seconds", "greedy"?}, "prompt_ids": [...]} on one line, or the same as text.
void PrintLikelihoodResult(const sampler::LikelihoodResult& r, const std::vector<std::int64_t>& prompt_ids,
                           double seconds, bool json, std::ostream& out);

}  // namespace unmask::cli
