#include "tools/unmask_cli/likelihood_flags.h"

#include <iomanip>
#include <ostream>
#include <sstream>

namespace unmask::cli {

Status ApplyLikelihoodFlags(const LikelihoodFlags& f, v1::GenerateRequest& r) {
  const bool asked =
      f.continuation || f.continuation_tokens || f.mc_num || f.batch_size || f.rows_per_forward || f.check_greedy;
  if (!asked) return OkStatus();
  if (!f.continuation && !f.continuation_tokens)
    return InvalidFieldError("--mc-num/--mc-batch-size/--mc-rows-per-forward/--check-greedy",
                             "estimate the likelihood of a continuation: give --continuation TEXT (with --prompt) or "
                             "--continuation-tokens N (with --prompt-ids)");
  v1::Likelihood* l = r.mutable_params()->mutable_likelihood();
  if (f.continuation) r.set_continuation(*f.continuation);
  if (f.continuation_tokens) l->set_continuation_tokens(*f.continuation_tokens);
  if (f.mc_num) l->set_mc_num(*f.mc_num);
  if (f.batch_size) l->set_batch_size(*f.batch_size);
  if (f.rows_per_forward) l->set_rows_per_forward(*f.rows_per_forward);
  l->set_check_greedy(f.check_greedy);
  return OkStatus();
}

void PrintLikelihood(std::ostream& out, const v1::Completed& c, const std::string& tag) {
  if (!c.has_likelihood()) return;
  const v1::LikelihoodResult& l = c.likelihood();
  std::ostringstream line;
  line << std::fixed << std::setprecision(4) << tag << "loglikelihood " << l.loglikelihood() << " (standard error "
       << l.standard_error() << " over " << l.samples() << " samples; " << l.continuation_tokens()
       << " continuation tokens";
  if (l.has_greedy()) line << "; greedy: " << (l.greedy() ? "yes" : "no");
  line << "; " << l.forwards() << " forwards of at most " << l.rows_per_forward() << " samples)\n";
  out << line.str();
}

}  // namespace unmask::cli
