#include <google/protobuf/util/json_util.h>

#include <iomanip>
#include <iostream>
#include <sstream>

#include "tools/unmask_cli/canvas_flags.h"
#include "tools/unmask_cli/likelihood_flags.h"
#include "tools/unmask_cli/commands.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::cli {

namespace {

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

// `unmask job` without --json: one "name: value" line each. A fast sampler's unset early_stop
// (a job stored before the field existed) is on, its default.
std::string JobSummary(const v1::JobInfo& j) {
  std::ostringstream out;
  out << "job:         " << j.job_id() << "\n"
      << "state:       " << j.state() << "\n"
      << "model:       " << j.model() << "\n";
  if (!j.executor().empty()) out << "executor:    " << j.executor() << " (attempts " << j.attempts() << ")\n";
  if (j.has_params()) {
    const auto& p = j.params();
    const bool reference = p.sampler().empty() || p.sampler() == "reference";
    out << "sampler:     " << (reference ? "reference" : p.sampler()) << "\n"
        << "gen_length:  " << p.gen_length() << ", block_length " << p.block_length() << ", steps " << p.steps() << "\n"
        << "early_stop:  " << (reference ? "n/a (reference mode never stops early)"
                                       : p.has_early_stop() && !p.early_stop() ? "off" : "on") << "\n";
  }
  if (j.has_result()) {
    out << "finish:      " << j.result().finish_reason() << "\n" << "text:        " << j.result().text() << "\n";
    PrintLogprobs(out, j.result());
    PrintLikelihood(out, j.result());
  }
  if (j.has_error()) out << "error:       " << j.error().message() << "\n";
  return out.str();
}

}  // namespace

void AddJobCommands(CLI::App& app, const ClientOptions& client) {
  struct Flags {
    std::string job_id, state;
    int limit = 50;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();

  CLI::App* watch = app.add_subcommand("watch", "Stream the events of a job (from any scheduler replica)");
  watch->add_option("job_id", f->job_id, "Job id")->required();
  watch->add_flag("--json", f->json, "JSON lines");
  watch->callback([f, &client] {
    auto stub = v1::Scheduler::NewStub(client.Channel(client.scheduler));
    RpcCall call = client.Call("unmask.v1.Scheduler/Watch", client.scheduler);
    call.span().SetAttribute("job.id", f->job_id);
    v1::WatchRequest req;
    req.set_job_id(f->job_id);
    auto reader = stub->Watch(call.ctx(), req);
    throw CLI::RuntimeError(StreamEvents(*reader, f->json, "watch", call));
  });

  CLI::App* jobs = app.add_subcommand("jobs", "List jobs");
  jobs->add_option("--state", f->state, "queued, running, succeeded, failed, cancelled, expired, dead");
  jobs->add_option("--limit", f->limit, "At most this many")->capture_default_str();
  jobs->add_flag("--json", f->json, "JSON");
  jobs->callback([f, &client] {
    auto stub = v1::Scheduler::NewStub(client.Channel(client.scheduler));
    RpcCall call = client.Call("unmask.v1.Scheduler/ListJobs", client.scheduler);
    v1::ListJobsRequest req;
    req.set_state(f->state);
    req.set_limit(f->limit);
    v1::ListJobsResponse resp;
    grpc::Status s = call.Finish(stub->ListJobs(call.ctx(), req, &resp));
    if (!s.ok()) throw CLI::RuntimeError(ReportStatus("jobs", s));
    if (f->json) {
      std::cout << Json(resp) << std::endl;
    } else {
      std::cout << std::left << std::setw(38) << "JOB" << std::setw(12) << "STATE" << std::setw(20) << "MODEL"
                << "EXECUTOR\n";
      for (const auto& j : resp.jobs())
        std::cout << std::setw(38) << j.job_id() << std::setw(12) << j.state() << std::setw(20) << j.model()
                  << j.executor() << "\n";
    }
    throw CLI::RuntimeError(0);
  });

  CLI::App* job = app.add_subcommand("job", "Show one job: its state and the parameters it runs with");
  job->add_option("job_id", f->job_id, "Job id")->required();
  job->add_flag("--json", f->json, "JSON");
  job->callback([f, &client] {
    auto stub = v1::Scheduler::NewStub(client.Channel(client.scheduler));
    RpcCall call = client.Call("unmask.v1.Scheduler/GetJob", client.scheduler);
    call.span().SetAttribute("job.id", f->job_id);
    v1::GetJobRequest req;
    req.set_job_id(f->job_id);
    v1::JobInfo info;
    grpc::Status s = call.Finish(stub->GetJob(call.ctx(), req, &info));
    if (!s.ok()) throw CLI::RuntimeError(ReportStatus("job", s));
    if (f->json) {
      std::cout << Json(info) << std::endl;
    } else {
      std::cout << JobSummary(info);
    }
    throw CLI::RuntimeError(0);
  });

  CLI::App* cancel = app.add_subcommand("cancel", "Cancel a queued or running job");
  cancel->add_option("job_id", f->job_id, "Job id")->required();
  cancel->callback([f, &client] {
    auto stub = v1::Scheduler::NewStub(client.Channel(client.scheduler));
    RpcCall call = client.Call("unmask.v1.Scheduler/CancelJob", client.scheduler);
    call.span().SetAttribute("job.id", f->job_id);
    v1::CancelJobRequest req;
    req.set_job_id(f->job_id);
    v1::CancelJobResponse resp;
    grpc::Status s = call.Finish(stub->CancelJob(call.ctx(), req, &resp));
    if (!s.ok()) throw CLI::RuntimeError(ReportStatus("cancel", s));
    std::cout << f->job_id << " " << resp.state() << std::endl;
    throw CLI::RuntimeError(0);
  });

  CLI::App* models = app.add_subcommand("models", "List the models the executors serve");
  models->add_flag("--json", f->json, "JSON");
  models->callback([f, &client] {
    auto stub = v1::Scheduler::NewStub(client.Channel(client.scheduler));
    RpcCall call = client.Call("unmask.v1.Scheduler/ListModels", client.scheduler);
    v1::ListServedModelsResponse resp;
    grpc::Status s = call.Finish(stub->ListModels(call.ctx(), v1::ListServedModelsRequest(), &resp));
    if (!s.ok()) throw CLI::RuntimeError(ReportStatus("models", s));
    if (f->json) {
      std::cout << Json(resp) << std::endl;
    } else {
      for (const auto& m : resp.models()) {
        std::cout << m.model() << "  storage " << m.precision() << "  compute " << m.compute_precision()
                  << "  executors " << m.executors_size() << "  budget " << m.budget_bytes() / (1 << 20) << " MiB\n";
        if (!m.compute_reason().empty()) std::cout << "  compute " << m.compute_precision() << ": " << m.compute_reason() << "\n";
      }
    }
    throw CLI::RuntimeError(0);
  });
}

}  // namespace unmask::cli
