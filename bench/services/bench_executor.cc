// bench_executor (issue 5): what batching buys the executor, and what attaching to the loader's
// shared weights saves in resident memory. Writes two markdown tables (and, with --doc, the
// sections "executor-batching" and "executor-memory" of docs/benchmarks.md).
//
//   bench_executor [--parts batching,memory] [--repeats 5] [--executors 3] [--doc docs/benchmarks.md]
//
// batching: ExecutorCore in this process over a random LLaDA-layout model (d_model 256, 4 layers,
//   4 heads, MLP 704, vocab 126464, bf16 compute); N jobs (1, 4, 8) are submitted back to back and
//   waited for, with max_batch 8 (batching on) and max_batch 1 (off). Reference sampler,
//   temperature 0 (deterministic jobs are the ones that batch), prompts of 16 ids each and, in a
//   second table half, of 8-24 ids (lengths differ between jobs: batches are left-padded), gen_length 32,
//   block_length 32, steps 32. The on/off runs are interleaved so that load from other processes
//   hits both alike; each figure is the median over --repeats runs.
// memory: a random ~155M-parameter model (d_model 512, 8 layers, 8 heads, MLP 1408); a LoaderCore
//   with its gRPC service runs in this process and --executors child processes (this binary,
//   re-executed with --child) either attach through it (LoaderLease + LladaModel::FromSegment) or
//   load the checkpoint themselves (LladaModel::Load). Each child warms up with one generation and
//   then, while all of them are alive, reports its Rss/Pss from /proc/self/smaps_rollup.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bench/common/bench_compute.h"
#include "bench/common/temp_model.h"
#include "bench/common/bench_report.h"
#include "common/model/llada_model.h"
#include "common/sampler/sampler_registry.h"
#include "services/common/server_runner.h"
#include "services/executor/executor_core.h"
#include "services/executor/loader_client.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_grpc.h"
#include "tools/make_model/make_model.h"

namespace unmask {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace fs = std::filesystem;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string MiB(std::uint64_t bytes) { return Fmt("%.0f MiB", bytes / (1024.0 * 1024.0)); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

std::vector<std::int64_t> Prompt(int length, int variant) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < length; ++i) ids.push_back(1000 + 37 * i + 101 * variant);
  return ids;
}

// ---------------------------------------------------------------------------------------------
// smaps_rollup

struct Rollup {
  std::uint64_t rss = 0, pss = 0, pss_anon = 0, pss_file = 0, pss_shmem = 0;
};

Rollup ReadRollup(const std::string& path) {
  Rollup r;
  std::ifstream in(path);
  std::string key;
  std::uint64_t kb;
  std::string unit;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> key >> kb)) continue;
    const std::uint64_t bytes = kb * 1024;
    if (key == "Rss:") r.rss = bytes;
    else if (key == "Pss:") r.pss = bytes;
    else if (key == "Pss_Anon:") r.pss_anon = bytes;
    else if (key == "Pss_File:") r.pss_file = bytes;
    else if (key == "Pss_Shmem:") r.pss_shmem = bytes;
  }
  return r;
}

json ToJson(const Rollup& r) {
  return {{"rss", r.rss}, {"pss", r.pss}, {"pss_anon", r.pss_anon}, {"pss_file", r.pss_file}, {"pss_shmem", r.pss_shmem}};
}

Rollup FromJson(const json& j) {
  Rollup r;
  r.rss = j.value("rss", 0ull);
  r.pss = j.value("pss", 0ull);
  r.pss_anon = j.value("pss_anon", 0ull);
  r.pss_file = j.value("pss_file", 0ull);
  r.pss_shmem = j.value("pss_shmem", 0ull);
  return r;
}

// ---------------------------------------------------------------------------------------------
// batching

struct BatchRun {
  double wall_s = 0, tokens_per_s = 0, mean_latency_s = 0;
  std::string batches;  // e.g. "1 + 7": the batches the worker formed
  std::string error;
};

// Submits n jobs back to back and waits for all of them (one reader thread per job, so that
// each completion is timed when it happens).
// Job i's prompt length: 8..24 ids, different between neighbouring jobs (a batch is left-padded).
int MixedPromptLength(int i) { return 8 + (i * 7) % 17; }

BatchRun RunJobs(executor::ExecutorCore& core, const generation::GenerationParams& params, int prompt_length, int n) {
  BatchRun out;
  std::vector<std::shared_ptr<executor::Job>> jobs;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    executor::JobRequest req;
    req.job_id = "job-" + std::to_string(i);
    req.prompt_ids = Prompt(prompt_length > 0 ? prompt_length : MixedPromptLength(i), i);
    req.params = params;
    auto job = core.Submit(std::move(req));
    if (!job.ok()) {
      out.error = job.status().ToString();
      return out;
    }
    jobs.push_back(*job);
  }
  std::vector<Clock::time_point> done(n);
  std::vector<int> batch_size(n, 0);
  std::vector<std::string> errors(n);
  std::vector<std::thread> readers;
  for (int i = 0; i < n; ++i) {
    readers.emplace_back([&, i] {
      executor::JobEvent ev;
      while (true) {
        if (!jobs[i]->Next(ev, std::chrono::minutes(10))) {
          errors[i] = "timed out";
          return;
        }
        if (ev.kind == executor::JobEvent::Kind::kCompleted) {
          done[i] = Clock::now();
          batch_size[i] = ev.completed.batch_size;
          return;
        }
        if (ev.kind == executor::JobEvent::Kind::kFailed) {
          errors[i] = ev.status.ToString();
          return;
        }
      }
    });
  }
  for (auto& t : readers) t.join();
  for (const auto& e : errors) {
    if (!e.empty()) {
      out.error = e;
      return out;
    }
  }
  Clock::time_point last = t0;
  double latency_sum = 0;
  std::map<int, int> jobs_by_size;
  for (int i = 0; i < n; ++i) {
    last = std::max(last, done[i]);
    latency_sum += Seconds(done[i] - jobs[i]->submitted());
    ++jobs_by_size[batch_size[i]];
  }
  out.wall_s = Seconds(last - t0);
  out.tokens_per_s = static_cast<double>(n) * params.gen_length / out.wall_s;
  out.mean_latency_s = latency_sum / n;
  // Jobs of one batch all report the same size; sizes that repeat are listed as k x size.
  for (const auto& [size, count] : jobs_by_size) {
    const int batches = std::max(1, count / std::max(1, size));
    std::string part = batches == 1 ? std::to_string(size) : std::to_string(batches) + "×" + std::to_string(size);
    out.batches = out.batches.empty() ? part : out.batches + " + " + part;
  }
  return out;
}

struct Args {
  std::string parts = "batching,memory";
  int repeats = 5;
  int executors = 3;
  std::string doc;
  // child mode
  std::string child, loader, model_id, model_dir, load_precision = "bf16", precision = "bf16", executor_id;
  int warm_steps = 8;
};

int Batching(const Args& a, int argc, char** argv) {
  auto temp = bench::TempModel::Make("executor", bench::RandomModel(256, 4, 4, 704));
  if (!temp.ok()) {
    std::cerr << temp.status().ToString() << "\n";
    return 1;
  }
  const std::string& dir = (*temp)->dir();
  model::ModelOptions opts;
  opts.precision = model::Precision::kBFloat16;
  auto loaded = model::LladaModel::Load(dir, opts);
  if (!loaded.ok()) {
    std::cerr << loaded.status().ToString() << "\n";
    return 1;
  }
  std::shared_ptr<const model::LladaModel> model(std::move(*loaded));
  const auto& config = model->config();

  const int prompt_length = 16;
  generation::GenerationParams p;
  p.gen_length = p.block_length = p.steps = 32;
  p.temperature = 0;
  p.mask_id = config.mask_token_id;

  executor::ExecutorOptions on, off;
  on.max_batch = 8;
  off.max_batch = 1;
  on.executor_id = "batching-on";
  off.executor_id = "batching-off";
  executor::ExecutorCore core_on(model, on), core_off(model, off);
  (void)core_on.Warmup();
  (void)core_off.Warmup();
  // One job of the real shape on each, so that neither row pays for first-use allocations.
  (void)RunJobs(core_on, p, prompt_length, 1);
  (void)RunJobs(core_off, p, prompt_length, 1);

  const std::vector<int> counts = {1, 4, 8};
  // Prompt lengths: every job prompt_length ids, or 8..24 ids differing between jobs (0).
  const std::vector<int> prompt_modes = {prompt_length, 0};
  auto prompts_text = [&](int mode) { return mode > 0 ? std::to_string(mode) + " ids each" : std::string("8–24 ids, mixed"); };
  std::map<std::tuple<int, int, bool>, std::vector<BatchRun>> runs;
  int failures = 0;
  for (int mode : prompt_modes) {
    for (int n : counts) {
      for (int r = 0; r < a.repeats; ++r) {
        for (bool batching : {true, false}) {
          BatchRun run = RunJobs(batching ? core_on : core_off, p, mode, n);
          std::cerr << "prompts " << prompts_text(mode) << " batching " << (batching ? "on " : "off") << " jobs " << n
                    << " run " << r << ": "
                    << (run.error.empty() ? Fmt("%.2f tokens/s", run.tokens_per_s) + " batches " + run.batches : run.error)
                    << std::endl;
          if (!run.error.empty()) ++failures;
          runs[{mode, n, batching}].push_back(run);
        }
      }
    }
  }

  std::ostringstream md;
  md << "How much throughput the executor's batching buys when several deterministic jobs arrive together, "
        "measured on ExecutorCore in-process (no gRPC) so that only the engine and the queue are timed.\n\n"
     << "Random LLaDA-layout model, " << Fmt("%.1f", config.parameter_count() / 1e6) << " M parameters (d_model "
     << config.d_model << ", " << config.n_layers << " layers, " << config.n_heads << " heads, MLP "
     << config.mlp_hidden_size << ", vocab " << config.vocab_size
     << "), bf16 weights and bf16 compute on CPU, one worker thread. Each job: reference sampler, temperature 0, "
        "prompt ids different per job, either all of " << prompt_length << " ids or of 8–24 ids (mixed lengths: a "
        "batch is left-padded to its longest prompt and the padding masked out of attention), gen_length " << p.gen_length << ", block_length "
     << p.block_length << ", steps " << p.steps
     << ". N jobs are submitted back to back and waited for; tokens/s = N × gen_length / wall time from the first "
        "submit to the last completion; latency = submit to completion per job, averaged. Batching on = "
        "`max_batch 8`, off = `max_batch 1`. Median of "
     << a.repeats
     << " runs each; on/off runs were interleaved. \"Batches\" is how the worker actually grouped the jobs: it "
        "takes the first queued job the moment it arrives (there is no batching window), so jobs arriving "
        "together at an idle executor can split as 1 + (N-1).\n\n"
     << "| prompts | jobs | batching | tokens/s (median) | tokens/s (min–max) | mean job latency s | wall s | batches |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  for (int mode : prompt_modes) {
  for (int n : counts) {
    for (bool batching : {true, false}) {
      const auto& rs = runs[{mode, n, batching}];
      std::vector<double> tps, lat, wall;
      std::map<std::string, int> shapes;
      for (const auto& r : rs) {
        if (!r.error.empty()) continue;
        tps.push_back(r.tokens_per_s);
        lat.push_back(r.mean_latency_s);
        wall.push_back(r.wall_s);
        ++shapes[r.batches];
      }
      if (tps.empty()) {
        md << "| " << prompts_text(mode) << " | " << n << " | " << (batching ? "on" : "off") << " | failed | | | | |\n";
        continue;
      }
      std::string shape_text;
      for (const auto& [shape, k] : shapes)
        shape_text += (shape_text.empty() ? "" : "; ") + shape + (shapes.size() > 1 ? " (" + std::to_string(k) + "×)" : "");
      md << "| " << prompts_text(mode) << " | " << n << " | " << (batching ? "on (max_batch 8)" : "off (max_batch 1)") << " | "
         << Fmt("%.1f", Median(tps)) << " | " << Fmt("%.1f", *std::min_element(tps.begin(), tps.end())) << "–"
         << Fmt("%.1f", *std::max_element(tps.begin(), tps.end())) << " | " << Fmt("%.2f", Median(lat)) << " | " << Fmt("%.2f", Median(wall))
         << " | " << shape_text << " |\n";
    }
  }
  }
  // The headline: what batching did to throughput and latency at the largest N, per prompt mode.
  const int big = counts.back();
  for (int mode : prompt_modes) {
    std::vector<double> tps_on, tps_off, lat_on, lat_off;
    for (const auto& r : runs[{mode, big, true}]) {
      if (!r.error.empty()) continue;
      tps_on.push_back(r.tokens_per_s);
      lat_on.push_back(r.mean_latency_s);
    }
    for (const auto& r : runs[{mode, big, false}]) {
      if (!r.error.empty()) continue;
      tps_off.push_back(r.tokens_per_s);
      lat_off.push_back(r.mean_latency_s);
    }
    if (tps_on.empty() || tps_off.empty()) continue;
    md << "\nPrompts " << prompts_text(mode) << ", " << big << " jobs: batching gave "
       << Fmt("%.2f", Median(tps_on) / Median(tps_off)) << "× the throughput of running them one by one, at "
       << Fmt("%.2f", Median(lat_on) / Median(lat_off)) << "× the mean job latency (medians).\n";
  }
  md << "\nEvery job of a batch finishes only when the whole batch does, whereas one by one the first jobs finish "
        "early. A batch of mixed prompt lengths also computes its padding: every row is as long as the longest "
        "prompt plus gen_length. On this CPU a single job's step already pushes its whole sequence through the "
        "model and the LM head over "
     << config.vocab_size
     << " ids (the reference computes logits for every position), so the arithmetic is what costs and a batch "
        "of N costs nearly N steps; batching saves only the per-step fixed costs and some weight reads. "
        "Batching is meant for accelerators, where a small step is bound by reading the weights rather than by "
        "arithmetic; that was not measured here (no GPU on this machine).\n";
  md << "\nThe machine is shared with other work, so absolute figures move between runs; compare rows within this "
        "table.\n\nMachine: "
     << bench::MachineDescription() << ". Command: `" << bench::CommandLine(argc, argv) << "`\n";
  std::cout << md.str() << std::endl;
  if (!a.doc.empty() && !bench::ReplaceDocSection(a.doc, "executor-batching", md.str())) {
    std::cerr << "cannot write " << a.doc << "\n";
    ++failures;
  }
  return failures ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// memory: child side

int ChildMain(const Args& a) {
  model::ModelOptions opts;
  auto precision = model::ParsePrecision(a.precision);
  if (!precision.ok()) {
    std::cerr << precision.status().ToString() << "\n";
    return 2;
  }
  opts.precision = *precision;
  const auto t0 = Clock::now();
  std::unique_ptr<executor::LoaderLease> lease;
  StatusOr<std::unique_ptr<model::LladaModel>> m = InternalError("no mode");
  if (a.child == "attach") {
    auto acquired = executor::LoaderLease::Acquire(
        executor::AttachOptions{a.loader, a.model_id, a.load_precision, a.executor_id, std::chrono::seconds(120)});
    if (!acquired.ok()) {
      std::cerr << "child: " << acquired.status().ToString() << "\n";
      return 1;
    }
    lease = std::move(*acquired);
    m = model::LladaModel::FromSegment(lease->model(), opts);
  } else {
    m = model::LladaModel::Load(a.model_dir, opts);
  }
  if (!m.ok()) {
    std::cerr << "child: " << m.status().ToString() << "\n";
    return 1;
  }
  const double load_s = Seconds(Clock::now() - t0);
  sampler::PromptBatch prompts;
  prompts.ids = {Prompt(16, 0)};
  generation::GenerationParams p;
  p.gen_length = p.block_length = 32;
  p.steps = a.warm_steps;
  p.mask_id = (*m)->config().mask_token_id;
  const auto g0 = Clock::now();
  auto r = sampler::Generate(generation::SamplerMode::kReference, **m, prompts, p);
  if (!r.ok()) {
    std::cerr << "child: " << r.status().ToString() << "\n";
    return 1;
  }
  std::cout << json{{"ready", true}, {"load_seconds", load_s}, {"generate_seconds", Seconds(Clock::now() - g0)}}.dump()
            << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "measure") {
      std::cout << ToJson(ReadRollup("/proc/self/smaps_rollup")).dump() << std::endl;
    } else if (line == "exit") {
      break;
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// memory: parent side

struct Child {
  pid_t pid = -1;
  FILE* to = nullptr;    // its stdin
  FILE* from = nullptr;  // its stdout
};

Child Spawn(const std::vector<std::string>& args) {
  int in[2], out[2];
  Child c;
  // Built before fork: the child of a multithreaded process must not allocate before exec.
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return c;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[0]);
    ::close(in[1]);
    ::close(out[0]);
    ::close(out[1]);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  c.pid = pid;
  c.to = ::fdopen(in[1], "w");
  c.from = ::fdopen(out[0], "r");
  return c;
}

bool ReadLine(FILE* f, std::string& line) {
  line.clear();
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), f) != nullptr) {
    line += buf;
    if (!line.empty() && line.back() == '\n') return true;
  }
  return !line.empty();
}

void Send(Child& c, const std::string& line) {
  std::fputs((line + "\n").c_str(), c.to);
  std::fflush(c.to);
}

void Reap(Child& c) {
  if (c.to) std::fclose(c.to);
  if (c.from) std::fclose(c.from);
  c.to = c.from = nullptr;
  int status = 0;
  if (c.pid > 0) ::waitpid(c.pid, &status, 0);
}

struct Scenario {
  std::string mode;            // attach | private
  std::string load_precision;  // what the loader holds (attach)
  std::string precision;       // compute
  std::string what;            // the "weights" column
};

struct ScenarioResult {
  std::vector<Rollup> children;
  Rollup loader;
  double load_s = 0, generate_s = 0;
  std::string error;
};

ScenarioResult RunScenario(const Args& a, const Scenario& s, const std::string& loader_address, const std::string& model_id,
                           const std::string& model_dir) {
  ScenarioResult out;
  std::vector<Child> children;
  for (int i = 0; i < a.executors; ++i) {
    std::vector<std::string> args = {"bench_executor", "--child", s.mode, "--precision", s.precision,
                                     "--warm-steps", std::to_string(a.warm_steps)};
    if (s.mode == "attach") {
      args.insert(args.end(), {"--loader", loader_address, "--model", model_id, "--load-precision", s.load_precision,
                               "--executor-id", "bench-executor-" + std::to_string(i)});
    } else {
      args.insert(args.end(), {"--model-dir", model_dir});
    }
    children.push_back(Spawn(args));
    if (children.back().pid < 0) out.error = "cannot start a child";
  }
  std::string line;
  for (auto& c : children) {
    if (!out.error.empty()) break;
    if (!ReadLine(c.from, line)) {
      out.error = "a child ended before it was ready";
      break;
    }
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.value("ready", false)) {
      out.error = "a child said: " + line;
      break;
    }
    out.load_s += j.value("load_seconds", 0.0) / a.executors;
    out.generate_s += j.value("generate_seconds", 0.0) / a.executors;
  }
  if (out.error.empty()) {
    // Every child is alive and warmed up: measure them all now, and the loader's share too.
    for (auto& c : children) Send(c, "measure");
    for (auto& c : children) {
      if (!ReadLine(c.from, line)) {
        out.error = "a child did not report";
        break;
      }
      out.children.push_back(FromJson(json::parse(line, nullptr, false)));
    }
    out.loader = ReadRollup("/proc/self/smaps_rollup");
  }
  for (auto& c : children) {
    if (c.to) Send(c, "exit");
    Reap(c);
  }
  return out;
}

int Memory(const Args& a, int argc, char** argv) {
  const std::string model_id = "bench-llada";
  auto temp = bench::TempModel::Make("executor-mem", bench::RandomModel(512, 8, 8, 1408), model_id);
  if (!temp.ok()) {
    std::cerr << temp.status().ToString() << "\n";
    return 1;
  }
  const std::string& root = (*temp)->root();
  const std::string& dir = (*temp)->dir();
  std::uint64_t checkpoint_bytes = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().extension() == ".safetensors") checkpoint_bytes += fs::file_size(f.path());
  }

  loader::LoaderOptions lo;
  lo.model_roots = {root};
  loader::LoaderCore loader_core(lo);
  loader::LoaderGrpcService loader_service(loader_core);
  services::ServerRunner runner("Loader");
  runner.AddService(&loader_service);
  if (auto s = runner.Start("127.0.0.1:0"); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  runner.SetServing(true);
  const std::string address = "127.0.0.1:" + std::to_string(runner.port());

  const std::vector<Scenario> scenarios = {
      {"attach", "bf16", "bf16", "loader's segment (bf16)"},
      {"private", "", "bf16", "own mmap of the bf16 checkpoint"},
      {"attach", "bf16", "fp32", "loader's segment (bf16)"},
      {"private", "", "fp32", "own mmap of the bf16 checkpoint"},
      {"attach", "fp32", "fp32", "loader's segment (fp32)"},
  };
  std::string loaded_precision;
  std::map<std::string, std::uint64_t> segment_bytes;
  std::vector<ScenarioResult> results;
  int failures = 0;
  for (const auto& s : scenarios) {
    if (s.mode == "attach" && loaded_precision != s.load_precision) {
      if (!loaded_precision.empty()) (void)loader_core.Unload(model_id, /*force=*/true);
      auto info = loader_core.Load(model_id, s.load_precision, nullptr);
      if (!info.ok()) {
        std::cerr << info.status().ToString() << "\n";
        results.push_back({{}, {}, 0, 0, info.status().ToString()});
        ++failures;
        continue;
      }
      loaded_precision = s.load_precision;
      segment_bytes[s.load_precision] = info->resident_bytes;
    }
    auto r = RunScenario(a, s, address, model_id, dir);
    std::cerr << s.mode << " " << s.load_precision << " -> " << s.precision << ": "
              << (r.error.empty() ? "ok" : r.error) << std::endl;
    if (!r.error.empty()) ++failures;
    results.push_back(std::move(r));
  }
  (void)loader_core.Unload(model_id, true);

  const auto config = *checkpoint::LladaConfig::FromFile(dir + "/config.json");
  std::ostringstream md;
  md << "Resident memory of " << a.executors
     << " executor processes serving one model, attached to the loader's shared-memory segment versus each "
        "loading the checkpoint itself; the point of the loader is that weights are held once, however many "
        "executors there are.\n\n"
     << "Random LLaDA-layout model, " << Fmt("%.1f", config.parameter_count() / 1e6) << " M parameters (d_model "
     << config.d_model << ", " << config.n_layers << " layers, " << config.n_heads << " heads, MLP "
     << config.mlp_hidden_size << ", vocab " << config.vocab_size << "), checkpoint " << MiB(checkpoint_bytes)
     << " of bf16 safetensors; loader segment " << MiB(segment_bytes["bf16"]) << " at bf16";
  if (segment_bytes.count("fp32")) md << ", " << MiB(segment_bytes["fp32"]) << " at fp32";
  md << ". The loader (LoaderCore + its gRPC service) runs in the benchmark process; each executor is a child "
        "process (the benchmark re-executed) that builds the model (`LoaderLease::Acquire` + "
        "`LladaModel::FromSegment`, or `LladaModel::Load` from the directory), warms up with one generation "
        "(prompt 16, gen_length 32, steps "
     << a.warm_steps
     << ") and then, while all " << a.executors
     << " are alive, reads its own `/proc/self/smaps_rollup`. Per-executor figures are the mean over the "
     << a.executors
     << " children. PSS splits each shared page among the processes mapping it, so the sum of PSS is what the "
        "executors cost together; in the attach rows the loader process maps the segment too and holds the "
        "rest of it (its `Pss_Shmem`, listed separately).\n\n"
     << "| executors get weights from | compute | RSS / executor | PSS / executor | of which anon / file / shmem | "
        "sum of PSS (" << a.executors << ") | + loader's share of the segment | total | load s | warm-up s |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto& s = scenarios[i];
    const auto& r = results[i];
    if (!r.error.empty() || r.children.empty()) {
      md << "| " << s.what << " | " << s.precision << " | failed: " << r.error << " | | | | | | | |\n";
      continue;
    }
    Rollup mean, sum;
    for (const auto& c : r.children) {
      sum.rss += c.rss;
      sum.pss += c.pss;
      sum.pss_anon += c.pss_anon;
      sum.pss_file += c.pss_file;
      sum.pss_shmem += c.pss_shmem;
    }
    const auto n = r.children.size();
    mean = {sum.rss / n, sum.pss / n, sum.pss_anon / n, sum.pss_file / n, sum.pss_shmem / n};
    md << "| " << s.what << " | " << s.precision << " | " << MiB(mean.rss) << " | " << MiB(mean.pss) << " | "
       << MiB(mean.pss_anon) << " / " << MiB(mean.pss_file) << " / " << MiB(mean.pss_shmem) << " | " << MiB(sum.pss)
       << " | " << (s.mode == "attach" ? MiB(r.loader.pss_shmem) : "–") << " | "
       << MiB(sum.pss + (s.mode == "attach" ? r.loader.pss_shmem : 0)) << " | " << Fmt("%.2f", r.load_s) << " | "
       << Fmt("%.2f", r.generate_s) << " |\n";
  }
  md << "\nHow to read it, honestly:\n\n"
        "- **bf16 compute**: both ways are zero-copy. Attached executors compute over views of the shared-memory "
        "segment; an executor that loads the bf16 checkpoint itself computes over views of its own read-only mmap, "
        "and the kernel's page cache already shares those pages between processes (they show up as `Pss_File`, "
        "not anon). So at bf16 the loader saves no resident memory over private loads from the same local disk "
        "(the attach row's total is even higher, because the loader wrote, and keeps resident, the whole segment, "
        "while the private executors only fault in the pages they touch; the rest of the checkpoint sits in the "
        "page cache, where it is reclaimable and counted in nobody's PSS). What the loader buys at bf16 is one load "
        "instead of N, one precision/quantization per model, and weights that do not depend on the page cache "
        "(file pages can be evicted and re-read under memory pressure; the segment stays in shmem).\n"
        "- Executors touch only the embedding rows of the tokens they see, so most of the embedding table (a "
        "quarter of this model) is resident only once, in the loader (or in the page cache).\n"
        "- **fp32 compute over bf16 weights** (loader segment at bf16, or the bf16 checkpoint): every executor "
        "converts every tensor into its own fp32 copy (anon memory, about twice the bf16 size per process), "
        "attached or not; attaching then costs the segment on top.\n"
        "- **fp32 compute over an fp32 segment** (`--load-precision fp32` for the loader): zero-copy again, one fp32 "
        "copy in shared memory for all executors. This is the configuration in which the loader saves memory: "
        "(N − 1) × the fp32 weights compared with N private fp32 executors.\n"
        "- Each executor's anon memory beyond the weights is LibTorch, gRPC and the allocator's cached activations "
        "from the warm-up.\n\n"
        "The machine is shared with other work; memory figures are stable, the load and warm-up times are not.\n\n"
        "Machine: "
     << bench::MachineDescription() << ". Command: `" << bench::CommandLine(argc, argv) << "`\n";
  std::cout << md.str() << std::endl;
  if (!a.doc.empty() && !bench::ReplaceDocSection(a.doc, "executor-memory", md.str())) {
    std::cerr << "cannot write " << a.doc << "\n";
    ++failures;
  }
  runner.Drain(std::chrono::seconds(1));
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace unmask

int main(int argc, char** argv) {
  unmask::Args a;
  CLI::App app{"bench_executor: executor batching throughput and shared-weights memory"};
  app.add_option("--parts", a.parts, "batching,memory")->capture_default_str();
  app.add_option("--repeats", a.repeats, "Runs per batching row (the median is reported)")->capture_default_str();
  app.add_option("--executors", a.executors, "Executor processes in the memory part")->capture_default_str();
  app.add_option("--warm-steps", a.warm_steps, "Steps of each memory child's warm-up generation")->capture_default_str();
  app.add_option("--doc", a.doc, "Markdown file whose executor-batching / executor-memory sections are replaced");
  // Internal: the memory part's child processes.
  app.add_option("--child", a.child)->group("");
  app.add_option("--loader", a.loader)->group("");
  app.add_option("--model", a.model_id)->group("");
  app.add_option("--model-dir", a.model_dir)->group("");
  app.add_option("--load-precision", a.load_precision)->group("");
  app.add_option("--precision", a.precision)->group("");
  app.add_option("--executor-id", a.executor_id)->group("");
  CLI11_PARSE(app, argc, argv);
  (void)unmask::bench::SetUpComputeOrExit();
  if (!a.child.empty()) return unmask::ChildMain(a);

  int failures = 0;
  if (a.parts.find("batching") != std::string::npos) failures += unmask::Batching(a, argc, argv);
  if (a.parts.find("memory") != std::string::npos) failures += unmask::Memory(a, argc, argv);
  return failures ? 1 : 0;
}
