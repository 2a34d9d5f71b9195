#include "tools/unmask_engine/likelihood_options.h"

#include <nlohmann/json.hpp>
#include <ostream>

#include "common/tokenizer/continuation_text.h"

namespace unmask::cli {

void AddLikelihoodOptions(CLI::App* cmd, LikelihoodOptions& o) {
  cmd->add_option("--continuation", o.continuation,
                  "With --prompt: estimate the log-likelihood of this text after the prompt (the official LLaDA "
                  "Monte Carlo estimate) instead of generating");
  cmd->add_option("--continuation-tokens", o.continuation_tokens,
                  "With one --prompt-ids row: its last N ids are the continuation whose log-likelihood is estimated")
      ->type_name("N");
  cmd->add_option("--mc-num", o.mc_num, "Likelihood: Monte Carlo samples in all (default 128)")->type_name("N");
  cmd->add_option("--mc-batch-size", o.batch_size, "Likelihood: samples per draw, dividing --mc-num (default 16)")
      ->type_name("N");
  cmd->add_option("--mc-rows-per-forward", o.rows_per_forward,
                  "Likelihood: samples one forward runs, at most --mc-batch-size (default: all of a draw's, as the "
                  "official code; the estimate is the same up to rounding)")
      ->type_name("N");
  cmd->add_flag("--check-greedy", o.check_greedy,
                "Likelihood: also say whether greedy unmasking from the prompt gives the continuation");
}

Status CheckLikelihoodFlags(const LikelihoodOptions& o, bool text_prompt, std::size_t prompt_rows,
                            bool lengths_given, bool canvas_given, bool logprobs_given) {
  if (!o.asked()) return OkStatus();
  if (!o.continuation && !o.continuation_tokens)
    return InvalidFieldError("--mc-num/--mc-batch-size/--mc-rows-per-forward/--check-greedy",
                             "estimate the likelihood of a continuation: give --continuation TEXT (with --prompt) or "
                             "--continuation-tokens N (with --prompt-ids)");
  if (o.continuation && !text_prompt) return InvalidFieldError("--continuation", "goes with --prompt");
  if (o.continuation_tokens && text_prompt)
    return InvalidFieldError("--continuation-tokens", "goes with --prompt-ids (with --prompt give --continuation)");
  if (prompt_rows > 1) return InvalidFieldError("--prompt-ids", "a likelihood takes one prompt row");
  if (lengths_given)
    return InvalidFieldError("--gen-length/--block-length/--steps", "a likelihood generates nothing: leave them out");
  if (canvas_given) return InvalidFieldError("--suffix/--template-file", "a likelihood has no gap to fill");
  if (logprobs_given)
    return InvalidFieldError("--logprobs/--prompt-logprobs", "a likelihood prints its estimate alone: leave them out");
  return OkStatus();
}

Status ApplyLikelihood(const LikelihoodOptions& o, const std::string& prompt_text, const tokenizer::Tokenizer* tok,
                       std::vector<std::int64_t>& prompt_ids, generation::GenerationParams& params) {
  generation::LikelihoodParams l;
  if (o.continuation) {
    UNMASK_ASSIGN_OR_RETURN(tokenizer::EncodedPair pair,
                            tokenizer::EncodeContextAndContinuation(*tok, prompt_text, *o.continuation));
    prompt_ids = std::move(pair.ids);
    l.continuation_tokens = pair.continuation_tokens;
  } else {
    l.continuation_tokens = *o.continuation_tokens;
  }
  if (o.mc_num) l.mc_num = *o.mc_num;
  if (o.batch_size) l.batch_size = *o.batch_size;
  if (o.rows_per_forward) l.rows_per_forward = *o.rows_per_forward;
  l.check_greedy = o.check_greedy;
  params.likelihood = l;
  return OkStatus();
}

void PrintLikelihoodResult(const sampler::LikelihoodResult& r, const std::vector<std::int64_t>& prompt_ids,
                           double seconds, bool json, std::ostream& out) {
  if (json) {
    nlohmann::json l = {{"loglikelihood", r.loglikelihood},  {"standard_error", r.standard_error},
                        {"samples", r.samples},              {"continuation_tokens", r.continuation_tokens},
                        {"forwards", r.forwards},            {"rows_per_forward", r.rows_per_forward},
                        {"seconds", seconds}};
    if (r.greedy) l["greedy"] = *r.greedy;
    out << nlohmann::json{{"likelihood", l}, {"prompt_ids", prompt_ids}}.dump() << "\n";
    return;
  }
  out << "loglikelihood " << r.loglikelihood << " (standard error " << r.standard_error << " over " << r.samples
      << " samples; " << r.continuation_tokens << " continuation tokens";
  if (r.greedy) out << "; greedy: " << (*r.greedy ? "yes" : "no");
  out << "; " << r.forwards << " forwards of at most " << r.rows_per_forward << " samples, " << seconds << " s)\n";
}

}  // namespace unmask::cli
