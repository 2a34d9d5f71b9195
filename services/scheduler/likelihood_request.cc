#include "services/scheduler/likelihood_request.h"


namespace unmask::scheduler {
v1::GenerationParams LikelihoodJobParams(v1::GenerationParams asked, std::int64_t continuation_tokens) {
  if (!asked.has_likelihood() && !asked.score_only()) return asked;
  if (asked.has_likelihood() && asked.likelihood().continuation_tokens() == 0)
    asked.mutable_likelihood()->set_continuation_tokens(continuation_tokens);
  asked.set_gen_length(1);
  asked.set_block_length(1);
  asked.set_steps(1);
  return asked;
}

}  // namespace unmask::scheduler
