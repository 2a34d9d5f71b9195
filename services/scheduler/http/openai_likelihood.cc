#include "services/scheduler/http/openai_likelihood.h"

#include <string>

#include "common/generation/params.h"
#include "services/scheduler/http/openai_json.h"
#include "services/scheduler/request_validation.h"

namespace unmask::scheduler::http {

using json = nlohmann::ordered_json;

Status ParseLikelihoodField(const json& body, Endpoint endpoint, OpenAiRequest& out) {
  const json* v = Field(body, "likelihood");
  if (!v) return OkStatus();
  if (endpoint != Endpoint::kCompletions)
    return Bad("likelihood", "is /v1/completions' (a context and its continuation as text)", *v);
  if (!v->is_object()) return Bad("likelihood", "must be an object with continuation (or continuation_tokens)", *v);
  for (const auto& [key, value] : v->items()) {
    if (key != "continuation" && key != "continuation_tokens" && key != "mc_num" && key != "batch_size" &&
        key != "rows_per_forward" && key != "check_greedy")
      return Bad("likelihood." + key, "is not a likelihood field (continuation, continuation_tokens, mc_num, "
                                      "batch_size, rows_per_forward, check_greedy)", value);
  }
  v1::GenerateRequest& r = out.generate;
  v1::Likelihood& l = *r.mutable_params()->mutable_likelihood();
  const bool text = r.prompt_case() == v1::GenerateRequest::kText;
  if (const json* c = Field(*v, "continuation")) {
    if (!text) return Bad("likelihood.continuation", "goes with a text prompt (token ids take continuation_tokens)", *c);
    UNMASK_ASSIGN_OR_RETURN(std::string continuation, String(*c, "likelihood.continuation", kMaxPromptBytes));
    r.set_continuation(std::move(continuation));
  } else if (text) {
    return InvalidFieldError("likelihood.continuation", "is required with a text prompt: the text whose "
                                                        "log-likelihood after the prompt is estimated");
  }
  if (const json* n = Field(*v, "continuation_tokens")) {
    if (text) return Bad("likelihood.continuation_tokens", "goes with a prompt of token ids (text takes continuation)", *n);
    UNMASK_ASSIGN_OR_RETURN(std::int64_t count, Integer(*n, "likelihood.continuation_tokens", 1, INT32_MAX));
    l.set_continuation_tokens(count);
  } else if (!text) {
    return InvalidFieldError("likelihood.continuation_tokens", "is required with a prompt of token ids: how many of "
                                                               "its last ids are the continuation");
  }
  if (const json* n = Field(*v, "mc_num")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t k, Integer(*n, "likelihood.mc_num", 1, generation::kMaxMcNum));
    l.set_mc_num(static_cast<std::int32_t>(k));
  }
  if (const json* n = Field(*v, "batch_size")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t k, Integer(*n, "likelihood.batch_size", 1, generation::kMaxMcNum));
    l.set_batch_size(static_cast<std::int32_t>(k));
  }
  if (const json* n = Field(*v, "rows_per_forward")) {  // at most batch_size: the core checks
    UNMASK_ASSIGN_OR_RETURN(std::int64_t k, Integer(*n, "likelihood.rows_per_forward", 1, generation::kMaxMcNum));
    l.set_rows_per_forward(static_cast<std::int32_t>(k));
  }
  if (const json* g = Field(*v, "check_greedy")) {
    if (!g->is_boolean()) return Bad("likelihood.check_greedy", "must be true or false", *g);
    l.set_check_greedy(g->get<bool>());
  }
  // Nothing is generated: the fields that shape an output are refused by name.
  if (const json* m = Field(body, "max_tokens"); m && !(m->is_number_integer() && m->get<std::int64_t>() == 0))
    return Bad("max_tokens", "must be 0 or absent with likelihood (nothing is generated)", *m);
  for (const char* key : {"echo", "logprobs", "stream", "stop", "suffix", "template", "steps", "block_length"}) {
    const json* f = Field(body, key);
    // logprobs 0 asks for the chosen tokens' logprobs: any number does.
    const bool asks = f && (Truthy(*f) || (std::string(key) == "logprobs" && f->is_number()));
    if (asks) return Bad(key, "cannot be used with likelihood (it answers with its estimate alone)", *f);
  }
  if (r.n() > 1) return Bad("n", "a likelihood has one answer", body["n"]);
  out.likelihood = true;
  return OkStatus();
}

json LikelihoodJson(const v1::Completed& c) {
  if (!c.has_likelihood()) return nullptr;
  const v1::LikelihoodResult& l = c.likelihood();
  json out = {{"loglikelihood", l.loglikelihood()},
              {"standard_error", l.standard_error()},
              {"samples", l.samples()},
              {"continuation_tokens", l.continuation_tokens()},
              {"forwards", l.forwards()},
              {"rows_per_forward", l.rows_per_forward()}};
  if (l.has_greedy()) out["is_greedy"] = l.greedy();
  return out;
}

}  // namespace unmask::scheduler::http
