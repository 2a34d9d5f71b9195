// The metrics endpoint as Prometheus sees it: an HTTP GET on a port picked by the OS, the
// exposition text parsed line by line.
#include "common/telemetry/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include "common/telemetry/options.h"
#include "common/telemetry/otlp_exporter.h"
#include "common/telemetry/telemetry.h"
#include "common/telemetry/tracer.h"
#include "tests/telemetry/test_collector.h"

namespace unmask::telemetry {
namespace {

using testing::HttpGet;
using testing::UnusedPort;
using ::testing::HasSubstr;

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> help;  // family -> help text
  std::map<std::string, std::string> type;  // family -> counter|gauge|histogram|...
  std::vector<Sample> samples;
  std::vector<std::string> bad_lines;

  const Sample* Find(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        if (it == s.labels.end() || it->second != v) match = false;
      }
      if (match) return &s;
    }
    return nullptr;
  }
};

// Parses the Prometheus text format (version 0.0.4): "# HELP name text", "# TYPE name type",
// and sample lines "name{label="value",...} value [timestamp]".
Exposition Parse(const std::string& text) {
  static const std::regex kHelp(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$)");
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? ([-+]?(?:[0-9.eE+-]+|Inf|[Nn]a[Nn]))( [0-9]+)?$)");
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  Exposition out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::smatch m;
    if (std::regex_match(line, m, kHelp)) {
      out.help[m[1]] = m[2];
    } else if (std::regex_match(line, m, kType)) {
      out.type[m[1]] = m[2];
    } else if (std::regex_match(line, m, kSample)) {
      Sample s;
      s.name = m[1];
      const std::string labels = m[3];
      for (auto it = std::sregex_iterator(labels.begin(), labels.end(), kLabel); it != std::sregex_iterator(); ++it) {
        s.labels[(*it)[1]] = (*it)[2];
      }
      const std::string v = m[4];
      s.value = v == "+Inf" || v == "Inf" ? INFINITY : (v == "NaN" || v == "Nan") ? NAN : std::stod(v);
      out.samples.push_back(std::move(s));
    } else if (line[0] != '#') {
      out.bad_lines.push_back(line);
    }
  }
  return out;
}

TEST(Metrics, ExposerOnPortZeroServesEveryFamilyWithItsType) {
  ServiceMetrics metrics;
  metrics.RecordRpc("Generate", grpc::StatusCode::OK, 0.25);
  metrics.RecordRpc("Generate", grpc::StatusCode::OK, 0.5);
  metrics.RecordRpc("Generate", grpc::StatusCode::RESOURCE_EXHAUSTED, 0.001);
  metrics.SetQueueDepth(3);
  metrics.ObserveQueueWait(0.2);
  metrics.ObserveJobRun(4.0);
  metrics.ObserveStep(0.02);
  metrics.ObserveStep(0.03);
  metrics.AddGeneratedTokens(128);
  metrics.SetTokensPerSecond(42.5);
  metrics.SetMemoryUsed(1024.0 * 1024 * 1024);
  metrics.SetMemoryBudget(8.0 * 1024 * 1024 * 1024);
  metrics.AddClamp("steps");
  metrics.AddClamp("steps");
  metrics.AddClamp("gen_length");
  metrics.SetModelLoadProgress("llada-8b", 0.75);
  metrics.ObserveModelLoad(12.0);

  // A dead collector and a tiny queue, so that spans are dropped and the counter moves.
  OtlpExporterOptions eo;
  eo.endpoint = "127.0.0.1:" + std::to_string(UnusedPort());
  eo.max_queue_spans = 2;
  eo.max_batch_spans = 100;
  eo.flush_interval = std::chrono::hours(1);
  auto exporter = std::make_shared<OtlpExporter>(eo);
  Tracer tracer("svc", exporter, 1.0);
  for (int i = 0; i < 5; ++i) tracer.StartSpan("s").End();
  ASSERT_EQ(exporter->dropped(), 3u);
  metrics.WatchExporter(exporter);

  auto exposer = MetricsExposer::Start("127.0.0.1:0");
  ASSERT_TRUE(exposer.ok()) << exposer.status().ToString();
  ASSERT_GT((*exposer)->port(), 0);
  (*exposer)->Register(metrics);

  const auto resp = HttpGet((*exposer)->port(), "/metrics");
  ASSERT_EQ(resp.status, 200) << resp.headers;
  EXPECT_THAT(resp.headers, HasSubstr("text/plain"));
  const Exposition e = Parse(resp.body);
  EXPECT_TRUE(e.bad_lines.empty()) << "unparsable: " << e.bad_lines.front();

  const std::map<std::string, std::string> want = {
      {"unmask_requests_total", "counter"},
      {"unmask_request_duration_seconds", "histogram"},
      {"unmask_queue_depth", "gauge"},
      {"unmask_queue_wait_seconds", "histogram"},
      {"unmask_job_run_seconds", "histogram"},
      {"unmask_step_seconds", "histogram"},
      {"unmask_generated_tokens_total", "counter"},
      {"unmask_tokens_per_second", "gauge"},
      {"unmask_fitting_used_bytes", "gauge"},
      {"unmask_fitting_budget_bytes", "gauge"},
      {"unmask_clamps_total", "counter"},
      {"unmask_model_load_progress_ratio", "gauge"},
      {"unmask_model_load_seconds", "histogram"},
      {"unmask_trace_spans_dropped_total", "counter"},
      {"unmask_trace_spans_exported_total", "counter"},
      {"unmask_trace_export_queue_spans", "gauge"},
  };
  for (const auto& [name, type] : want) {
    ASSERT_EQ(e.type.count(name), 1u) << "no # TYPE line for " << name;
    EXPECT_EQ(e.type.at(name), type) << name;
    EXPECT_EQ(e.help.count(name), 1u) << "no # HELP line for " << name;
  }

  const Sample* ok = e.Find("unmask_requests_total", {{"method", "Generate"}, {"code", "OK"}});
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->value, 2);
  const Sample* exhausted = e.Find("unmask_requests_total", {{"method", "Generate"}, {"code", "RESOURCE_EXHAUSTED"}});
  ASSERT_NE(exhausted, nullptr);
  EXPECT_EQ(exhausted->value, 1);
  ASSERT_NE(e.Find("unmask_request_duration_seconds_count", {{"method", "Generate"}}), nullptr);
  EXPECT_EQ(e.Find("unmask_request_duration_seconds_count", {{"method", "Generate"}})->value, 3);

  EXPECT_EQ(e.Find("unmask_queue_depth")->value, 3);
  EXPECT_EQ(e.Find("unmask_step_seconds_count")->value, 2);
  EXPECT_NEAR(e.Find("unmask_step_seconds_sum")->value, 0.05, 1e-12);
  const Sample* inf = e.Find("unmask_step_seconds_bucket", {{"le", "+Inf"}});
  ASSERT_NE(inf, nullptr);
  EXPECT_EQ(inf->value, 2);
  const Sample* le_25ms = e.Find("unmask_step_seconds_bucket", {{"le", "0.025"}});
  ASSERT_NE(le_25ms, nullptr);
  EXPECT_EQ(le_25ms->value, 1);
  EXPECT_EQ(e.Find("unmask_queue_wait_seconds_count")->value, 1);
  EXPECT_EQ(e.Find("unmask_job_run_seconds_sum")->value, 4);
  EXPECT_EQ(e.Find("unmask_generated_tokens_total")->value, 128);
  EXPECT_EQ(e.Find("unmask_tokens_per_second")->value, 42.5);
  EXPECT_EQ(e.Find("unmask_fitting_used_bytes")->value, 1073741824.0);
  EXPECT_EQ(e.Find("unmask_fitting_budget_bytes")->value, 8589934592.0);
  EXPECT_EQ(e.Find("unmask_clamps_total", {{"field", "steps"}})->value, 2);
  EXPECT_EQ(e.Find("unmask_clamps_total", {{"field", "gen_length"}})->value, 1);
  EXPECT_EQ(e.Find("unmask_model_load_progress_ratio", {{"model", "llada-8b"}})->value, 0.75);
  EXPECT_EQ(e.Find("unmask_model_load_seconds_count")->value, 1);
  EXPECT_EQ(e.Find("unmask_trace_spans_dropped_total", {{"reason", "queue_full"}})->value, 3);
  ASSERT_NE(e.Find("unmask_trace_spans_dropped_total", {{"reason", "export_failed"}}), nullptr);
  EXPECT_EQ(e.Find("unmask_trace_spans_exported_total")->value, 0);
  EXPECT_EQ(e.Find("unmask_trace_export_queue_spans")->value, 2);  // the two that fit, never sent

  // Every sample belongs to a family with a TYPE line (histograms through their suffixes).
  for (const auto& s : e.samples) {
    std::string family = s.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string suf = suffix;
      if (e.type.count(family) == 0 && family.size() > suf.size() &&
          family.compare(family.size() - suf.size(), suf.size(), suf) == 0) {
        family = family.substr(0, family.size() - suf.size());
      }
    }
    EXPECT_EQ(e.type.count(family), 1u) << s.name;
  }
}

TEST(Metrics, ComputeInfoShowsOnlyTheCurrentChoice) {
  ServiceMetrics metrics;
  metrics.SetComputeInfo("kjv", "bf16", "bf16", "avx512", "--precision bf16 was given");
  metrics.SetComputeInfo("kjv", "int8", "fp32", "avx2", "CPU without bf16 instructions");
  auto exposer = MetricsExposer::Start("127.0.0.1:0");
  ASSERT_TRUE(exposer.ok()) << exposer.status().ToString();
  (*exposer)->Register(metrics);
  const Exposition e = Parse(HttpGet((*exposer)->port(), "/metrics").body);
  EXPECT_EQ(e.type.at("unmask_compute_info"), "gauge");
  int samples = 0;
  for (const auto& s : e.samples) samples += s.name == "unmask_compute_info";
  EXPECT_EQ(samples, 1);  // the earlier choice is gone
  const Sample* now = e.Find("unmask_compute_info", {{"model", "kjv"}, {"storage", "int8"}, {"compute", "fp32"},
                                                     {"gemm", "avx2"}, {"why", "CPU without bf16 instructions"}});
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->value, 1.0);
}

TEST(Metrics, ExposerReportsAPortInUse) {
  auto first = MetricsExposer::Start("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = MetricsExposer::Start("127.0.0.1:" + std::to_string((*first)->port()));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen"));
}

TEST(Metrics, ExposerServesNothingElse) {
  auto exposer = MetricsExposer::Start("127.0.0.1:0");
  ASSERT_TRUE(exposer.ok());
  EXPECT_EQ(HttpGet((*exposer)->port(), "/nope").status, 404);
}

TEST(Telemetry, StartWithMetricsOnlyLeavesTracingOff) {
  TelemetryOptions o;
  o.service_name = "unmask-test";
  o.metrics_listen = "127.0.0.1:0";
  auto t = Telemetry::Start(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE((*t)->tracer().enabled());
  EXPECT_EQ((*t)->exporter(), nullptr);
  ASSERT_GT((*t)->metrics_port(), 0);
  (*t)->metrics().SetQueueDepth(7);
  const auto resp = HttpGet((*t)->metrics_port(), "/metrics");
  ASSERT_EQ(resp.status, 200);
  EXPECT_THAT(resp.body, HasSubstr("unmask_queue_depth 7"));
  EXPECT_THAT(resp.body, HasSubstr("unmask_trace_spans_dropped_total{reason=\"queue_full\"} 0"));
}

TEST(Telemetry, StartWithAnEndpointTraces) {
  testing::TestCollector collector;
  TelemetryOptions o;
  o.service_name = "unmask-test";
  o.otlp_endpoint = "http://" + collector.endpoint() + "/";
  auto t = Telemetry::Start(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE((*t)->tracer().enabled());
  EXPECT_EQ((*t)->metrics_port(), 0);
  (*t)->tracer().StartSpan("hello").End();
  (*t)->Shutdown();
  ASSERT_EQ(collector.span_count(), 1u);
  EXPECT_EQ(collector.spans()[0].service, "unmask-test");
}

TEST(Telemetry, BadOptionsNameTheFlag) {
  TelemetryOptions o;
  o.trace_sample_ratio = 1.5;
  EXPECT_THAT(ValidateTelemetryOptions(o).message(), HasSubstr("--trace-sample-ratio"));
  o = TelemetryOptions();
  o.otlp_endpoint = "jaeger";
  EXPECT_THAT(ValidateTelemetryOptions(o).message(), HasSubstr("--otlp-endpoint"));
  o.otlp_endpoint = "https://jaeger:4317";
  EXPECT_THAT(ValidateTelemetryOptions(o).message(), HasSubstr("TLS"));
  o = TelemetryOptions();
  o.service_name = "";
  EXPECT_THAT(ValidateTelemetryOptions(o).message(), HasSubstr("--service-name"));
  EXPECT_EQ(NormalizeOtlpEndpoint("http://jaeger:4317/"), "jaeger:4317");
  EXPECT_EQ(NormalizeOtlpEndpoint("jaeger:4317"), "jaeger:4317");
  EXPECT_FALSE(Telemetry::Start(o).ok());
}

TEST(Telemetry, CliFlagsFillTheOptions) {
  CLI::App app("test");
  TelemetryOptions o;
  o.service_name = "unmask-loader";
  AddTelemetryOptions(app, &o);
  const char* argv[] = {"prog", "--otlp-endpoint", "jaeger:4317", "--trace-sample-ratio", "0.25",
                        "--metrics-listen", "0.0.0.0:9091"};
  app.parse(7, const_cast<char**>(argv));
  EXPECT_EQ(o.otlp_endpoint, "jaeger:4317");
  EXPECT_EQ(o.trace_sample_ratio, 0.25);
  EXPECT_EQ(o.metrics_listen, "0.0.0.0:9091");
  EXPECT_EQ(o.service_name, "unmask-loader");  // the default the service set survives

  CLI::App strict("test");
  TelemetryOptions o2;
  AddTelemetryOptions(strict, &o2);
  const char* bad[] = {"prog", "--trace-sample-ratio", "1.5"};
  EXPECT_THROW(strict.parse(3, const_cast<char**>(bad)), CLI::ValidationError);
}

}  // namespace
}  // namespace unmask::telemetry
