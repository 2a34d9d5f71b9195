// `unmask generate` / `submit`: the Monte Carlo likelihood of a continuation (--continuation,
// --continuation-tokens, --mc-num, --mc-batch-size, --check-greedy), and how it is printed.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::cli {

struct LikelihoodFlags {
  std::optional<std::string> continuation;          // --continuation TEXT (with --prompt)
  std::optional<std::int64_t> continuation_tokens;  // --continuation-tokens N (with --prompt-ids)
  std::optional<int> mc_num, batch_size;            // --mc-num, --mc-batch-size
  std::optional<int> rows_per_forward;              // --mc-rows-per-forward
  bool check_greedy = false;                        // --check-greedy
};

// Any of the flags makes the request a likelihood request (params.likelihood, and
// request.continuation for --continuation); the scheduler judges the values and names the field.
// Errors here name the flag: the options that need --continuation or --continuation-tokens.
Status ApplyLikelihoodFlags(const LikelihoodFlags& flags, v1::GenerateRequest& request);

// "loglikelihood -12.3456 (standard error 0.1234 over 128 samples; 5 continuation tokens; greedy:
// no)": nothing for a job without one.
void PrintLikelihood(std::ostream& out, const v1::Completed& completed, const std::string& tag = "");

}  // namespace unmask::cli
