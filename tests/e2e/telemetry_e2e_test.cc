// End-to-end telemetry: the real binaries export spans to an OTLP collector stood up in the test
// (tests/telemetry/test_collector), and serve Prometheus metrics scraped over plain HTTP.
//
//   - one Generate is one trace: the scheduler's Generate span is its root (the CLI does not
//     trace), the dispatcher's spans are children of the context stored with the job, the
//     executor's Run span is the child of the dispatcher's client span, and the executor's job
//     span (with an event per step) is the child of Run;
//   - a LoadModel is a trace of its own with a span per layer (blocks.N);
//   - a collector that is not there costs the requests nothing;
//   - every service's /metrics parses as the text exposition format and has its unmask_* families.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

#include "tests/e2e/stack.h"
#include "tests/telemetry/test_collector.h"

namespace unmask::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using nlohmann::json;
using telemetry::testing::HttpGet;
using telemetry::testing::ReceivedSpan;
using telemetry::testing::TestCollector;
using telemetry::testing::UnusedPort;
using OtlpSpan = opentelemetry::proto::trace::v1::Span;

constexpr auto kSpanDeadline = std::chrono::seconds(30);

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// A received span in the form the assertions read.
struct SpanView {
  std::string service, name, trace_id, span_id, parent_span_id;  // ids in hex; parent "" for a root
  int kind = 0;
  int status = 0;
  std::uint64_t start = 0, end = 0;
  std::map<std::string, std::string> attributes;  // every value as text
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> events;
};

std::string AnyText(const opentelemetry::proto::common::v1::AnyValue& v) {
  switch (v.value_case()) {
    case opentelemetry::proto::common::v1::AnyValue::kStringValue: return v.string_value();
    case opentelemetry::proto::common::v1::AnyValue::kIntValue: return std::to_string(v.int_value());
    case opentelemetry::proto::common::v1::AnyValue::kBoolValue: return v.bool_value() ? "true" : "false";
    case opentelemetry::proto::common::v1::AnyValue::kDoubleValue: return std::to_string(v.double_value());
    default: return "?";
  }
}

SpanView View(const ReceivedSpan& r) {
  const OtlpSpan& s = r.span;
  SpanView v;
  v.service = r.service;
  v.name = s.name();
  v.trace_id = Hex(s.trace_id());
  v.span_id = Hex(s.span_id());
  v.parent_span_id = Hex(s.parent_span_id());
  v.kind = s.kind();
  v.status = s.status().code();
  v.start = s.start_time_unix_nano();
  v.end = s.end_time_unix_nano();
  for (const auto& kv : s.attributes()) v.attributes[kv.key()] = AnyText(kv.value());
  for (const auto& e : s.events()) {
    std::map<std::string, std::string> attrs;
    for (const auto& kv : e.attributes()) attrs[kv.key()] = AnyText(kv.value());
    v.events.emplace_back(e.name(), std::move(attrs));
  }
  return v;
}

std::vector<SpanView> Views(const TestCollector& c) {
  std::vector<SpanView> out;
  for (const auto& r : c.spans()) out.push_back(View(r));
  return out;
}

// The spans of `service` named `name` (and, when given, with attribute key=value).
std::vector<SpanView> Find(const std::vector<SpanView>& spans, const std::string& service, const std::string& name,
                           const std::string& key = "", const std::string& value = "") {
  std::vector<SpanView> out;
  for (const auto& s : spans) {
    if (s.service != service || s.name != name) continue;
    if (!key.empty()) {
      auto it = s.attributes.find(key);
      if (it == s.attributes.end() || it->second != value) continue;
    }
    out.push_back(s);
  }
  return out;
}

// Waits (polling the collector, which wakes on every export) until `ready` holds or the
// deadline passes; returns the spans seen last.
std::vector<SpanView> WaitForSpans(TestCollector& c, const std::function<bool(const std::vector<SpanView>&)>& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpanDeadline;
  while (true) {
    const std::size_t seen = c.span_count();
    auto spans = Views(c);
    if (ready(spans) || std::chrono::steady_clock::now() >= deadline) return spans;
    c.WaitForSpans(seen + 1, std::chrono::milliseconds(250));
  }
}

std::string Describe(const std::vector<SpanView>& spans) {
  std::ostringstream out;
  for (const auto& s : spans) {
    out << s.service << " " << s.name << " trace=" << s.trace_id << " span=" << s.span_id << " parent=" << s.parent_span_id;
    if (std::getenv("UNMASK_TEST_DUMP_SPANS") != nullptr) {
      for (const auto& [k, v] : s.attributes) out << " " << k << "=" << v;
      out << " events=" << s.events.size();
    }
    out << "\n";
  }
  return out.str();
}

// UNMASK_TEST_DUMP_SPANS=1: print every span received (to see what a trace looks like).
void MaybeDump(const std::vector<SpanView>& spans) {
  if (std::getenv("UNMASK_TEST_DUMP_SPANS") != nullptr) std::cerr << Describe(spans);
}

std::vector<json> JsonLines(const std::string& out) {
  std::vector<json> lines;
  std::stringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) lines.push_back(j);
  }
  return lines;
}

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

// ---- tests --------------------------------------------------------------------------------

TEST(ServicesTelemetryTest, OneGenerateIsOneTraceFromTheSchedulerThroughTheExecutor) {
  TestCollector collector;
  Stack stack;
  const std::vector<std::string> tracing = {"--otlp-endpoint", collector.endpoint()};
  stack.StartLoader(tracing);
  stack.StartExecutor(tracing);
  const int s = stack.StartScheduler(tracing);

  CliResult r = stack.Cli(s, "generate --model tiny-llada --prompt-ids 1,2,3 --gen-length 16 --block-length 8 --steps 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto events = JsonLines(r.out);
  ASSERT_TRUE(Completed(events)) << r.out;
  const std::string job = JobIdOf(events);
  ASSERT_FALSE(job.empty()) << r.out;

  auto spans = WaitForSpans(collector, [&](const std::vector<SpanView>& all) {
    return !Find(all, "unmask-scheduler", "Generate", "job.id", job).empty() &&
           !Find(all, "unmask-scheduler", "scheduler.queue", "job.id", job).empty() &&
           !Find(all, "unmask-scheduler", "unmask.v1.Executor/Run", "job.id", job).empty() &&
           !Find(all, "unmask-executor", "Run", "job.id", job).empty() &&
           !Find(all, "unmask-executor", "executor.job", "job.id", job).empty();
  });
  MaybeDump(spans);
  const auto generate = Find(spans, "unmask-scheduler", "Generate", "job.id", job);
  const auto queue = Find(spans, "unmask-scheduler", "scheduler.queue", "job.id", job);
  const auto client = Find(spans, "unmask-scheduler", "unmask.v1.Executor/Run", "job.id", job);
  const auto run = Find(spans, "unmask-executor", "Run", "job.id", job);
  const auto job_span = Find(spans, "unmask-executor", "executor.job", "job.id", job);
  ASSERT_EQ(generate.size(), 1u) << Describe(spans);
  ASSERT_EQ(queue.size(), 1u) << Describe(spans);
  ASSERT_EQ(client.size(), 1u) << Describe(spans);
  ASSERT_EQ(run.size(), 1u) << Describe(spans);
  ASSERT_EQ(job_span.size(), 1u) << Describe(spans);

  // One trace; the CLI does not trace, so the scheduler's Generate span is its root.
  const SpanView& g = generate[0];
  const std::string trace = g.trace_id;
  EXPECT_EQ(g.parent_span_id, "") << "the CLI sends no traceparent";
  EXPECT_EQ(g.kind, 2);    // SERVER
  EXPECT_EQ(g.status, 1);  // OK
  std::set<std::string> services;
  for (const auto& sp : spans) {
    if (sp.trace_id == trace) services.insert(sp.service);
  }
  EXPECT_EQ(services, (std::set<std::string>{"unmask-scheduler", "unmask-executor"})) << Describe(spans);
  for (const auto* v : {&queue[0], &client[0], &run[0], &job_span[0]}) EXPECT_EQ(v->trace_id, trace) << v->name;

  // Parent links: the dispatcher's spans are children of the context stored with the job (the
  // Generate span's), the executor's Run span is the child of the dispatcher's client span, the
  // job's span is the child of Run.
  EXPECT_EQ(queue[0].parent_span_id, g.span_id);
  EXPECT_EQ(client[0].parent_span_id, g.span_id);
  EXPECT_EQ(client[0].kind, 3);  // CLIENT
  EXPECT_EQ(run[0].parent_span_id, client[0].span_id);
  EXPECT_EQ(run[0].kind, 2);
  EXPECT_EQ(job_span[0].parent_span_id, run[0].span_id);

  // The queue span covers creation to claim (backdated into the Generate span); the job's spans
  // continue after it.
  // (the stored creation time has millisecond resolution)
  EXPECT_GE(queue[0].start + 1'000'000ull, g.start);
  EXPECT_LE(queue[0].start, queue[0].end);
  EXPECT_LE(queue[0].end, client[0].start);
  EXPECT_LE(client[0].start, run[0].start + 50'000'000ull);  // clocks of one host; 50 ms slack
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
  EXPECT_EQ(j.status, 1);

  // One event per diffusion step on the job's span; together they unmask every position.
  int steps = 0, unmasked = 0;
  std::set<std::string> blocks;
  for (const auto& [name, attrs] : j.events) {
    if (name != "step") continue;
    ++steps;
    unmasked += std::stoi(attrs.at("unmasked"));
    blocks.insert(attrs.at("block"));
    EXPECT_EQ(attrs.count("step"), 1u);
  }
  EXPECT_EQ(steps, 16);
  EXPECT_EQ(unmasked, 16);
  EXPECT_EQ(blocks, (std::set<std::string>{"0", "1"}));

  // Log lines carry the trace id and the job id.
  EXPECT_THAT(stack.scheduler(s).output(), HasSubstr("trace_id=" + trace + " job_id=" + job));
  EXPECT_THAT(stack.executor(0).output(), HasSubstr("trace_id=" + trace + " job_id=" + job + " msg=\"job done\""));
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
  for (int i = 0; i < 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    CliResult r = stack.Cli(s, "generate --model tiny-llada --prompt-ids 1,2,3 --gen-length 8 --block-length 8 --steps 8 --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_TRUE(Completed(JsonLines(r.out))) << r.out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
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
                                    {"unmask_memory_used_bytes", "gauge"},
                                    {"unmask_memory_budget_bytes", "gauge"}};
  const std::map<std::string, std::vector<Want>> specific = {
      {"scheduler",
       {{"unmask_queue_depth", "gauge"}, {"unmask_queue_wait_seconds", "histogram"}, {"unmask_clamps_total", "counter"}}},
      {"executor",
       {{"unmask_job_run_seconds", "histogram"},
        {"unmask_step_seconds", "histogram"},
        {"unmask_generated_tokens_total", "counter"},
        {"unmask_tokens_per_second", "gauge"}}},
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
  EXPECT_GT(Value(ex, "unmask_memory_used_bytes").value_or(0), 0.0);
  EXPECT_GT(Value(ex, "unmask_memory_budget_bytes").value_or(0), 0.0);

  const Exposition& lo = scraped["loader"];
  EXPECT_GE(Value(lo, "unmask_requests_total", {{"method", "LoadModel"}, {"code", "OK"}}).value_or(0), 1.0);
  EXPECT_EQ(Value(lo, "unmask_model_load_progress_ratio", {{"model", "tiny-llada"}}), 1.0);
  EXPECT_EQ(Value(lo, "unmask_model_load_seconds_count"), 1.0);
  EXPECT_GT(Value(lo, "unmask_memory_used_bytes").value_or(0), 0.0);
  EXPECT_GT(Value(lo, "unmask_memory_budget_bytes").value_or(0), 0.0);
}

}  // namespace
}  // namespace unmask::testing
