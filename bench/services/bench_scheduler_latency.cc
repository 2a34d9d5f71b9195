// bench_scheduler_latency (issue 6): the latency that gRPC, the executor's queue and the
// scheduler (validation, clamp, job store, dispatcher, event log) add to a short generation,
// compared with the engine called in-process. Writes a markdown table (and, with --doc, the
// section "scheduler-latency" of docs/benchmarks.md).
//
//   bench_scheduler_latency [--n 50] [--warmup 5] [--doc docs/benchmarks.md]
//
// Everything runs in this process on loopback: a LoaderCore, an ExecutorCore attached through it
// (LoaderLease + FromSegment, fp32 compute over bf16 weights, as the e2e stack runs), the
// executor's gRPC service, and two schedulers (SchedulerCore + JobDispatcher + ExecutorPool +
// gRPC service, standard clamp), one over MemoryJobStore and one over RedisJobStore on a
// redis-server child (AOF everysec, as the Helm chart). Paths: the bare engine (sampler::Generate),
// ExecutorCore::Submit in-process, executor Run over gRPC, scheduler Generate over gRPC with each
// store. They are timed in turn, one call of each per round, so that load from other processes
// falls on all of them alike. Besides the call's time, each call reports its time outside the
// engine: the call minus the running_seconds the executor reports for that job.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/bench_compute.h"
#include "bench/common/temp_model.h"
#include "bench/common/bench_report.h"
#include "common/jobs/memory_job_store.h"
#include "common/jobs/redis_job_store.h"
#include "common/jobs/testing/redis_server.h"
#include "common/model/llada_model.h"
#include "common/sampler/sampler_registry.h"
#include "services/common/server_runner.h"
#include "services/executor/executor_core.h"
#include "services/executor/executor_grpc.h"
#include "services/executor/loader_client.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_grpc.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/executor_pool.h"
#include "services/scheduler/job_dispatcher.h"
#include "services/scheduler/model_catalog.h"
#include "services/scheduler/scheduler_core.h"
#include "services/scheduler/scheduler_grpc.h"
#include "tools/make_model/make_model.h"
#include "unmask/v1/executor.grpc.pb.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* kModel = "bench-tiny";

struct Args {
  int n = 50;
  int warmup = 5;
  int prompt_length = 16;
  std::int64_t gen_length = 8, block_length = 8, steps = 8;
  std::string doc;
};

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

// Runs calls on one long-lived thread of its own, as the executor runs jobs on its worker thread.
class CallThread {
 public:
  CallThread() : thread_([this] { Loop(); }) {}
  ~CallThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  template <typename Fn>
  auto Call(Fn fn) -> decltype(fn()) {
    decltype(fn()) result{};
    bool done = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      work_ = [&] {
        result = fn();
        std::lock_guard<std::mutex> inner(mu_);
        done = true;
        cv_.notify_all();
      };
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done; });
    return result;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || work_; });
      if (stop_) return;
      auto work = std::move(work_);
      work_ = nullptr;
      lock.unlock();
      work();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> work_;
  bool stop_ = false;
  std::thread thread_;
};

// One scheduler replica in this process, over `store`, dispatching to one executor.
class SchedulerStack {
 public:
  SchedulerStack(std::unique_ptr<jobs::JobStore> store, const std::string& executor_address, const std::string& model_root,
                 const std::string& name)
      : store_(std::move(store)),
        pool_([&] {
          scheduler::ExecutorPoolOptions o;
          o.addresses = {executor_address};
          return o;
        }()),
        catalog_({model_root}),
        core_(*store_, [this] { return pool_.Snapshot(); }, catalog_,
              scheduler::MakeClamper(fitting::ClampPolicy::kStandard, /*compute_dtype_bytes=*/4), {}),
        dispatcher_(*store_, pool_, catalog_,
                    [&] {
                      scheduler::DispatcherOptions o;
                      o.consumer_id = name;
                      return o;
                    }()),
        service_(core_),
        runner_("Scheduler") {}

  Status Start() {
    pool_.Start();
    runner_.AddService(&service_);
    UNMASK_RETURN_IF_ERROR(runner_.Start("127.0.0.1:0"));
    dispatcher_.Start();
    runner_.SetServing(true);
    if (!pool_.WaitForModel(kModel, std::chrono::seconds(30))) return UnavailableError("no executor serves the model");
    stub_ = v1::Scheduler::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(runner_.port()), grpc::InsecureChannelCredentials()));
    return OkStatus();
  }
  ~SchedulerStack() {
    runner_.Drain(std::chrono::seconds(1));
    dispatcher_.Stop();
  }
  v1::Scheduler::Stub& stub() { return *stub_; }

 private:
  std::unique_ptr<jobs::JobStore> store_;
  scheduler::ExecutorPool pool_;
  scheduler::ModelCatalog catalog_;
  scheduler::SchedulerCore core_;
  scheduler::JobDispatcher dispatcher_;
  scheduler::SchedulerGrpcService service_;
  services::ServerRunner runner_;
  std::unique_ptr<v1::Scheduler::Stub> stub_;
};

struct Stats {
  double p50 = 0, p90 = 0, mean = 0, max = 0;
};

Stats Summarize(std::vector<double> ms) {
  Stats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double q) {
    // Nearest rank.
    const std::size_t rank = static_cast<std::size_t>(std::ceil(q * ms.size()));
    return ms[std::min(ms.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.p50 = pct(0.5);
  s.p90 = pct(0.9);
  for (double v : ms) s.mean += v;
  s.mean /= ms.size();
  s.max = ms.back();
  return s;
}

int Main(const Args& a, int argc, char** argv) {
  jobs::testing::IgnoreSigpipe();
  tools::MakeModelOptions mo = bench::RandomModel(64, 2, 4, 176);
  const std::string tokenizer = std::string(UNMASK_BENCH_DATA) + "/tokenizers/llada-like.tokenizer.json";
  if (fs::exists(tokenizer)) mo.tokenizer = tokenizer;
  auto temp = bench::TempModel::Make("sched", mo, kModel);
  if (!temp.ok()) {
    std::cerr << temp.status().ToString() << "\n";
    return 1;
  }
  const std::string& root = (*temp)->root();

  // Loader and executor.
  loader::LoaderOptions lo;
  lo.model_roots = {root};
  loader::LoaderCore loader_core(lo);
  loader::LoaderGrpcService loader_service(loader_core);
  services::ServerRunner loader_runner("Loader");
  loader_runner.AddService(&loader_service);
  if (auto s = loader_runner.Start("127.0.0.1:0"); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  loader_runner.SetServing(true);
  // The loader's segment lives in /dev/shm until it is unloaded: unload it on every way out
  // (declared here, so it runs after everything declared below is gone).
  struct UnloadAtExit {
    loader::LoaderCore& core;
    ~UnloadAtExit() { (void)core.Unload(kModel, /*force=*/true); }
  } unload_at_exit{loader_core};
  auto lease = executor::LoaderLease::Acquire(executor::AttachOptions{
      "127.0.0.1:" + std::to_string(loader_runner.port()), kModel, "bf16", "bench-executor", std::chrono::seconds(30)});
  if (!lease.ok()) {
    std::cerr << lease.status().ToString() << "\n";
    return 1;
  }
  model::ModelOptions mopts;  // fp32 compute
  auto built = model::LladaModel::FromSegment((*lease)->model(), mopts);
  if (!built.ok()) {
    std::cerr << built.status().ToString() << "\n";
    return 1;
  }
  std::shared_ptr<const model::LladaModel> model(std::move(*built));
  const auto config = model->config();
  executor::ExecutorOptions eo;
  eo.executor_id = "bench-executor";
  eo.model_id = kModel;
  eo.weights_precision = (*lease)->precision();
  auto core = std::make_unique<executor::ExecutorCore>(model, eo);
  (void)core->Warmup();
  executor::ExecutorGrpcService executor_service(*core, kModel);
  services::ServerRunner executor_runner("Executor");
  executor_runner.AddService(&executor_service);
  if (auto s = executor_runner.Start("127.0.0.1:0"); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  executor_runner.SetServing(true);
  const std::string executor_address = "127.0.0.1:" + std::to_string(executor_runner.port());
  auto executor_stub = v1::Executor::NewStub(grpc::CreateChannel(executor_address, grpc::InsecureChannelCredentials()));

  // Schedulers: in-process store, and Redis.
  SchedulerStack memory_stack(std::make_unique<jobs::MemoryJobStore>(), executor_address, root, "bench-memory");
  if (auto s = memory_stack.Start(); !s.ok()) {
    std::cerr << "memory scheduler: " << s.ToString() << "\n";
    return 1;
  }
  jobs::testing::RedisServerOptions redis_options;
  redis_options.append_only = true;
  redis_options.appendfsync = "everysec";
  auto redis = jobs::testing::RedisServer::Start(redis_options);
  if (!redis.ok()) {
    std::cerr << "redis-server: " << redis.status().ToString() << "\n";
    return 1;
  }
  jobs::RedisJobStoreOptions ro;
  ro.endpoint.port = (*redis)->port();
  auto redis_store = jobs::RedisJobStore::Connect(ro);
  if (!redis_store.ok()) {
    std::cerr << "redis store: " << redis_store.status().ToString() << "\n";
    return 1;
  }
  SchedulerStack redis_stack(std::move(*redis_store), executor_address, root, "bench-redis");
  if (auto s = redis_stack.Start(); !s.ok()) {
    std::cerr << "redis scheduler: " << s.ToString() << "\n";
    return 1;
  }

  std::vector<std::int64_t> prompt;
  for (int i = 0; i < a.prompt_length; ++i) prompt.push_back(1000 + 37 * i);
  generation::GenerationParams params;
  params.gen_length = a.gen_length;
  params.block_length = a.block_length;
  params.steps = a.steps;
  params.mask_id = config.mask_token_id;
  params.eos_id = config.eos_token_id;
  params.eot_id = config.eot_token_id;

  std::string errors;
  int adjusted = 0;
  std::uint64_t job_counter = 0;

  // Each path returns the engine's own running time for the call in ms (the executor's
  // running_seconds, reported in its completion), 0 for the bare engine, or < 0 on failure.
  CallThread engine_thread;
  auto in_process = [&]() -> double {
    return engine_thread.Call([&] {
      sampler::PromptBatch prompts;
      prompts.ids = {prompt};
      auto r = sampler::Generate(generation::SamplerMode::kReference, *model, prompts, params);
      if (!r.ok()) errors = r.status().ToString();
      return r.ok() ? 0.0 : -1.0;
    });
  };
  auto core_direct = [&]() -> double {
    executor::JobRequest req;
    req.job_id = "direct-" + std::to_string(++job_counter);
    req.prompt_ids = prompt;
    req.params = params;
    auto job = core->Submit(std::move(req));
    if (!job.ok()) return -1.0;
    executor::JobEvent ev;
    while ((*job)->Next(ev, std::chrono::seconds(60))) {
      if (ev.kind == executor::JobEvent::Kind::kCompleted) return 1000.0 * ev.completed.running_seconds;
      if (ev.kind == executor::JobEvent::Kind::kFailed) return -1.0;
    }
    return -1.0;
  };
  auto executor_rpc = [&]() -> double {
    v1::RunRequest req;
    req.set_job_id("bench-" + std::to_string(++job_counter));
    req.set_model_id(kModel);
    for (auto id : prompt) req.add_prompt_ids(id);
    req.mutable_params()->set_gen_length(a.gen_length);
    req.mutable_params()->set_block_length(a.block_length);
    req.mutable_params()->set_steps(a.steps);
    grpc::ClientContext ctx;
    auto reader = executor_stub->Run(&ctx, req);
    v1::RunEvent ev;
    bool completed = false;
    double engine_ms = 0;
    while (reader->Read(&ev)) {
      if (!ev.has_completed()) continue;
      completed = true;
      engine_ms = 1000.0 * ev.completed().running_seconds();
    }
    grpc::Status s = reader->Finish();
    if (!s.ok() || !completed) errors = "executor Run: " + s.error_message();
    return s.ok() && completed ? engine_ms : -1.0;
  };
  auto scheduler_rpc = [&](SchedulerStack& stack) -> double {
    v1::GenerateRequest req;
    req.set_model(kModel);
    for (auto id : prompt) req.mutable_ids()->add_ids(id);
    req.mutable_params()->set_gen_length(a.gen_length);
    req.mutable_params()->set_block_length(a.block_length);
    req.mutable_params()->set_steps(a.steps);
    grpc::ClientContext ctx;
    auto reader = stack.stub().Generate(&ctx, req);
    v1::JobEvent ev;
    bool completed = false;
    double engine_ms = 0;
    while (reader->Read(&ev)) {
      if (ev.has_completed()) {
        completed = true;
        engine_ms = 1000.0 * ev.completed().timings().running_seconds();
      }
      if (ev.has_accepted() && ev.accepted().adjustments_size() > 0) ++adjusted;
      if (ev.has_failed()) errors = "scheduler Generate: " + ev.failed().message();
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) errors = "scheduler Generate: " + s.error_message();
    return s.ok() && completed ? engine_ms : -1.0;
  };

  struct Path {
    std::string name;
    std::function<double()> run;
    std::vector<double> ms, outside_ms;  // call time; call time minus the engine's running time
  };
  std::vector<Path> paths = {
      {"(a) `sampler::Generate` in-process", in_process, {}, {}},
      {"(a′) `ExecutorCore::Submit` in-process (the executor's queue, no gRPC)", core_direct, {}, {}},
      {"(b) executor `Run` over gRPC", executor_rpc, {}, {}},
      {"(c) scheduler `Generate` over gRPC, in-process job store", [&] { return scheduler_rpc(memory_stack); }, {}, {}},
      {"(d) scheduler `Generate` over gRPC, Redis job store", [&] { return scheduler_rpc(redis_stack); }, {}, {}},
  };
  int failures = 0;
  for (int i = 0; i < a.warmup + a.n; ++i) {
    // Each round starts with a different path, so that none always follows the same one.
    for (std::size_t k = 0; k < paths.size(); ++k) {
      Path& p = paths[(i + k) % paths.size()];
      const auto t0 = Clock::now();
      const double engine_ms = p.run();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (engine_ms < 0) {
        std::cerr << p.name << ": " << errors << "\n";
        ++failures;
        continue;
      }
      if (i >= a.warmup) {
        p.ms.push_back(ms);
        p.outside_ms.push_back(ms - engine_ms);
      }
    }
  }

  std::ostringstream md;
  md << "What the services add to the latency of a short generation: the same request timed through the engine "
        "in-process, the executor's gRPC API, and the scheduler's public API over each job store, so that the "
        "difference is the cost of gRPC, queueing, the job store and the event log, not of the model.\n\n"
     << "Random LLaDA-layout model, " << Fmt("%.1f", config.parameter_count() / 1e6) << " M parameters (d_model "
     << config.d_model << ", " << config.n_layers << " layers, " << config.n_heads << " heads, MLP "
     << config.mlp_hidden_size << ", vocab " << config.vocab_size
     << "; the LM head over the vocabulary is nearly all of the compute), bf16 weights in the loader's segment, fp32 compute, one "
        "executor worker. Request: prompt "
     << a.prompt_length << " ids, gen_length " << a.gen_length << ", block_length " << a.block_length << ", steps "
     << a.steps
     << ", reference sampler, temperature 0. All servers run in the benchmark process and talk over loopback TCP "
        "(insecure channels); the client waits for the whole stream (every step event and the completion). The "
        "scheduler rows use the binary's defaults (4 dispatch threads, executor polled every 500 ms, standard "
        "clamp) and the model directory has a tokenizer, so the scheduler also decodes the completed text; Redis is "
        "a local redis-server with AOF everysec. "
     << a.n << " timed calls per path after " << a.warmup
     << " warm-up rounds; the paths take turns, one call each per round, each round starting with the next path. \"Added\" compares each row with (a) "
        "at the same statistic. \"Outside the engine\" is, per call, the call's time minus the engine time the "
        "executor itself reports for that job (`running_seconds`: from the moment its worker takes the job to the "
        "end of `sampler::Generate`), so it is the services' share measured on the same call and is not disturbed "
        "by how long the model happened to take. Row (a′) sends the same job to the same `ExecutorCore` in-process "
        "(`Submit`, then the job's events), which isolates the executor's own queue and event hand-off.\n\n"
     << "| path | p50 ms | p90 ms | mean ms | max ms | added at p50 | added at mean | outside the engine, p50 / p90 ms "
        "|\n|---|---|---|---|---|---|---|---|\n";
  const Stats base = Summarize(paths[0].ms);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const Stats s = Summarize(paths[i].ms);
    const Stats outside = Summarize(paths[i].outside_ms);
    md << "| " << paths[i].name << " | " << Fmt("%.2f", s.p50) << " | " << Fmt("%.2f", s.p90) << " | "
       << Fmt("%.2f", s.mean) << " | " << Fmt("%.2f", s.max) << " | "
       << (i == 0 ? "–" : Fmt("%+.2f ms", s.p50 - base.p50)) << " | "
       << (i == 0 ? "–" : Fmt("%+.2f ms", s.mean - base.mean)) << " | "
       << (i == 0 ? "–" : Fmt("%.2f", outside.p50) + " / " + Fmt("%.2f", outside.p90)) << " |\n";
  }
  if (adjusted > 0) md << "\nThe clamp adjusted " << adjusted << " of the scheduler requests.\n";
  if (failures > 0) md << "\n" << failures << " calls failed and are not counted.\n";
  md << "\nHow to read it: the machine is shared with other work (2 cores for the client, the servers, the model, "
        "Redis and other jobs), and the engine's own time moves by tens of milliseconds from call to call, more than "
        "the services add. It may also depend on what else runs: several runs while this benchmark was written "
        "(on this machine, a virtual machine) showed the engine 5–20 % faster inside the gRPC paths than when "
        "called without gRPC, rows (a) and (a′) alike, perhaps because the gRPC threads keep the virtual CPUs from "
        "idling between the engine's parallel sections (not verified; other runs did not show "
        "it). The end-to-end columns and their differences from (a) therefore show that noise "
        "and that effect, not the services' cost (a difference can even come out negative); the last column, "
        "taken per call, is the figure to read for what the executor's queue, gRPC, the scheduler and the job "
        "store cost.\n\nMachine: "
     << bench::MachineDescription() << ". Command: `" << bench::CommandLine(argc, argv) << "`\n";
  std::cout << md.str() << std::endl;
  if (!a.doc.empty() && !bench::ReplaceDocSection(a.doc, "scheduler-latency", md.str())) {
    std::cerr << "cannot write " << a.doc << "\n";
    ++failures;
  }
  executor_runner.Drain(std::chrono::seconds(1));
  loader_runner.Drain(std::chrono::seconds(1));
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace unmask

int main(int argc, char** argv) {
  unmask::Args a;
  CLI::App app{"bench_scheduler_latency: latency the services add to a short generation"};
  app.add_option("--n", a.n, "Timed calls per path")->capture_default_str();
  app.add_option("--warmup", a.warmup, "Untimed rounds first")->capture_default_str();
  app.add_option("--prompt-length", a.prompt_length)->capture_default_str();
  app.add_option("--gen-length", a.gen_length)->capture_default_str();
  app.add_option("--block-length", a.block_length)->capture_default_str();
  app.add_option("--steps", a.steps)->capture_default_str();
  app.add_option("--doc", a.doc, "Markdown file whose scheduler-latency section is replaced");
  CLI11_PARSE(app, argc, argv);
  (void)unmask::bench::SetUpComputeOrExit();
  return unmask::Main(a, argc, argv);
}
