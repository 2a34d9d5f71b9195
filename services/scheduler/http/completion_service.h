// The OpenAI-compatible API over SchedulerCore, free of any HTTP library: the same Accept and
// Watch the gRPC adapter calls (one path to the queue), with OpenAI bodies in and out. The
// HTTP glue (http_server.h) only moves bytes and headers.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "services/scheduler/http/choice_output.h"
#include "services/scheduler/http/openai_render.h"
#include "services/scheduler/http/openai_request.h"
#include "services/scheduler/http/streamed_text.h"
#include "services/scheduler/model_catalog.h"
#include "services/scheduler/scheduler_core.h"

namespace unmask::scheduler::http {

// An accepted request: the job and what its responses need.
struct AcceptedCompletion {
  OpenAiRequest request;
  v1::SubmitResponse submitted;
  CompletionIdentity identity;
  TokenIds token_ids;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer;  // null: the model ships no tokenizer
  OutputPlan output;  // what every choice's output holds: echo, a template's text, logprobs
};

class CompletionService {
 public:
  // `executors`: the same snapshots the core gets (for the model's config).
  CompletionService(SchedulerCore& core, ModelCatalog& catalog, SchedulerCore::Snapshots executors)
      : core_(core), catalog_(catalog), executors_(std::move(executors)) {}

  nlohmann::json ListModels() const;

  // The caller of an HTTP request from its Authorization header (null when API keys are off):
  // the core's Authenticate, the same check as gRPC's.
  StatusOr<const auth::ApiKey*> Authenticate(const std::string& authorization) { return core_.Authenticate(authorization); }

  // NotFound for a model no executor serves and no model root holds; Unavailable for one that
  // is known but that no healthy executor serves now; InvalidArgument naming `echo` for echo of
  // a prompt of token ids with no tokenizer to decode them; then the core's Accept
  // (`call.client`: the remote address, for --max-queued-jobs-per-client).
  StatusOr<AcceptedCompletion> Accept(const OpenAiRequest& request, const std::string& traceparent,
                                      const auth::ApiKey* caller = nullptr, const CallInfo& call = {});

  // Waits for the job (every choice's, for n > 1) and returns the whole response; a failed job
  // returns its status (with n > 1: the first choice to fail, and the others are cancelled).
  StatusOr<nlohmann::json> Complete(const AcceptedCompletion& accepted);

  // Streams the job as Server-Sent Events through `write` (one event per call): a first chunk
  // with the role and the acceptance (and what is final before any step: completions' echoed
  // prompt, a template's text up to its first hole), one chunk per diffusion step (newly final
  // text plus the step; with logprobs, those of the tokens that text completes), the last chunk
  // with the finish reason, the usage chunk if asked, "data: [DONE]". A
  // failed job sends an error object instead. While nothing else is sent (queued), a comment
  // goes out every `keepalive`; when `write` fails (the client went away) the job is cancelled.
  // With n > 1 every choice streams its own chunks (with its index), the last chunk of each
  // carries its finish reason, and [DONE] follows the last choice's; a choice that fails ends
  // the stream with its error and cancels the others. Returns whether the client got the whole
  // stream.
  bool Stream(const AcceptedCompletion& accepted, const std::function<bool(const std::string&)>& write,
              std::chrono::milliseconds keepalive = std::chrono::seconds(1));

  // Cancels the jobs (every choice's) of a request whose client went away before its stream began.
  void Cancel(const AcceptedCompletion& accepted) { CancelChoices(accepted); }

  // The scheduler is stopping: requests still waiting end with Unavailable (503) at once; their
  // jobs are not cancelled (they stay in the job store).
  void Shutdown() { stopping_ = true; }

 private:
  Status CheckServed(const std::string& model);
  // The output plan of an accepted request (its template's tokens, the prompt to echo).
  Status PlanOutput(AcceptedCompletion& accepted);
  void CancelChoices(const AcceptedCompletion& accepted);

  SchedulerCore& core_;
  ModelCatalog& catalog_;
  SchedulerCore::Snapshots executors_;
  std::atomic<bool> stopping_{false};
};

}  // namespace unmask::scheduler::http
