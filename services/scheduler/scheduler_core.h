// The scheduler's logic, free of gRPC server types: accepting a request (validate, encode the
// prompt, fit it to memory, store it before acknowledging), the event stream of a job (from the
// job store, so any replica can serve it), and the job queries.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/auth/api_keys.h"
#include "common/jobs/job_store.h"
#include "common/generation/canvas.h"
#include "common/generation/params.h"
#include "services/scheduler/dispatch_policy.h"
#include "services/scheduler/model_catalog.h"
#include "services/scheduler/request_limits.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {

// The memory-aware clamp, as a seam: the parameters asked for (after defaults) in, the ones that
// will run and every change out.
struct ClampInput {
  checkpoint::LladaConfig config;
  generation::GenerationParams params;  // the sampler mode and the attention chunk included
  std::int64_t prompt_length = 0;
  std::uint64_t budget_bytes = 0;  // largest budget among the executors serving the model; 0 = unknown
  int compute_dtype_bytes = 0;     // what those executors compute in (4 fp32, 2 bf16/fp16); 0 = unknown
  bool fixed_gen_length = false;   // a template: gen_length is its length, never reduced
};
struct ClampOutput {
  generation::GenerationParams params;
  std::vector<v1::Adjustment> adjustments;
};
using Clamper = std::function<StatusOr<ClampOutput>(const ClampInput&)>;

struct SchedulerOptions {
  std::int64_t max_queue = 1000;
  std::shared_ptr<auth::ApiKeys> api_keys;  // null = no authentication (every caller is anonymous)
  RequestLimits limits;
  double default_deadline_seconds = 0;  // for requests that set none; 0 = none
};

// What the adapter knows about a call besides the request.
struct CallInfo {
  std::string client;                  // the caller's address (per-client job limit of anonymous callers)
  std::int64_t deadline_unix_ms = 0;   // the call's own deadline, when the job should not outlive it; 0 = none
};

class SchedulerCore {
 public:
  using Snapshots = std::function<std::vector<ExecutorSnapshot>()>;
  SchedulerCore(jobs::JobStore& store, Snapshots executors, ModelCatalog& catalog, Clamper clamp,
                SchedulerOptions options);

  // Who calls: the key that `authorization` ("Bearer <key>", the HTTP header or the gRPC
  // metadata) presents, with the call counted against its requests_per_second; null when API
  // keys are off. UNAUTHENTICATED for a missing or wrong key, RESOURCE_EXHAUSTED over the rate.
  StatusOr<const auth::ApiKey*> Authenticate(const std::string& authorization);

  // Validates, encodes, clamps and stores the job, then returns its id and what will run. A
  // `caller` with max_queued_jobs that has that many jobs queued or running is refused with
  // RESOURCE_EXHAUSTED (auth::IsKeyLimit) before anything is stored; so is an anonymous caller
  // over --max-queued-jobs-per-client (IsClientJobLimit, counted by call.client). The job's
  // deadline is the earliest of deadline_seconds (or the default) and call.deadline_unix_ms.
  // A request with n > 1 is n jobs (choices.h), validated and clamped once, counted as n
  // against every limit and stored all or none; the response is choice 0's, with
  // accepted.job_ids listing every choice's job.
  StatusOr<v1::SubmitResponse> Accept(const v1::GenerateRequest& request, const std::string& traceparent,
                                      const auth::ApiKey* caller = nullptr, const CallInfo& call = {});

  // Calls emit for every event of the job: its acceptance first, then the ones already past,
  // then new ones as they come, with queue-position updates while it waits, until the job ends,
  // emit returns false or stop() says so. `duplicate` marks the acceptance as an earlier submit's.
  Status Watch(const std::string& job_id, const std::function<bool(const v1::JobEvent&)>& emit,
               const std::function<bool()>& stop, bool duplicate = false);

  StatusOr<v1::JobInfo> GetJob(const std::string& job_id);
  StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListJobsRequest& request);
  StatusOr<std::string> CancelJob(const std::string& job_id);
  v1::ListServedModelsResponse ListModels() const;

 private:
  // Fits the request to the executors serving the model: to the largest GPU budget when GPU
  // executors serve it, else (or when it does not fit any GPU even at the minimum and a CPU
  // executor serves it) to the largest CPU budget, and says which executors may run it.
  struct Placement {
    ClampOutput clamped;
    std::string device_class;  // Accepted.device_class
  };
  StatusOr<Placement> Place(ClampInput in, const std::vector<ExecutorSnapshot>& executors, const std::string& model) const;

  // The request's suffix / template as a token canvas (canvas_request.h); empty when it has none.
  StatusOr<generation::Canvas> RequestCanvas(const v1::GenerateRequest& request);
  // `tool_use`: how a chat job with tools reads its output (left as is for other prompts).
  StatusOr<std::vector<std::int64_t>> EncodePrompt(const v1::GenerateRequest& request,
                                                   const checkpoint::LladaConfig& config, v1::ToolUse* tool_use);

  // Accept's steps. Prepare: the request validated, encoded and fitted, as choice 0's stored
  // job and its record. Reserve: `n` places under the caller's own job limit and the queue's.
  // StoreChoices: the n jobs into the store, all or none.
  struct Prepared {
    v1::StoredJob stored;
    jobs::JobRecord record;
  };
  struct Reserved {
    std::vector<auth::JobReservation> keys;
    std::vector<ClientJobLimit::Slot> clients;
  };
  StatusOr<Prepared> Prepare(const v1::GenerateRequest& request, const std::string& traceparent, const CallInfo& call);
  StatusOr<Reserved> Reserve(int n, const auth::ApiKey* caller, const CallInfo& call);
  StatusOr<v1::SubmitResponse> StoreChoices(const Prepared& job, int n, Reserved& reserved);

  jobs::JobStore& store_;
  Snapshots executors_;
  ModelCatalog& catalog_;
  Clamper clamp_;
  SchedulerOptions options_;
  ClientJobLimit client_jobs_;
};

// Whether `status` is Accept's refusal because --max-queue jobs are waiting. The refusal of a
// request that cannot fit any executor has the same code (RESOURCE_EXHAUSTED); adapters that
// answer the two differently (HTTP: 429 and 503) tell them apart with this.
bool IsQueueFull(const Status& status);
// The refusal of a full queue (RESOURCE_EXHAUSTED, reason QUEUE_FULL, metadata limit): `message`
// says which queue.
Status QueueFullError(const std::string& message, std::int64_t limit);

// A job's failure as the API reports it (JobEvent.failed), its detail included, and back.
v1::Failed FailedOf(const Status& status);
Status StatusOf(const v1::Failed& failed);  // an OK code is taken as INTERNAL

// The terminal event of a job that ended without one in its log (cancelled while queued,
// expired, dead-lettered), and GetJob's error of a finished job: a failure with the code, field,
// reason and metadata its record keeps.
v1::JobEvent TerminalEventFromRecord(const jobs::JobRecord& record);

}  // namespace unmask::scheduler
