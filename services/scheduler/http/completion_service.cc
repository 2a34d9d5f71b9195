#include "services/scheduler/http/completion_service.h"

#include <chrono>

#include "common/generation/field_names.h"
#include "common/tokenizer/canvas_text.h"
#include "services/scheduler/choices.h"
#include "services/scheduler/http/field_names.h"
#include "services/scheduler/http/http_errors.h"
#include "services/scheduler/http/token_text.h"
#include "services/scheduler/http/openai_likelihood.h"
#include "services/scheduler/tool_calls.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}


Status ShuttingDown(const std::string& job_id) {
  return UnavailableError("the scheduler is shutting down; job " + job_id + " stays queued and can be watched elsewhere");
}

json FinishExtension(const v1::Completed& c) {
  return {{"sampler", c.sampler()},
          {"steps_run", c.timings().step_seconds_size()},
          {"queued_seconds", c.timings().queued_seconds()},
          {"running_seconds", c.timings().running_seconds()}};
}

// A choice's failure as the HTTP API reports it; with n > 1 the message says which choice.
Status ChoiceFailure(const v1::JobEvent& ev, std::size_t n) {
  const Status failure = StatusOf(ev.failed());
  if (n == 1) return failure;
  return failure.WithContext("choice " + std::to_string(ev.index()) + " (job " + ev.job_id() + ")");
}

// The Server-Sent Events of a streamed request, choice by choice: each choice's first chunk
// (with its acceptance), its steps' newly final text and its last chunk, all with its index;
// after the last choice's, the usage chunk (if asked, all choices' tokens) and [DONE]. A failed
// choice's error object ends the stream.
class ChunkRenderer {
 public:
  explicit ChunkRenderer(const AcceptedCompletion& a)
      : a_(a), n_(ChoiceJobIds(a.submitted).size()), accepted_(n_), begun_(n_, false) {
    outputs_.reserve(n_);
    for (std::size_t i = 0; i < n_; ++i) outputs_.emplace_back(a.output);
  }

  std::vector<std::string> OnEvent(const v1::JobEvent& ev) {
    const int i = ev.index();
    const CompletionIdentity& id = a_.identity;
    const std::string choice = n_ > 1 ? "choice " + std::to_string(i) + " " : "";
    const auto c = static_cast<std::size_t>(i);
    if (ev.has_accepted()) {
      accepted_[c].set_job_id(ev.job_id());
      *accepted_[c].mutable_accepted() = ev.accepted();
      // Echo with logprobs: the prompt's come with the first step, and the first chunk with them.
      if (outputs_[c].BeginWaitsForPrompt()) return {SseComment(choice + "accepted; the prompt is scored first")};
      return {FirstChunkOf(c)};
    }
    if (ev.has_queued()) {
      return {SseComment(choice + "queued: position " + std::to_string(ev.queued().position()) + " of " +
                         std::to_string(ev.queued().depth()))};
    }
    if (ev.has_started()) return {SseComment(choice + "started on " + ev.started().executor())};
    if (ev.has_step()) {
      std::vector<std::string> out;
      if (!begun_[c]) {
        outputs_[c].OnPromptLogprobs(ev.step().prompt_logprobs());
        out.push_back(FirstChunkOf(c));
      }
      const ChoiceOutput::Chunk delta = outputs_[c].OnStep(ev.step());
      out.push_back(SseData(TextDeltaChunk(id, delta.text, nullptr, StepExtension(ev.step()), i, delta.logprobs)));
      return out;
    }
    if (ev.has_completed()) return OnCompleted(ev);
    if (ev.has_failed()) {
      failed_ = ended_ = true;
      return {SseData(ToHttpError(ChoiceFailure(ev, n_)).body)};
    }
    return {};
  }

  bool ended() const { return ended_; }    // the last event was rendered
  bool failed() const { return failed_; }  // a choice failed
  std::size_t choices() const { return n_; }

 private:
  // The choice's first chunk (the acceptance, the echoed prompt, a template's text before its
  // first hole), once.
  std::string FirstChunkOf(std::size_t c) {
    begun_[c] = true;
    const ChoiceOutput::Chunk first = outputs_[c].Begin();
    return SseData(FirstChunk(a_.identity, AcceptedExtension(accepted_[c]), static_cast<int>(c), first.text, first.logprobs));
  }

  std::vector<std::string> OnCompleted(const v1::JobEvent& ev) {
    const auto& c = ev.completed();
    const auto index = static_cast<std::size_t>(ev.index());
    std::vector<std::string> out;
    if (!begun_[index]) {  // no step came (a job that ran none): the prompt's logprobs are here
      outputs_[index].OnPromptLogprobs(c.prompt_logprobs());
      out.push_back(FirstChunkOf(index));
    }
    const ChoiceOutput::Done f = outputs_[index].Finish(c, ev.job_id());
    out.push_back(SseData(LastDeltaChunk(a_.identity, f.last.text, f.tool_calls, f.finish_reason, FinishExtension(c),
                                         ev.index(), f.last.logprobs)));
    completion_tokens_ += a_.output.score_only ? 0 : c.ids_size();
    if (++completed_ < n_) return out;
    if (a_.request.include_usage)
      out.push_back(SseData(UsageChunk(a_.identity, Usage(a_.submitted.accepted().prompt_tokens(), completion_tokens_))));
    out.push_back(kSseDone);
    ended_ = true;
    return out;
  }

  const AcceptedCompletion& a_;
  const std::size_t n_;
  std::vector<ChoiceOutput> outputs_;
  std::vector<v1::SubmitResponse> accepted_;  // each choice's acceptance, for its first chunk
  std::vector<bool> begun_;                   // its first chunk went out
  std::size_t completed_ = 0;
  std::int64_t completion_tokens_ = 0;
  bool ended_ = false, failed_ = false;
};

}  // namespace

json CompletionService::ListModels() const { return ModelList(core_.ListModels()); }

Status CompletionService::CheckServed(const std::string& model) {
  const v1::ListServedModelsResponse served = core_.ListModels();
  for (const auto& m : served.models()) {
    if (m.model() == model) return OkStatus();
  }
  auto known = catalog_.Config(model, {});
  if (!known.ok()) return known.status();
  return UnavailableError("model: '" + model + "' is known but no executor serves it now; try again when one does")
      .WithField("model");
}

StatusOr<AcceptedCompletion> CompletionService::Accept(const OpenAiRequest& request, const std::string& traceparent,
                                                       const auth::ApiKey* caller,
                                                       const CallInfo& call) {
  const std::string& model = request.generate.model();
  UNMASK_RETURN_IF_ERROR(CheckServed(model));
  AcceptedCompletion out;
  auto tok = catalog_.Tokenizer(model);
  if (tok.ok()) out.tokenizer = *tok;
  if (request.echo && request.generate.prompt_case() == v1::GenerateRequest::kIds && !out.tokenizer) {
    return InvalidFieldError("echo", "the prompt is token ids and model '" + model +
                                         "' has no tokenizer (tokenizer.json, or vocab.json with merges.txt) under the scheduler's model roots to decode them "
                                         "with; send the prompt as text or leave echo out");
  }
  UNMASK_ASSIGN_OR_RETURN(out.submitted, core_.Accept(request.generate, traceparent, caller, call));
  out.request = request;
  out.identity = MakeIdentity(request.endpoint, out.submitted.job_id(), UnixSeconds(), model);
  auto config = catalog_.Config(model, executors_());
  if (config.ok()) out.token_ids = {config->mask_token_id, config->eos_token_id, config->eot_token_id};
  if (Status planned = PlanOutput(out); !planned.ok()) {
    CancelChoices(out);  // accepted, but its answer could not be written
    return planned;
  }
  return out;
}

Status CompletionService::PlanOutput(AcceptedCompletion& a) {
  const OpenAiRequest& r = a.request;
  OutputPlan& plan = a.output;
  plan.endpoint = r.endpoint;
  plan.tokenizer = a.tokenizer;
  plan.token_ids = a.token_ids;
  plan.gen_length = a.submitted.accepted().params().gen_length();
  plan.stop = r.stop;
  plan.logprobs = r.logprobs;
  if (r.generate.has_chat()) plan.tool_use = ToolUseOf(r.generate.chat());
  const tokenizer::Tokenizer* tok = a.tokenizer.get();
  if (!r.generate.template_text().empty() && tok) {
    // The core made the same canvas from the same text (and refused a bad one, naming the field).
    auto canvas = tokenizer::EncodeCanvas(*tok, "", r.generate.template_text());
    if (!canvas.ok()) return generation::RenameField(canvas.status(), OpenAiFieldName(canvas.status().field()));
    plan.region = std::move(canvas->region);
  }
  plan.echo = r.echo;
  plan.score_only = r.score_only;
  if (!r.echo) return OkStatus();
  if (r.generate.prompt_case() == v1::GenerateRequest::kIds) {
    plan.echo_ids.assign(r.generate.ids().ids().begin(), r.generate.ids().ids().end());
    plan.echo_text = DecodeIds(tok, plan.echo_ids, /*skip_special_tokens=*/false);
  } else {
    plan.echo_text = r.generate.text();
    if (tok && plan.logprobs >= 0) {  // the prompt's tokens, as the core encoded them
      auto ids = tok->Encode(plan.echo_text, /*parse_special_tokens=*/true);
      if (ids.ok()) plan.echo_ids.assign(ids->begin(), ids->end());
    }
  }
  if (plan.logprobs < 0) plan.echo_ids.clear();
  return OkStatus();
}

StatusOr<json> CompletionService::Complete(const AcceptedCompletion& a) {
  const std::vector<std::string> job_ids = ChoiceJobIds(a.submitted);
  const std::size_t n = job_ids.size();
  std::vector<v1::Completed> done(n);
  std::vector<std::uint64_t> seeds(n);
  std::size_t completed = 0;
  Status failure;
  const Status watched = WatchChoices(
      core_, a.submitted,
      [&](const v1::JobEvent& ev) {
        const auto i = static_cast<std::size_t>(ev.index());
        if (ev.has_accepted()) {
          seeds[i] = ev.accepted().params().seed();
        } else if (ev.has_completed()) {
          done[i] = ev.completed();
          ++completed;
        } else if (ev.has_failed()) {
          failure = ChoiceFailure(ev, n);
          return false;  // the response is this error: the other choices are not waited for
        }
        return true;
      },
      [this] { return stopping_.load(); });
  if (stopping_ && completed < n && failure.ok()) return ShuttingDown(a.submitted.job_id());
  UNMASK_RETURN_IF_ERROR(watched);
  if (!failure.ok()) {
    CancelChoices(a);
    return failure;
  }
  if (completed < n) return InternalError("job " + a.submitted.job_id() + " ended without a result");
  std::vector<ChoiceText> choices;
  json per_choice = json::array();
  std::int64_t completion_tokens = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const ChoiceOutput::Done output = ChoiceOutput(a.output).Finish(done[i], job_ids[i]);
    choices.push_back({output.text, output.finish_reason, output.logprobs, output.tool_calls, LikelihoodJson(done[i])});
    if (a.request.prompt_logprobs >= 0)
      choices.back().prompt_logprobs = VllmPromptLogprobs(done[i].prompt_logprobs(), a.submitted.accepted().prompt_tokens(),
                                                          a.request.prompt_logprobs, a.tokenizer.get());
    completion_tokens += a.output.score_only ? 0 : done[i].ids_size();
    json choice = {{"index", i}, {"job_id", job_ids[i]}, {"seed", seeds[i]}};
    choice.update(FinishExtension(done[i]));
    per_choice.push_back(std::move(choice));
  }
  json ext = AcceptedExtension(a.submitted);
  ext.update(FinishExtension(done[0]));
  if (n > 1) ext["choices"] = std::move(per_choice);
  return CompletionResponse(a.identity, choices, Usage(a.submitted.accepted().prompt_tokens(), completion_tokens), ext);
}

bool CompletionService::Stream(const AcceptedCompletion& a, const std::function<bool(const std::string&)>& write,
                               std::chrono::milliseconds keepalive) {
  ChunkRenderer chunks(a);
  bool client_ok = true;
  auto last_write = Clock::now();
  auto send = [&](const std::string& event) {
    if (client_ok) client_ok = write(event);
    last_write = Clock::now();
    return client_ok;
  };
  const Status watched = WatchChoices(
      core_, a.submitted,
      [&](const v1::JobEvent& ev) {
        for (const std::string& event : chunks.OnEvent(ev)) send(event);
        return client_ok && !chunks.ended();
      },
      [&] {
        if (Clock::now() - last_write >= keepalive) send(SseComment("keep-alive"));
        return !client_ok || stopping_;
      });
  if (!watched.ok() && !chunks.ended() && client_ok) {
    send(SseData(ToHttpError(stopping_ ? ShuttingDown(a.submitted.job_id()) : watched).body));
    return client_ok;
  }
  // A client gone mid-stream cancels every choice; a failed choice ends the stream (an error
  // object is its last event) and so the choices still running.
  if ((!client_ok && !chunks.ended()) || (chunks.failed() && chunks.choices() > 1)) CancelChoices(a);
  return client_ok && chunks.ended();
}

void CompletionService::CancelChoices(const AcceptedCompletion& a) {
  for (const auto& job_id : ChoiceJobIds(a.submitted)) (void)core_.CancelJob(job_id);
}

}  // namespace unmask::scheduler::http
