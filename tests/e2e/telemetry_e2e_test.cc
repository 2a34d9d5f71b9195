// End-to-end telemetry: the real binaries export spans to an OTLP collector stood up in the test
// (tests/telemetry/test_collector), and serve Prometheus metrics scraped over plain HTTP.
//
//   - one Generate is one trace: the `unmask` CLI's client span is its root, the scheduler's
//     Generate span its child, the dispatcher's spans are children of the context stored with
//     the job, the executor's Run span is the child of the dispatcher's client span, the
//     executor's job span is the child of Run, and the job span has one executor.block child per
//     diffusion block, each with an event per step of the block;
//   - the CLI continues a --traceparent (and passes it on when it does not trace itself);
//   - a LoadModel is a trace of its own with a span per layer (blocks.N);
//   - a collector that is not there (or hangs) costs the requests and the CLI nothing;
//   - every service's /metrics parses as the text exposition format and has its unmask_* families.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/span_views.h"
#include "tests/e2e/cli_json.h"
#include "tests/e2e/stack.h"
#include "services/common/grpc_tls.h"
#include "tests/telemetry/test_collector.h"
#include "tests/tls/test_pki.h"

namespace unmask::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using nlohmann::json;
using telemetry::testing::HttpGet;
using telemetry::testing::TestCollector;
using telemetry::testing::UnusedPort;

std::string JobIdOf(const std::vector<json>& events) {
  for (const auto& ev : events) {
    if (ev.contains("jobId")) return ev["jobId"].get<std::string>();
    if (ev.contains("job_id")) return ev["job_id"].get<std::string>();
  }
  return "";
}

bool Completed(const std::vector<json>& events) {
  return !events.empty() && events.back().contains("completed");
}

// ---- Prometheus text exposition format ------------------------------------------------------

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
struct Family {
  std::string help, type;
  std::vector<Sample> samples;
};
struct Exposition {
  std::map<std::string, Family> families;
  std::vector<std::string> errors;  // lines that do not parse, samples without a TYPE
};

// The family a sample belongs to: histogram and summary samples carry suffixes.
std::string FamilyOf(const std::string& sample, const std::map<std::string, Family>& families) {
  if (families.count(sample)) return sample;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s(suffix);
    if (sample.size() > s.size() && sample.compare(sample.size() - s.size(), s.size(), s) == 0) {
      const std::string base = sample.substr(0, sample.size() - s.size());
      if (families.count(base)) return base;
    }
  }
  return "";
}

bool IsNameChar(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

Exposition ParseExposition(const std::string& text) {
  Exposition out;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::stringstream words(line);
      std::string hash, kind, name;
      words >> hash >> kind >> name;
      std::string rest;
      std::getline(words, rest);
      if (!rest.empty() && rest[0] == ' ') rest = rest.substr(1);
      if (kind == "HELP") out.families[name].help = rest;
      else if (kind == "TYPE") out.families[name].type = rest;
      continue;
    }
    // name{label="value",...} value [timestamp]
    std::size_t i = 0;
    while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
    Sample s;
    s.name = line.substr(0, i);
    bool ok = !s.name.empty();
    if (ok && i < line.size() && line[i] == '{') {
      ++i;
      while (ok && i < line.size() && line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          ok = false;
          break;
        }
        const std::string key = line.substr(i, eq - i);
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) {
          ok = false;
          break;
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (ok && i < line.size() && line[i] == '}') ++i;
      else ok = false;
    }
    if (ok && (i >= line.size() || line[i] != ' ')) ok = false;
    if (ok) {
      std::stringstream rest(line.substr(i + 1));
      std::string value;
      rest >> value;
      try {
        std::size_t used = 0;
        s.value = value == "+Inf" ? INFINITY : value == "-Inf" ? -INFINITY : std::stod(value, &used);
        if (value != "+Inf" && value != "-Inf" && used != value.size()) ok = false;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    const std::string family = ok ? FamilyOf(s.name, out.families) : "";
    if (!ok || family.empty() || out.families[family].type.empty()) {
      out.errors.push_back(line);
      continue;
    }
    out.families[family].samples.push_back(std::move(s));
  }
  return out;
}

Exposition Scrape(int port) {
  auto r = HttpGet(port, "/metrics");
  EXPECT_EQ(r.status, 200) << "port " << port;
  return ParseExposition(r.body);
}

// The value of the sample `name` whose labels include `labels`; nullopt when there is none.
std::optional<double> Value(const Exposition& e, const std::string& name,
                            const std::map<std::string, std::string>& labels = {}) {
  const std::string family = FamilyOf(name, e.families);
  if (family.empty()) return std::nullopt;
  for (const auto& s : e.families.at(family).samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      match &= it != s.labels.end() && it->second == v;
    }
    if (match) return s.value;
  }
  return std::nullopt;
}

void ExpectFamily(const Exposition& e, const std::string& name, const std::string& type, const std::string& who) {
  auto it = e.families.find(name);
  ASSERT_NE(it, e.families.end()) << who << " does not expose " << name;
  EXPECT_EQ(it->second.type, type) << who << " " << name;
  EXPECT_FALSE(it->second.help.empty()) << who << " " << name << " has no HELP";
}

// The trace id the CLI printed ("trace_id=<32 hex>" on a line of its own); "" when none.
std::string PrintedTraceId(const std::string& out) {
  std::stringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    const std::string key = "trace_id=";
    if (line.rfind(key, 0) == 0 && line.size() == key.size() + 32) return line.substr(key.size());
  }
  return "";
}

// A TCP port that accepts connections (the kernel completes them) and never answers: a collector
// that hangs. Closed with the object.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// The tests say where the CLI traces to; a developer's environment must not.
const bool kTraceEnvironmentCleared = [] {
  ::unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  ::unsetenv("TRACEPARENT");
  return true;
}();

// ---- tests --------------------------------------------------------------------------------

// --otlp-tls-ca / -cert / -key: the three services and the CLI send their spans to a receiver
// that serves mutual TLS (as a collector behind cert-manager would), and everyone's spans arrive.
TEST(ServicesTelemetryTest, TheServicesSendTheirSpansOverMutualTls) {
  unmask::testing::TestPki pki;
  tls::ServerTlsOptions receiver;
  receiver.cert_file = pki.server_cert();
  receiver.key_file = pki.server_key();
  receiver.ca_file = pki.ca();
  receiver.require_client_cert = true;
  auto material = tls::LoadServerTls(receiver);
  ASSERT_TRUE(material.ok()) << material.status().ToString();
  TestCollector collector(tls::ServerCredentials(*material));
  Stack stack;
  const std::vector<std::string> tracing = {"--otlp-endpoint", collector.endpoint(), "--otlp-tls-ca", pki.ca(),
                                            "--otlp-tls-cert", pki.client_cert(), "--otlp-tls-key", pki.client_key()};
  stack.StartLoader(tracing);
  stack.StartExecutor(tracing);
  const int s = stack.StartScheduler(tracing);
  std::string cli_tls;
  for (std::size_t i = 2; i < tracing.size(); ++i) cli_tls += " " + tracing[i];
  CliResult r = stack.Cli(s, "--otlp-endpoint " + collector.endpoint() + cli_tls +
                                 " generate --model tiny-llada --prompt-ids 1,2,3 --gen-length 16 --block-length 8 --steps 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string job = JobIdOf(JsonLines(r.out));
  auto spans = WaitForSpans(collector, [&](const std::vector<SpanView>& all) {
    return !Find(all, "unmask-loader", "LoadModel").empty() && !Find(all, "unmask-executor", "Run", "job.id", job).empty() &&
           !Find(all, "unmask-scheduler", "Generate", "job.id", job).empty() &&
           !Find(all, "unmask-cli", "unmask.v1.Scheduler/Generate", "job.id", job).empty();
  });
  EXPECT_EQ(Find(spans, "unmask-cli", "unmask.v1.Scheduler/Generate", "job.id", job).size(), 1u) << Describe(spans);
  // A CA file that does not exist: the CLI refuses the flag (exit 2) instead of tracing in the clear.
  r = stack.Cli(s, "--otlp-endpoint " + collector.endpoint() + " --otlp-tls-ca /no/such/ca.crt models");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--otlp-tls-ca /no/such/ca.crt"));
  EXPECT_FALSE(Find(spans, "unmask-loader", "LoadModel").empty()) << Describe(spans);
  EXPECT_EQ(Find(spans, "unmask-executor", "Run", "job.id", job).size(), 1u) << Describe(spans);
  EXPECT_EQ(Find(spans, "unmask-scheduler", "Generate", "job.id", job).size(), 1u) << Describe(spans);
}

TEST(ServicesTelemetryTest, OneGenerateIsOneTraceFromTheCliThroughTheExecutorsBlocks) {
  TestCollector collector;
  Stack stack;
  const std::vector<std::string> tracing = {"--otlp-endpoint", collector.endpoint()};
  stack.StartLoader(tracing);
  stack.StartExecutor(tracing);
  const int s = stack.StartScheduler(tracing);

  // 16 tokens in blocks of 8, 16 steps: 2 blocks of 8 steps.
  CliResult r = stack.Cli(s, "--otlp-endpoint " + collector.endpoint() +
                                 " generate --model tiny-llada --prompt-ids 1,2,3 --gen-length 16 --block-length 8"
                                 " --steps 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto events = JsonLines(r.out);
  ASSERT_TRUE(Completed(events)) << r.out;
  const std::string job = JobIdOf(events);
  ASSERT_FALSE(job.empty()) << r.out;
  const std::string printed = PrintedTraceId(r.out);
  ASSERT_FALSE(printed.empty()) << "the CLI prints trace_id=<hex> when it traces:\n" << r.out;

  auto spans = WaitForSpans(collector, [&](const std::vector<SpanView>& all) {
    const auto job_span = Find(all, "unmask-executor", "executor.job", "job.id", job);
    return !Find(all, "unmask-cli", "unmask.v1.Scheduler/Generate", "job.id", job).empty() &&
           !Find(all, "unmask-scheduler", "Generate", "job.id", job).empty() &&
           !Find(all, "unmask-scheduler", "scheduler.queue", "job.id", job).empty() &&
           !Find(all, "unmask-scheduler", "unmask.v1.Executor/Run", "job.id", job).empty() &&
           !Find(all, "unmask-executor", "Run", "job.id", job).empty() && job_span.size() == 1 &&
           Children(all, job_span[0], "executor.block").size() >= 2;
  });
  MaybeDump(spans);
  const auto cli = Find(spans, "unmask-cli", "unmask.v1.Scheduler/Generate", "job.id", job);
  const auto generate = Find(spans, "unmask-scheduler", "Generate", "job.id", job);
  const auto queue = Find(spans, "unmask-scheduler", "scheduler.queue", "job.id", job);
  const auto client = Find(spans, "unmask-scheduler", "unmask.v1.Executor/Run", "job.id", job);
  const auto run = Find(spans, "unmask-executor", "Run", "job.id", job);
  const auto job_span = Find(spans, "unmask-executor", "executor.job", "job.id", job);
  ASSERT_EQ(cli.size(), 1u) << Describe(spans);
  ASSERT_EQ(generate.size(), 1u) << Describe(spans);
  ASSERT_EQ(queue.size(), 1u) << Describe(spans);
  ASSERT_EQ(client.size(), 1u) << Describe(spans);
  ASSERT_EQ(run.size(), 1u) << Describe(spans);
  ASSERT_EQ(job_span.size(), 1u) << Describe(spans);

  // One trace, rooted at the CLI's client span, whose id the CLI printed.
  const SpanView& c = cli[0];
  const std::string trace = c.trace_id;
  EXPECT_EQ(trace, printed);
  EXPECT_EQ(c.parent_span_id, "") << "the CLI's span is the root";
  EXPECT_EQ(c.kind, 3);    // CLIENT
  EXPECT_EQ(c.status, 1);  // OK
  EXPECT_EQ(c.attributes.at("rpc.method"), "unmask.v1.Scheduler/Generate");
  EXPECT_EQ(c.attributes.at("rpc.grpc.status_code"), "0");
  EXPECT_EQ(c.attributes.at("model"), "tiny-llada");
  std::set<std::string> services;
  int roots = 0;
  for (const auto& sp : spans) {
    if (sp.trace_id != trace) continue;
    services.insert(sp.service);
    roots += sp.parent_span_id.empty();
  }
  EXPECT_EQ(services, (std::set<std::string>{"unmask-cli", "unmask-scheduler", "unmask-executor"})) << Describe(spans);
  EXPECT_EQ(roots, 1) << Describe(spans);

  // Parent links: the scheduler's Generate is the child of the CLI's span; the dispatcher's
  // spans are children of the context stored with the job (the Generate span's), the executor's
  // Run span is the child of the dispatcher's client span, the job's span is the child of Run.
  const SpanView& g = generate[0];
  EXPECT_EQ(g.parent_span_id, c.span_id);
  EXPECT_EQ(g.kind, 2);    // SERVER
  EXPECT_EQ(g.status, 1);  // OK
  for (const auto* v : {&g, &queue[0], &client[0], &run[0], &job_span[0]}) EXPECT_EQ(v->trace_id, trace) << v->name;
  EXPECT_EQ(queue[0].parent_span_id, g.span_id);
  EXPECT_EQ(client[0].parent_span_id, g.span_id);
  EXPECT_EQ(client[0].kind, 3);  // CLIENT
  EXPECT_EQ(run[0].parent_span_id, client[0].span_id);
  EXPECT_EQ(run[0].kind, 2);
  EXPECT_EQ(job_span[0].parent_span_id, run[0].span_id);

  // Time: the CLI's call encloses the server's (clocks of one host; 50 ms slack); the queue span
  // covers creation to claim (backdated into the Generate span); the job's spans continue after it.
  constexpr std::uint64_t kSlack = 50'000'000ull;
  EXPECT_LE(c.start, g.start + kSlack);
  EXPECT_GE(c.end + kSlack, g.end);
  // (the stored creation time has millisecond resolution)
  EXPECT_GE(queue[0].start + 1'000'000ull, g.start);
  EXPECT_LE(queue[0].start, queue[0].end);
  EXPECT_LE(queue[0].end, client[0].start);
  EXPECT_LE(client[0].start, run[0].start + kSlack);
  EXPECT_GE(job_span[0].start, queue[0].end);
  EXPECT_LE(job_span[0].end, g.end);

  // What an operator filters on.
  EXPECT_EQ(g.attributes.at("model"), "tiny-llada");
  EXPECT_EQ(g.attributes.at("sampler"), "reference");
  EXPECT_EQ(g.attributes.at("gen_length"), "16");
  EXPECT_EQ(g.attributes.at("block_length"), "8");
  EXPECT_EQ(g.attributes.at("steps"), "16");
  EXPECT_EQ(g.attributes.at("adjustments"), "0");
  EXPECT_EQ(g.attributes.at("job.state"), "succeeded");
  EXPECT_EQ(client[0].attributes.at("executor"), "executor-0");
  EXPECT_EQ(client[0].attributes.at("steps_received"), "16");
  EXPECT_EQ(client[0].status, 1);
  const SpanView& j = job_span[0];
  EXPECT_EQ(j.attributes.at("executor.id"), "executor-0");
  EXPECT_EQ(j.attributes.at("sampler"), "reference");
  EXPECT_EQ(j.attributes.at("batch.size"), "1");
  EXPECT_EQ(j.attributes.at("tokens.generated"), "16");
  EXPECT_EQ(j.attributes.at("blocks"), "2");
  EXPECT_EQ(j.status, 1);

  // Exactly one executor.block span per diffusion block, children of the job's span, in order,
  // tiling it; each carries the events of its own steps, which together unmask its 8 positions.
  const auto blocks = Children(spans, j, "executor.block");
  ASSERT_EQ(blocks.size(), 2u) << Describe(spans);
  int steps = 0, unmasked = 0;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const SpanView& blk = blocks[b];
    SCOPED_TRACE("block " + std::to_string(b));
    EXPECT_EQ(blk.service, "unmask-executor");
    EXPECT_EQ(blk.kind, 1);  // INTERNAL
    EXPECT_EQ(blk.status, 1);
    EXPECT_EQ(blk.attributes.at("block"), std::to_string(b));
    EXPECT_EQ(blk.attributes.at("first_step"), std::to_string(8 * b));
    EXPECT_EQ(blk.attributes.at("last_step"), std::to_string(8 * b + 7));
    EXPECT_EQ(blk.attributes.at("steps"), "8");
    EXPECT_EQ(blk.attributes.at("unmasked"), "8");
    EXPECT_GE(blk.start, j.start);
    EXPECT_LE(blk.start, blk.end);
    EXPECT_LE(blk.end, j.end);
    if (b > 0) {
      EXPECT_LE(blocks[b - 1].end, blk.start);
    }
    int block_steps = 0, block_unmasked = 0;
    for (const auto& [name, attrs] : blk.events) {
      if (name != "step") continue;
      ++block_steps;
      block_unmasked += std::stoi(attrs.at("unmasked"));
      EXPECT_EQ(attrs.at("block"), std::to_string(b));
      const int step = std::stoi(attrs.at("step"));
      EXPECT_GE(step, static_cast<int>(8 * b));
      EXPECT_LE(step, static_cast<int>(8 * b + 7));
      EXPECT_EQ(attrs.count("seconds"), 1u);
    }
    EXPECT_EQ(block_steps, 8);
    EXPECT_EQ(block_unmasked, 8);
    steps += block_steps;
    unmasked += block_unmasked;
  }
  EXPECT_EQ(steps, 16);
  EXPECT_EQ(unmasked, 16);
  // The step events moved to the blocks: the job's span has none of its own.
  for (const auto& [name, attrs] : j.events) EXPECT_NE(name, "step");

  // Log lines carry the trace id and the job id.
  EXPECT_THAT(stack.scheduler(s).output(), HasSubstr("trace_id=" + trace + " job_id=" + job));
  EXPECT_THAT(stack.executor(0).output(), HasSubstr("trace_id=" + trace + " job_id=" + job + " msg=\"job done\""));
}

TEST(ServicesTelemetryTest, TheCliContinuesAGivenTraceparent) {
  TestCollector collector;
  Stack stack;
  const std::vector<std::string> tracing = {"--otlp-endpoint", collector.endpoint()};
  stack.StartLoader(tracing);
  stack.StartExecutor(tracing);
  const int s = stack.StartScheduler(tracing);

  // Tracing on: the CLI's span is the child of the given parent, the scheduler's of the CLI's.
  const std::string traced = "4bf92f3577b34da6a3ce929d0e0e4736", caller = "00f067aa0ba902b7";
  CliResult r = stack.Cli(s, "--otlp-endpoint " + collector.endpoint() + " --traceparent 00-" + traced + "-" +
                                 caller + "-01 models --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(PrintedTraceId(r.out), traced) << r.out;

  // Tracing off: nothing recorded by the CLI, but the traceparent goes on to the scheduler as is.
  const std::string passed = "0af7651916cd43dd8448eb211c80319c", passer = "b7ad6b7169203331";
  r = stack.Cli(s, "--traceparent 00-" + passed + "-" + passer + "-01 jobs --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(PrintedTraceId(r.out), "") << r.out;

  // A traceparent that does not parse is a usage error.
  r = stack.Cli(s, "--traceparent 00-nothex-01 models");
  EXPECT_EQ(r.exit_code, 2) << r.out;

  auto in_trace = [](const std::vector<SpanView>& all, const std::string& trace, const std::string& name) {
    std::vector<SpanView> out;
    for (const auto& sp : all) {
      if (sp.trace_id == trace && sp.name == name) out.push_back(sp);
    }
    return out;
  };
  auto spans = WaitForSpans(collector, [&](const std::vector<SpanView>& all) {
    return !in_trace(all, traced, "unmask.v1.Scheduler/ListModels").empty() &&
           !in_trace(all, traced, "ListModels").empty() && !in_trace(all, passed, "ListJobs").empty();
  });
  MaybeDump(spans);
  const auto cli = in_trace(spans, traced, "unmask.v1.Scheduler/ListModels");
  const auto server = in_trace(spans, traced, "ListModels");
  ASSERT_EQ(cli.size(), 1u) << Describe(spans);
  ASSERT_EQ(server.size(), 1u) << Describe(spans);
  EXPECT_EQ(cli[0].service, "unmask-cli");
  EXPECT_EQ(cli[0].parent_span_id, caller);
  EXPECT_EQ(cli[0].kind, 3);
  EXPECT_EQ(cli[0].status, 1);
  EXPECT_EQ(server[0].service, "unmask-scheduler");
  EXPECT_EQ(server[0].parent_span_id, cli[0].span_id);

  const auto jobs = in_trace(spans, passed, "ListJobs");
  ASSERT_EQ(jobs.size(), 1u) << Describe(spans);
  EXPECT_EQ(jobs[0].service, "unmask-scheduler");
  EXPECT_EQ(jobs[0].parent_span_id, passer);
  for (const auto& sp : spans) EXPECT_FALSE(sp.service == "unmask-cli" && sp.trace_id == passed) << sp.name;
}

TEST(ServicesTelemetryTest, ALoadModelIsATraceOfItsOwnWithASpanPerLayer) {
  TestCollector collector;
  Stack stack;
  const std::vector<std::string> tracing = {"--otlp-endpoint", collector.endpoint()};
  stack.StartLoader(tracing);
  stack.StartExecutor(tracing);  // attaches: executor.attach -> LoadModel -> blocks.N
  const int s = stack.StartScheduler(tracing);

  // A LoadModel from the CLI (no tracing): the loader's span is the root of a trace of its own.
  const std::string copy = stack.model_root() + "/tiny-llada-copy";
  fs::copy(stack.model_root() + "/tiny-llada", copy, fs::copy_options::recursive);
  CliResult r = stack.Cli(s, "load --loader " + stack.loader_address() + " --model tiny-llada-copy");
  ASSERT_EQ(r.exit_code, 0) << r.out;

  auto layers_of = [](const std::vector<SpanView>& all, const SpanView& load) {
    std::vector<SpanView> out;
    for (const auto& sp : all) {
      if (sp.service == "unmask-loader" && sp.parent_span_id == load.span_id && sp.name.rfind("blocks.", 0) == 0)
        out.push_back(sp);
    }
    std::sort(out.begin(), out.end(), [](const SpanView& a, const SpanView& b) { return a.start < b.start; });
    return out;
  };
  auto spans = WaitForSpans(collector, [&](const std::vector<SpanView>& all) {
    const auto loads = Find(all, "unmask-loader", "LoadModel");
    int complete = 0;
    for (const auto& l : loads) complete += layers_of(all, l).size() == 2;
    return complete == 2 && !Find(all, "unmask-executor", "executor.attach").empty();
  });

  MaybeDump(spans);
  const auto own = Find(spans, "unmask-loader", "LoadModel", "model_id", "tiny-llada-copy");
  ASSERT_EQ(own.size(), 1u) << Describe(spans);
  EXPECT_EQ(own[0].parent_span_id, "");
  EXPECT_EQ(own[0].status, 1);
  EXPECT_EQ(own[0].attributes.at("load.layers"), "2");
  for (const auto& sp : spans) {
    if (sp.trace_id == own[0].trace_id) {
      EXPECT_EQ(sp.service, "unmask-loader") << sp.name;
    }
  }
  const auto layers = layers_of(spans, own[0]);
  ASSERT_EQ(layers.size(), 2u) << Describe(spans);
  EXPECT_EQ(layers[0].name, "blocks.0");
  EXPECT_EQ(layers[1].name, "blocks.1");
  EXPECT_LE(layers[0].end, layers[1].start);  // one ends when the next starts
  for (const auto& l : layers) {
    EXPECT_EQ(l.trace_id, own[0].trace_id);
    EXPECT_EQ(l.attributes.at("tensors"), "9");  // tiny-llada: 9 tensors per block
    EXPECT_GE(l.start, own[0].start);
    EXPECT_LE(l.end, own[0].end);
  }
  int phases = 0;
  for (const auto& [name, attrs] : own[0].events) phases += name == "phase";
  EXPECT_GE(phases, 4);  // validating, planning, streaming, publishing, done

  // The executor's attach is one trace across two processes: executor.attach -> client
  // LoadModel -> the loader's LoadModel -> blocks.N.
  const auto attach = Find(spans, "unmask-executor", "executor.attach");
  ASSERT_EQ(attach.size(), 1u) << Describe(spans);
  EXPECT_EQ(attach[0].parent_span_id, "");
  const auto client = Find(spans, "unmask-executor", "unmask.v1.Loader/LoadModel");
  ASSERT_FALSE(client.empty());
  const auto loaded = Find(spans, "unmask-loader", "LoadModel", "model_id", "tiny-llada");
  ASSERT_EQ(loaded.size(), 1u) << Describe(spans);
  EXPECT_EQ(client.back().parent_span_id, attach[0].span_id);
  EXPECT_EQ(loaded[0].parent_span_id, client.back().span_id);
  EXPECT_EQ(loaded[0].trace_id, attach[0].trace_id);
  EXPECT_NE(loaded[0].trace_id, own[0].trace_id);
  EXPECT_EQ(layers_of(spans, loaded[0]).size(), 2u);
}

TEST(ServicesTelemetryTest, ADeadCollectorDoesNotFailRequests) {
  const int dead = UnusedPort();
  Stack stack;
  const std::vector<std::string> tracing = {"--otlp-endpoint", "127.0.0.1:" + std::to_string(dead)};
  stack.StartLoader(tracing);
  stack.StartExecutor(tracing);
  const int s = stack.StartScheduler(tracing);
  // The CLI traces too: to a port nobody listens on, and to one that accepts and never answers
  // (its flush at exit is bounded). Either way the command succeeds and exits promptly.
  SilentListener hanging;
  for (const int port : {dead, hanging.port()}) {
    SCOPED_TRACE("collector port " + std::to_string(port));
    const auto start = std::chrono::steady_clock::now();
    CliResult r = stack.Cli(s, "--otlp-endpoint 127.0.0.1:" + std::to_string(port) +
                                   " generate --model tiny-llada --prompt-ids 1,2,3 --gen-length 8 --block-length 8"
                                   " --steps 8 --json");
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_TRUE(Completed(JsonLines(r.out))) << r.out;
    EXPECT_FALSE(PrintedTraceId(r.out).empty()) << r.out;
    EXPECT_LT(took, std::chrono::seconds(20));
  }
  // The spans were made and lost, and counted as lost: the exporter did try.
  const auto deadline = std::chrono::steady_clock::now() + kSpanDeadline;
  double failed = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    failed = Value(Scrape(stack.scheduler_metrics_port(s)), "unmask_trace_spans_dropped_total",
                   {{"reason", "export_failed"}})
                 .value_or(0);
    if (failed > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_GT(failed, 0);
  EXPECT_TRUE(stack.scheduler(s).running());
  EXPECT_TRUE(stack.executor(0).running());
  EXPECT_TRUE(stack.loader().running());
}

TEST(ServicesTelemetryTest, EveryServiceExposesItsMetricsInTheTextFormat) {
  Stack stack;
  stack.StartLoader();
  stack.StartExecutor();
  const int s = stack.StartScheduler();
  ASSERT_GT(stack.loader_metrics_port(), 0) << stack.loader().output();
  ASSERT_GT(stack.executor_metrics_port(0), 0) << stack.executor(0).output();
  ASSERT_GT(stack.scheduler_metrics_port(s), 0) << stack.scheduler(s).output();

  CliResult r = stack.Cli(s, "generate --model tiny-llada --prompt-ids 1,2,3 --gen-length 16 --block-length 8 --steps 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_TRUE(Completed(JsonLines(r.out))) << r.out;

  struct Want {
    std::string name, type;
  };
  const std::vector<Want> common = {{"unmask_requests_total", "counter"},
                                    {"unmask_request_duration_seconds", "histogram"},
                                    {"unmask_trace_spans_dropped_total", "counter"},
                                    {"unmask_fitting_used_bytes", "gauge"},
                                    {"unmask_fitting_budget_bytes", "gauge"}};
  const std::map<std::string, std::vector<Want>> specific = {
      {"scheduler",
       {{"unmask_queue_depth", "gauge"}, {"unmask_queue_wait_seconds", "histogram"}, {"unmask_clamps_total", "counter"}}},
      {"executor",
       {{"unmask_job_run_seconds", "histogram"},
        {"unmask_step_seconds", "histogram"},
        {"unmask_generated_tokens_total", "counter"},
        {"unmask_tokens_per_second", "gauge"},
        {"unmask_compute_info", "gauge"}}},
      {"loader", {{"unmask_model_load_progress_ratio", "gauge"}, {"unmask_model_load_seconds", "histogram"}}},
  };
  const std::map<std::string, int> ports = {{"scheduler", stack.scheduler_metrics_port(s)},
                                            {"executor", stack.executor_metrics_port(0)},
                                            {"loader", stack.loader_metrics_port()}};
  std::map<std::string, Exposition> scraped;
  for (const auto& [who, port] : ports) {
    auto response = HttpGet(port, "/metrics");
    ASSERT_EQ(response.status, 200) << who;
    EXPECT_THAT(response.headers, HasSubstr("text/plain")) << who;
    Exposition e = ParseExposition(response.body);
    EXPECT_TRUE(e.errors.empty()) << who << ": lines that do not parse:\n" << ::testing::PrintToString(e.errors);
    for (const auto& w : common) ExpectFamily(e, w.name, w.type, who);
    for (const auto& w : specific.at(who)) ExpectFamily(e, w.name, w.type, who);
    // Histograms are complete: buckets up to +Inf, whose count is _count.
    for (const auto& [name, family] : e.families) {
      if (family.type != "histogram" || name.rfind("unmask_", 0) != 0) continue;
      for (const auto& sample : family.samples) {
        if (sample.name != name + "_count") continue;
        auto labels = sample.labels;
        labels["le"] = "+Inf";
        EXPECT_EQ(Value(e, name + "_bucket", labels), sample.value) << who << " " << name;
      }
    }
    scraped[who] = std::move(e);
  }

  // The values show the wiring: one Generate went through.
  const Exposition& sch = scraped["scheduler"];
  EXPECT_EQ(Value(sch, "unmask_requests_total", {{"method", "Generate"}, {"code", "OK"}}), 1.0);
  EXPECT_GE(Value(sch, "unmask_queue_wait_seconds_count").value_or(0), 1.0);
  EXPECT_TRUE(Value(sch, "unmask_queue_depth").has_value());
  EXPECT_EQ(Value(sch, "unmask_trace_spans_dropped_total", {{"reason", "export_failed"}}), 0.0);
  EXPECT_EQ(Value(sch, "unmask_clamps_total", {{"field", "gen_length"}}), 0.0);  // none clamped, present

  const Exposition& ex = scraped["executor"];
  EXPECT_EQ(Value(ex, "unmask_requests_total", {{"method", "Run"}, {"code", "OK"}}), 1.0);
  EXPECT_GE(Value(ex, "unmask_requests_total", {{"method", "GetCapacity"}, {"code", "OK"}}).value_or(0), 1.0);
  EXPECT_EQ(Value(ex, "unmask_job_run_seconds_count"), 1.0);
  EXPECT_EQ(Value(ex, "unmask_step_seconds_count"), 16.0);
  EXPECT_EQ(Value(ex, "unmask_generated_tokens_total"), 16.0);
  EXPECT_GT(Value(ex, "unmask_tokens_per_second").value_or(0), 0.0);
  EXPECT_GT(Value(ex, "unmask_fitting_used_bytes").value_or(0), 0.0);
  EXPECT_GT(Value(ex, "unmask_fitting_budget_bytes").value_or(0), 0.0);
  // What the weights are stored and computed in, the kernel path, and why (the stack asks fp32).
  ASSERT_EQ(ex.families.count("unmask_compute_info"), 1u);
  const auto& info = ex.families.at("unmask_compute_info").samples;
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(info[0].value, 1.0);
  EXPECT_EQ(info[0].labels.at("model"), "tiny-llada");
  EXPECT_EQ(info[0].labels.at("storage"), "bf16");
  EXPECT_EQ(info[0].labels.at("compute"), "fp32");
  EXPECT_EQ(info[0].labels.at("why"), "--precision fp32 was given");
  EXPECT_THAT(std::string("avx512 avx2 blas"), HasSubstr(info[0].labels.at("gemm")));

  const Exposition& lo = scraped["loader"];
  EXPECT_GE(Value(lo, "unmask_requests_total", {{"method", "LoadModel"}, {"code", "OK"}}).value_or(0), 1.0);
  EXPECT_EQ(Value(lo, "unmask_model_load_progress_ratio", {{"model", "tiny-llada"}}), 1.0);
  EXPECT_EQ(Value(lo, "unmask_model_load_seconds_count"), 1.0);
  EXPECT_GT(Value(lo, "unmask_fitting_used_bytes").value_or(0), 0.0);
  EXPECT_GT(Value(lo, "unmask_fitting_budget_bytes").value_or(0), 0.0);
}

}  // namespace
}  // namespace unmask::testing
