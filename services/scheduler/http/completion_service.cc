#include "services/scheduler/http/completion_service.h"

#include <chrono>

#include "services/scheduler/choices.h"
#include "services/scheduler/http/http_errors.h"

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

std::vector<std::int64_t> Ids(const v1::Completed& c) { return {c.ids().begin(), c.ids().end()}; }

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
  explicit ChunkRenderer(const AcceptedCompletion& a) : a_(a), n_(ChoiceJobIds(a.submitted).size()) {
    for (std::size_t i = 0; i < n_; ++i)
      texts_.emplace_back(a.tokenizer, a.token_ids, a.submitted.accepted().params().gen_length(), a.request.stop);
  }

  std::vector<std::string> OnEvent(const v1::JobEvent& ev) {
    const int i = ev.index();
    const CompletionIdentity& id = a_.identity;
    const std::string choice = n_ > 1 ? "choice " + std::to_string(i) + " " : "";
    if (ev.has_accepted()) {
      v1::SubmitResponse submitted;
      submitted.set_job_id(ev.job_id());
      *submitted.mutable_accepted() = ev.accepted();
      return {SseData(FirstChunk(id, AcceptedExtension(submitted), i))};
    }
    if (ev.has_queued()) {
      return {SseComment(choice + "queued: position " + std::to_string(ev.queued().position()) + " of " +
                         std::to_string(ev.queued().depth()))};
    }
    if (ev.has_started()) return {SseComment(choice + "started on " + ev.started().executor())};
    if (ev.has_step()) {
      const auto& u = ev.step().unmasked();
      const std::string delta = texts_[static_cast<std::size_t>(i)].OnStep({u.positions().begin(), u.positions().end()},
                                                                            {u.tokens().begin(), u.tokens().end()});
      return {SseData(TextDeltaChunk(id, delta, nullptr, StepExtension(ev.step()), i))};
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
  std::vector<std::string> OnCompleted(const v1::JobEvent& ev) {
    const auto& c = ev.completed();
    const auto f = texts_[static_cast<std::size_t>(ev.index())].Finish(Ids(c), c.finish_reason());
    std::vector<std::string> out = {
        SseData(TextDeltaChunk(a_.identity, f.delta, f.finish_reason, FinishExtension(c), ev.index()))};
    completion_tokens_ += c.ids_size();
    if (++completed_ < n_) return out;
    if (a_.request.include_usage)
      out.push_back(SseData(UsageChunk(a_.identity, Usage(a_.submitted.accepted().prompt_tokens(), completion_tokens_))));
    out.push_back(kSseDone);
    ended_ = true;
    return out;
  }

  const AcceptedCompletion& a_;
  const std::size_t n_;
  std::vector<StreamedText> texts_;
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
  UNMASK_ASSIGN_OR_RETURN(out.submitted, core_.Accept(request.generate, traceparent, caller, call));
  out.request = request;
  out.identity = MakeIdentity(request.endpoint, out.submitted.job_id(), UnixSeconds(), model);
  auto config = catalog_.Config(model, executors_());
  if (config.ok()) out.token_ids = {config->mask_token_id, config->eos_token_id, config->eot_token_id};
  auto tok = catalog_.Tokenizer(model);
  if (tok.ok()) out.tokenizer = *tok;
  return out;
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
    StreamedText text(a.tokenizer, a.token_ids, a.submitted.accepted().params().gen_length(), a.request.stop);
    const auto final_text = text.Finish(Ids(done[i]), done[i].finish_reason());
    choices.push_back({final_text.text, final_text.finish_reason});
    completion_tokens += done[i].ids_size();
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
