#include "services/scheduler/http/openai_request.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/generation/field_names.h"
#include "common/generation/params.h"
#include "common/generation/params_proto.h"
#include "common/generation/sampler_mode.h"
#include "services/scheduler/http/field_names.h"
#include "services/scheduler/http/openai_chat_request.h"
#include "services/scheduler/http/openai_json.h"
#include "services/scheduler/http/openai_likelihood.h"
#include "services/scheduler/request_validation.h"

namespace unmask::scheduler::http {
namespace {

using json = nlohmann::ordered_json;

// Fields of the OpenAI API that unmask cannot honour: refused by name instead of ignored.
Status RefuseUnsupported(const json& body, Endpoint endpoint) {
  for (const char* key : {"functions", "function_call"}) {
    if (const json* v = Field(body, key); v && Truthy(*v))
      return Bad(key, "is not supported by unmask (OpenAI's deprecated form: send tools and tool_choice)", *v);
  }
  if (endpoint == Endpoint::kCompletions) {
    for (const char* key : {"tools", "tool_choice", "parallel_tool_calls"}) {
      if (const json* v = Field(body, key); v && Truthy(*v))
        return Bad(key, "is not supported on /v1/completions (tools are /v1/chat/completions')", *v);
    }
  }
  if (const json* v = Field(body, "logit_bias"); v && Truthy(*v)) return Bad("logit_bias", "is not supported by unmask", *v);
  if (const json* v = Field(body, "best_of"); v && !(v->is_number_integer() && v->get<std::int64_t>() == 1))
    return Bad("best_of", "only 1 is supported", *v);
  for (const char* key : {"presence_penalty", "frequency_penalty"}) {
    if (const json* v = Field(body, key); v && !(v->is_number() && v->get<double>() == 0.0))
      return Bad(key, "only 0 is supported", *v);
  }
  if (const json* v = Field(body, "response_format")) {
    if (!HasType(*v, "text")) return Bad("response_format", "only {\"type\": \"text\"} is supported", *v);
  }
  return OkStatus();
}

Status ParsePrompt(const json& body, v1::GenerateRequest& r) {
  const json* prompt = Field(body, "prompt");
  if (!prompt) return InvalidFieldError("prompt", "is required");
  if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) prompt = &(*prompt)[0];
  if (prompt->is_string()) {
    UNMASK_ASSIGN_OR_RETURN(std::string text, String(*prompt, "prompt", kMaxPromptBytes));
    r.set_text(std::move(text));
    return OkStatus();
  }
  if (prompt->is_array() && !prompt->empty()) {
    auto* ids = r.mutable_ids();
    for (std::size_t i = 0; i < prompt->size(); ++i) {
      UNMASK_ASSIGN_OR_RETURN(std::int64_t id, Integer((*prompt)[i], "prompt[" + std::to_string(i) + "]", 0, INT32_MAX));
      ids->add_ids(id);
    }
    return OkStatus();
  }
  return Bad("prompt", "must be a non-empty string, an array of one string, or an array of token ids", *prompt);
}

Status ParseStop(const json& body, OpenAiRequest& out) {
  const json* stop = Field(body, "stop");
  if (!stop) return OkStatus();
  if (stop->is_string()) {
    UNMASK_ASSIGN_OR_RETURN(std::string s, String(*stop, "stop", kMaxStopBytes));
    out.stop.push_back(std::move(s));
    return OkStatus();
  }
  if (!stop->is_array() || stop->size() > kMaxStopStrings)
    return Bad("stop", "must be a string or an array of at most " + std::to_string(kMaxStopStrings) + " strings", *stop);
  for (std::size_t i = 0; i < stop->size(); ++i) {
    UNMASK_ASSIGN_OR_RETURN(std::string s, String((*stop)[i], "stop[" + std::to_string(i) + "]", kMaxStopBytes));
    out.stop.push_back(std::move(s));
  }
  return OkStatus();
}

// The generation library's rules over the parameters as a whole (divisibility of the lengths,
// ...), the same as every other door's, said in the HTTP API's field names.
Status CheckParams(const v1::GenerationParams& params) {
  const Status s = generation::CheckParamsProto(params);
  return s.field().empty() ? s : generation::RenameField(s, OpenAiFieldName(s.field()));
}

// The sampler and its options: the mode, the decoding rules' threshold / factor, the LLaDA
// switches and llada2's own options (the generation library judges which mode takes which).
Status ParseSamplerFields(const json& body, v1::GenerationParams& p) {
  if (const json* v = Field(body, "sampler")) {
    UNMASK_ASSIGN_OR_RETURN(std::string name, String(*v, "sampler", 64));
    auto mode = generation::ParseSamplerMode(name);
    if (!mode.ok()) return mode.status().WithContext("sampler").WithField("sampler");
    p.set_sampler(name);
  }
  if (const json* v = Field(body, "remasking")) {
    if (!v->is_string() || (*v != "low_confidence" && *v != "random"))
      return Bad("remasking", "must be \"low_confidence\" or \"random\"", *v);
    p.set_remasking(*v == "random" ? v1::REMASKING_RANDOM : v1::REMASKING_LOW_CONFIDENCE);
  }
  if (const json* v = Field(body, "early_stop")) {
    if (!v->is_boolean()) return Bad("early_stop", "must be true or false (absent = on for the fast samplers)", *v);
    p.set_early_stop(v->get<bool>());
  }
  if (const json* v = Field(body, "threshold")) {
    UNMASK_ASSIGN_OR_RETURN(double t, Number(*v, "threshold", 0, 1, "must be a number in (0, 1]"));
    if (t == 0) return Bad("threshold", "must be a number in (0, 1]", *v);
    p.set_threshold(t);
  }
  if (const json* v = Field(body, "factor")) {
    UNMASK_ASSIGN_OR_RETURN(double f, Number(*v, "factor", 0, 1e6, "must be a number > 0"));
    if (f == 0) return Bad("factor", "must be a number > 0", *v);
    p.set_factor(f);
  }
  if (const json* v = Field(body, "top_p")) {  // llada2 only, but 1 (off) everywhere
    UNMASK_ASSIGN_OR_RETURN(double t, Number(*v, "top_p", 0, 1, "must be a number in (0, 1] (1 = off)"));
    if (t == 0) return Bad("top_p", "must be a number in (0, 1] (1 = off)", *v);
    p.set_top_p(t);
  }
  if (const json* v = Field(body, "top_k")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t n, Integer(*v, "top_k", 0, INT32_MAX));
    p.set_top_k(n);
  }
  if (const json* v = Field(body, "minimal_topk")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t n, Integer(*v, "minimal_topk", 1, kMaxGenLength));
    p.set_minimal_topk(n);
  }
  if (const json* v = Field(body, "editing_threshold")) {  // llada21
    UNMASK_ASSIGN_OR_RETURN(double t, Number(*v, "editing_threshold", 0, 1, "must be a number in [0, 1]"));
    p.set_editing_threshold(t);
  }
  if (const json* v = Field(body, "max_post_steps")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t n, Integer(*v, "max_post_steps", 0, generation::kMaxPostSteps));
    p.set_max_post_steps(n);
  }
  if (const json* v = Field(body, "num_to_transfer")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t n, Integer(*v, "num_to_transfer", 1, kMaxGenLength));
    p.set_num_to_transfer(n);
  }
  if (const json* v = Field(body, "eos_early_stop")) {
    if (!v->is_boolean()) return Bad("eos_early_stop", "must be true or false (llada2 only; absent = false)", *v);
    p.set_eos_early_stop(v->get<bool>());
  }
  return OkStatus();
}

// Dream's own options (sampler dream).
Status ParseDreamFields(const json& body, v1::GenerationParams& p) {
  if (const json* v = Field(body, "alg")) {
    UNMASK_ASSIGN_OR_RETURN(std::string alg, String(*v, "alg", 32));
    UNMASK_RETURN_IF_ERROR(generation::ParseDreamAlg(alg).status());
    p.set_alg(alg);
  }
  if (const json* v = Field(body, "alg_temp")) {
    UNMASK_ASSIGN_OR_RETURN(double t, Number(*v, "alg_temp", 0, generation::kMaxTemperature,
                                             "must be a number >= 0 (0 = the most confident)"));
    p.set_alg_temp(t);
  }
  if (const json* v = Field(body, "eps")) {
    UNMASK_ASSIGN_OR_RETURN(double e, Number(*v, "eps", 0, 1, "must be a number in (0, 1)"));
    if (e == 0 || e == 1) return Bad("eps", "must be a number in (0, 1)", *v);
    p.set_eps(e);
  }
  return OkStatus();
}

// Chat's logprobs (a boolean) and top_logprobs (0..20, only with logprobs true); completions'
// logprobs (0..20 alternatives; top_logprobs is chat's).
Status ParseLogprobs(const json& body, Endpoint endpoint, OpenAiRequest& out) {
  const json* logprobs = Field(body, "logprobs");
  const json* top = Field(body, "top_logprobs");
  const std::string range = "[0, " + std::to_string(generation::kMaxLogprobs) + "]";
  if (endpoint == Endpoint::kCompletions) {
    if (top) return Bad("top_logprobs", "is a /v1/chat/completions field; /v1/completions takes logprobs: an integer in " + range, *top);
    if (logprobs) {
      UNMASK_ASSIGN_OR_RETURN(std::int64_t k, Integer(*logprobs, "logprobs", 0, generation::kMaxLogprobs));
      out.logprobs = static_cast<std::int32_t>(k);
    }
    return OkStatus();
  }
  if (logprobs && !logprobs->is_boolean())
    return Bad("logprobs", "must be true or false (top_logprobs, an integer in " + range + ", says how many alternatives)", *logprobs);
  const bool wanted = logprobs && logprobs->get<bool>();
  std::int64_t k = 0;
  if (top) {
    UNMASK_ASSIGN_OR_RETURN(k, Integer(*top, "top_logprobs", 0, generation::kMaxLogprobs));
    if (!wanted) return Bad("top_logprobs", "requires logprobs: true", *top);
  }
  if (wanted) out.logprobs = static_cast<std::int32_t>(k);
  return OkStatus();
}

// suffix and echo (completions), template (both), logprobs: what the output holds.
Status ParseOutputFields(const json& body, Endpoint endpoint, OpenAiRequest& out) {
  const bool chat = endpoint == Endpoint::kChatCompletions;
  if (const json* v = Field(body, "suffix")) {
    if (chat) {
      if (Truthy(*v))
        return Bad("suffix", "is not supported on /v1/chat/completions (infilling is /v1/completions' suffix; a chat "
                             "answer with fixed text is unmask's template field)", *v);
    } else {
      UNMASK_ASSIGN_OR_RETURN(std::string suffix, String(*v, "suffix", kMaxPromptBytes, /*allow_empty=*/true));
      out.generate.set_suffix(std::move(suffix));
    }
  }
  if (const json* v = Field(body, "echo")) {
    if (chat) {
      if (Truthy(*v)) return Bad("echo", "is not supported on /v1/chat/completions (only /v1/completions echoes its prompt)", *v);
    } else {
      if (!v->is_boolean()) return Bad("echo", "must be true or false", *v);
      out.echo = v->get<bool>();
    }
  }
  if (const json* v = Field(body, "template")) {
    UNMASK_ASSIGN_OR_RETURN(std::string text, String(*v, "template", kMaxPromptBytes));
    out.generate.set_template_text(std::move(text));
  }
  UNMASK_RETURN_IF_ERROR(ParseLogprobs(body, endpoint, out));
  if (out.logprobs >= 0) out.generate.mutable_params()->set_logprobs(out.logprobs);
  if (const json* v = Field(body, "prompt_logprobs")) {  // vLLM's extension, on both endpoints
    UNMASK_ASSIGN_OR_RETURN(std::int64_t k, Integer(*v, "prompt_logprobs", 0, generation::kMaxLogprobs));
    out.prompt_logprobs = static_cast<std::int32_t>(k);
  }
  // The echoed prompt's tokens get theirs too (with as many alternatives), as vLLM does; each
  // output keeps its own count of the alternatives the job takes.
  const std::int32_t prompt_k = std::max(out.prompt_logprobs, out.echo ? out.logprobs : -1);
  if (prompt_k >= 0) out.generate.mutable_params()->set_prompt_logprobs(prompt_k);
  return OkStatus();
}

Status ParseGenerationFields(const json& body, Endpoint endpoint, OpenAiRequest& out) {
  v1::GenerationParams& p = *out.generate.mutable_params();
  p.set_stop_at_eos(true);  // the OpenAI text ends at EOS / EOT
  const json* max_tokens = Field(body, "max_tokens");
  if (endpoint == Endpoint::kChatCompletions) {
    if (const json* alias = Field(body, "max_completion_tokens")) {
      if (max_tokens && *max_tokens != *alias)
        return Bad("max_completion_tokens", "must equal max_tokens when both are given", *alias);
      max_tokens = alias;
    }
  }
  if (max_tokens && !out.likelihood) {  // with likelihood it is 0 (ParseLikelihoodField): nothing is generated
    // 0 with echo (OpenAI's legacy scoring form): the prompt alone, scored; the job generates
    // nothing (params.score_only).
    const bool zero = max_tokens->is_number_integer() && max_tokens->get<std::int64_t>() == 0;
    if (zero && (endpoint != Endpoint::kCompletions || !out.echo || out.logprobs < 0))
      return Bad("max_tokens", "must be at least 1 (0 only with echo and logprobs: the prompt scored alone)", *max_tokens);
    if (zero && (!out.generate.suffix().empty() || !out.generate.template_text().empty()))
      return Bad("max_tokens", "0 scores the prompt alone: it takes no suffix or template", *max_tokens);
    UNMASK_ASSIGN_OR_RETURN(std::int64_t n, Integer(*max_tokens, "max_tokens", zero ? 0 : 1, kMaxGenLength));
    out.score_only = n == 0;
    if (out.score_only) {
      p.set_score_only(true);  // the prompt scored, nothing generated (the job has no steps)
      p.clear_logprobs();      // no generated token to report; the echoed prompt's are prompt_logprobs
    } else {
      p.set_gen_length(n);
    }
  }
  if (const json* v = Field(body, "steps")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t n, Integer(*v, "steps", 1, kMaxGenLength));
    p.set_steps(n);
  }
  if (const json* v = Field(body, "block_length")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t n, Integer(*v, "block_length", 1, kMaxGenLength));
    p.set_block_length(n);
  }
  if (const json* v = Field(body, "temperature")) {
    UNMASK_ASSIGN_OR_RETURN(double t, Number(*v, "temperature", 0, 100, "must be a number in [0, 100] (0 = greedy)"));
    p.set_temperature(t);
  }
  if (const json* v = Field(body, "cfg_scale")) {
    UNMASK_ASSIGN_OR_RETURN(double s, Number(*v, "cfg_scale", 0, 100, "must be a number in [0, 100] (0 = off)"));
    p.set_cfg_scale(s);
  }
  if (const json* v = Field(body, "seed")) {
    if (!v->is_number_integer() || (v->is_number_integer() && !v->is_number_unsigned() && v->get<std::int64_t>() < 0))
      return Bad("seed", "must be a non-negative integer", *v);
    p.set_seed(v->get<std::uint64_t>());
  }
  if (const json* v = Field(body, "priority")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t n, Integer(*v, "priority", kMinPriority, kMaxPriority));
    out.generate.set_priority(static_cast<int>(n));
  }
  if (const json* v = Field(body, "deadline_seconds")) {
    UNMASK_ASSIGN_OR_RETURN(double d, Number(*v, "deadline_seconds", 0, kMaxDeadlineSeconds,
                                             "must be a number of seconds in [0, 604800] (0 = none)"));
    out.generate.set_deadline_seconds(d);
  }
  if (out.score_only) {  // the core's rules for a job that generates nothing, named as here
    for (const char* key : {"steps", "block_length"}) {
      if (const json* v = Field(body, key); v && !v->is_null())
        return Bad(key, "cannot be used with max_tokens 0 (the prompt scored alone: nothing is generated)", *v);
    }
    if (out.generate.n() > 1) return Bad("n", "max_tokens 0 scores the prompt once", body["n"]);
  }
  UNMASK_RETURN_IF_ERROR(ParseSamplerFields(body, p));
  UNMASK_RETURN_IF_ERROR(ParseDreamFields(body, p));
  // A template's length is its gen_length: without max_tokens the core judges the lengths once it
  // has counted the template's tokens.
  if (!out.generate.template_text().empty() && !p.has_gen_length()) return OkStatus();
  v1::GenerationParams checked = p;
  if (out.likelihood && out.generate.prompt_case() == v1::GenerateRequest::kText)
    checked.mutable_likelihood()->set_continuation_tokens(1);  // the core counts them once it has encoded the text
  return CheckParams(checked);
}

}  // namespace

StatusOr<json> ParseJsonBody(std::string_view body) {
  json parsed = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return InvalidFieldError("body", "is not valid JSON");
  if (!parsed.is_object()) return Bad("body", "must be a JSON object", parsed);
  return parsed;
}

StatusOr<OpenAiRequest> ParseOpenAiRequest(Endpoint endpoint, const json& body) {
  if (!body.is_object()) return Bad("body", "must be a JSON object", body);
  OpenAiRequest out;
  out.endpoint = endpoint;
  const json* model = Field(body, "model");
  if (!model) return InvalidFieldError("model", "is required");
  UNMASK_ASSIGN_OR_RETURN(std::string name, String(*model, "model", 256));
  out.generate.set_model(std::move(name));
  UNMASK_RETURN_IF_ERROR(endpoint == Endpoint::kChatCompletions ? ParseChat(body, out.generate)
                                                                 : ParsePrompt(body, out.generate));
  if (const json* n = Field(body, "n")) {
    UNMASK_ASSIGN_OR_RETURN(std::int64_t choices, Integer(*n, "n", 1, kMaxChoices));
    if (choices > 1) out.generate.set_n(static_cast<int>(choices));
  }
  UNMASK_RETURN_IF_ERROR(RefuseUnsupported(body, endpoint));
  UNMASK_RETURN_IF_ERROR(ParseOutputFields(body, endpoint, out));
  UNMASK_RETURN_IF_ERROR(ParseLikelihoodField(body, endpoint, out));
  UNMASK_RETURN_IF_ERROR(ParseGenerationFields(body, endpoint, out));
  UNMASK_RETURN_IF_ERROR(ParseStop(body, out));
  if (!out.generate.template_text().empty() && out.generate.has_chat() && !out.generate.chat().tools().empty())
    return Bad("tools", "cannot be used with template (the template's text is the answer)", body["tools"]);
  if (!out.stop.empty() && !out.generate.template_text().empty())
    return Bad("stop", "cannot be used with template (the template's own text decides where the answer ends)", body["stop"]);
  if (const json* v = Field(body, "user")) {
    UNMASK_ASSIGN_OR_RETURN(out.user, String(*v, "user", kMaxUserBytes, /*allow_empty=*/true));
  }
  if (const json* v = Field(body, "stream")) {
    if (!v->is_boolean()) return Bad("stream", "must be true or false", *v);
    out.stream = v->get<bool>();
  }
  if (out.stream && out.prompt_logprobs >= 0)
    return Bad("prompt_logprobs", "cannot be streamed (as in vLLM): ask without stream, or use completions' echo "
                                  "with logprobs", body["prompt_logprobs"]);
  if (const json* v = Field(body, "stream_options")) {
    if (!v->is_object()) return Bad("stream_options", "must be an object", *v);
    if (const json* u = Field(*v, "include_usage")) {
      if (!u->is_boolean()) return Bad("stream_options.include_usage", "must be true or false", *u);
      out.include_usage = u->get<bool>();
    }
  }
  return out;
}

}  // namespace unmask::scheduler::http
