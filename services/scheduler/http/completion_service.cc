#include "services/scheduler/http/completion_service.h"

#include <chrono>

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
  v1::Completed done;
  bool have_done = false;
  Status failure;
  const Status watched = core_.Watch(
      a.submitted.job_id(),
      [&](const v1::JobEvent& ev) {
        if (ev.has_completed()) {
          done = ev.completed();
          have_done = true;
        } else if (ev.has_failed()) {
          failure = StatusOf(ev.failed());
        }
        return true;
      },
      [this] { return stopping_.load(); });
  if (stopping_ && !have_done && failure.ok()) return ShuttingDown(a.submitted.job_id());
  UNMASK_RETURN_IF_ERROR(watched);
  if (!failure.ok()) return failure;
  if (!have_done) return InternalError("job " + a.submitted.job_id() + " ended without a result");
  StreamedText text(a.tokenizer, a.token_ids, a.submitted.accepted().params().gen_length(), a.request.stop);
  const auto final_text = text.Finish(Ids(done), done.finish_reason());
  json ext = AcceptedExtension(a.submitted);
  ext.update(FinishExtension(done));
  return CompletionResponse(a.identity, final_text.text, final_text.finish_reason,
                            Usage(a.submitted.accepted().prompt_tokens(), done.ids_size()), ext);
}

bool CompletionService::Stream(const AcceptedCompletion& a, const std::function<bool(const std::string&)>& write,
                               std::chrono::milliseconds keepalive) {
  const CompletionIdentity& id = a.identity;
  StreamedText text(a.tokenizer, a.token_ids, a.submitted.accepted().params().gen_length(), a.request.stop);
  bool client_ok = true, finished = false;
  auto last_write = Clock::now();
  auto send = [&](const std::string& event) {
    if (client_ok) client_ok = write(event);
    last_write = Clock::now();
    return client_ok;
  };

  const json accepted = AcceptedExtension(a.submitted);
  send(SseData(id.endpoint == Endpoint::kChatCompletions
                   ? ChatChunk(id, {{"role", "assistant"}, {"content", ""}}, nullptr, accepted)
                   : TextChunk(id, "", nullptr, accepted)));
  const Status watched = core_.Watch(
      a.submitted.job_id(),
      [&](const v1::JobEvent& ev) {
        if (ev.has_queued()) {
          send(SseComment("queued: position " + std::to_string(ev.queued().position()) + " of " +
                          std::to_string(ev.queued().depth())));
        } else if (ev.has_started()) {
          send(SseComment("started on " + ev.started().executor()));
        } else if (ev.has_step()) {
          const auto& u = ev.step().unmasked();
          const std::string delta = text.OnStep({u.positions().begin(), u.positions().end()}, {u.tokens().begin(), u.tokens().end()});
          send(SseData(TextDeltaChunk(id, delta, nullptr, StepExtension(ev.step()))));
        } else if (ev.has_completed()) {
          const auto& c = ev.completed();
          const auto f = text.Finish(Ids(c), c.finish_reason());
          send(SseData(TextDeltaChunk(id, f.delta, f.finish_reason, FinishExtension(c))));
          if (a.request.include_usage) send(SseData(UsageChunk(id, Usage(a.submitted.accepted().prompt_tokens(), c.ids_size()))));
          send(kSseDone);
          finished = true;
        } else if (ev.has_failed()) {
          send(SseData(ToHttpError(StatusOf(ev.failed())).body));
          finished = true;
        }
        return client_ok;
      },
      [&] {
        if (Clock::now() - last_write >= keepalive) send(SseComment("keep-alive"));
        return !client_ok || stopping_;
      });
  if (!watched.ok() && !finished && client_ok) {
    send(SseData(ToHttpError(stopping_ ? ShuttingDown(a.submitted.job_id()) : watched).body));
    finished = true;
  }
  if (!client_ok && !finished) (void)core_.CancelJob(a.submitted.job_id());
  return client_ok && finished;
}

}  // namespace unmask::scheduler::http
