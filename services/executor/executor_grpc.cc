#include "services/executor/executor_grpc.h"

#include "common/generation/params_proto.h"
#include "services/common/grpc_status.h"

namespace unmask::executor {

StatusOr<JobRequest> JobRequestFromProto(const v1::RunRequest& req, const checkpoint::LladaConfig& config) {
  JobRequest r;
  r.job_id = req.job_id();
  r.prompt_ids.assign(req.prompt_ids().begin(), req.prompt_ids().end());
  r.canvas.region.assign(req.canvas().region().begin(), req.canvas().region().end());
  r.canvas.suffix.assign(req.canvas().suffix().begin(), req.canvas().suffix().end());
  UNMASK_ASSIGN_OR_RETURN(r.params, generation::ParamsFromProto(req.params(), generation::DefaultSampler(config)));
  generation::WithModelTokens(config, r.params);
  return r;
}

template <typename Fn>
grpc::Status ExecutorGrpcService::Serve(grpc::ServerContext* ctx, const char* method,
                                        const telemetry::SpanContext& fallback_parent, Fn&& fn, bool may_start_trace) {
  // A polled method (GetCapacity: every scheduler, twice a second) is traced only within a
  // caller's trace; as a root of its own it would be a trace per poll. Its metrics count always.
  const bool traced = may_start_trace || fallback_parent.valid() || telemetry::ExtractContext(*ctx).valid();
  telemetry::ServerCall call(traced ? tracer_ : telemetry::Tracer::Disabled(), metrics_, ctx, method,
                             "unmask.v1.Executor", fallback_parent);
  try {
    return call.Finish(fn(call));
  } catch (const std::exception& e) {
    return call.Finish(grpc::Status(grpc::StatusCode::INTERNAL, std::string("executor: ") + e.what()));
  }
}

namespace {
void SetLikelihood(const sampler::LikelihoodResult& r, v1::LikelihoodResult& out) {
  out.set_loglikelihood(r.loglikelihood);
  out.set_standard_error(r.standard_error);
  if (r.greedy) out.set_greedy(*r.greedy);
  out.set_samples(r.samples);
  out.set_continuation_tokens(r.continuation_tokens);
  out.set_forwards(r.forwards);
  out.set_rows_per_forward(static_cast<std::int32_t>(r.rows_per_forward));
}
void SetLogprob(const sampler::TokenLogprob& lp, std::int64_t position, v1::TokenLogprob& out) {
  out.set_position(position);
  out.set_token(lp.token);
  out.set_logprob(lp.logprob);
  out.set_rank(lp.rank);
  for (const auto& [token, logprob] : lp.top) {
    v1::TopLogprob* t = out.add_top();
    t->set_token(token);
    t->set_logprob(logprob);
  }
}

telemetry::SpanContext ContextFromField(const std::string& traceparent) {
  if (traceparent.empty()) return {};
  auto parsed = telemetry::ParseTraceparent(traceparent);
  return parsed.ok() ? *parsed : telemetry::SpanContext{};
}
}  // namespace

grpc::Status ExecutorGrpcService::Run(grpc::ServerContext* ctx, const v1::RunRequest* req,
                                      grpc::ServerWriter<v1::RunEvent>* writer) {
  return Serve(ctx, "Run", ContextFromField(req->traceparent()), [&](telemetry::ServerCall& call) -> grpc::Status {
    call.span().SetAttribute("job.id", req->job_id());
    call.span().SetAttribute("model", req->model_id());
    if (req->model_id() != model_id_)
      return services::ToGrpcStatus(NotFoundError("model_id: this executor serves '" + model_id_ + "', not '" +
                                                   req->model_id() + "'")
                                        .WithField("model_id"));
    auto serving = core_.ServingModel();
    if (!serving.ok()) return services::ToGrpcStatus(serving.status());
    auto request = JobRequestFromProto(*req, (*serving)->config());
    if (!request.ok()) return services::ToGrpcStatus(request.status());
    if (ctx->deadline() != std::chrono::system_clock::time_point::max()) {
      request->deadline = Clock::now() + (ctx->deadline() - std::chrono::system_clock::now());
    }
    request->trace_context = call.context();
    auto job = core_.Submit(std::move(*request));
    if (!job.ok()) return services::ToGrpcStatus(job.status());
    JobEvent ev;
    while (true) {
      if (ctx->IsCancelled()) {
        (*job)->Cancel();
        return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client");
      }
      if (!(*job)->Next(ev, std::chrono::milliseconds(50))) continue;
      v1::RunEvent out;
      if (ev.kind == JobEvent::Kind::kFailed) return services::ToGrpcStatus(ev.status);
      if (ev.kind == JobEvent::Kind::kStep) {
        auto* s = out.mutable_step();
        s->set_step(ev.step.step);
        s->set_block(ev.step.block);
        s->set_step_in_block(ev.step.step_in_block);
        s->set_elapsed_seconds(ev.step.elapsed_seconds);
        for (auto pos : ev.step.positions) s->mutable_unmasked()->add_positions(pos);
        for (auto tok : ev.step.tokens) s->mutable_unmasked()->add_tokens(tok);
        for (std::size_t i = 0; i < ev.step.logprobs.size() && i < ev.step.positions.size(); ++i)
          SetLogprob(ev.step.logprobs[i], ev.step.positions[i], *s->add_logprobs());
        for (const auto& [position, lp] : ev.step.prompt_logprobs) SetLogprob(lp, position, *s->add_prompt_logprobs());
        if (!writer->Write(out)) (*job)->Cancel();
        continue;
      }
      auto* c = out.mutable_completed();
      for (auto id : ev.completed.ids) c->add_ids(id);
      c->set_sampler(ev.completed.sampler);
      c->set_steps_run(ev.completed.steps_run);
      c->set_queued_seconds(ev.completed.queued_seconds);
      c->set_running_seconds(ev.completed.running_seconds);
      for (double s : ev.completed.step_seconds) c->add_step_seconds(s);
      c->set_finish_reason(ev.completed.finish_reason);
      c->set_batch_size(ev.completed.batch_size);
      for (const auto& [position, lp] : ev.completed.logprobs) SetLogprob(lp, position, *c->add_logprobs());
      for (const auto& [position, lp] : ev.completed.prompt_logprobs) SetLogprob(lp, position, *c->add_prompt_logprobs());
      if (ev.completed.likelihood) SetLikelihood(*ev.completed.likelihood, *c->mutable_likelihood());
      writer->Write(out);
      return grpc::Status::OK;
    }
  });
}

grpc::Status ExecutorGrpcService::GetCapacity(grpc::ServerContext* ctx, const v1::GetCapacityRequest*,
                                              v1::Capacity* resp) {
  return Serve(
      ctx, "GetCapacity", {},
      [&](telemetry::ServerCall&) -> grpc::Status {
        const CapacityReport c = core_.Capacity();
        resp->set_executor_id(c.executor_id);
        resp->set_device(c.device);
        resp->set_budget_bytes(c.budget_bytes);
        resp->set_in_use_bytes(c.in_use_bytes);
        resp->set_running_jobs(c.running_jobs);
        resp->set_queued_jobs(c.queued_jobs);
        resp->set_max_concurrent_jobs(c.max_concurrent_jobs);
        for (const auto& m : c.models) resp->add_models(m);
        resp->set_model_config_json(c.model_config_json);
        resp->set_precision(c.precision);
        resp->set_compute_precision(c.compute_precision);
        resp->set_compute_reason(c.compute_reason);
        resp->set_job_budget_bytes(c.job_budget_bytes);
        resp->set_job_bytes_in_use(c.job_bytes_in_use);
        return grpc::Status::OK;
      },
      /*may_start_trace=*/false);
}

}  // namespace unmask::executor
