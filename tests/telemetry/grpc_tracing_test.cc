// Propagation over real gRPC calls between two in-process servers: the client injects, the
// server extracts, and the server's span is the child of the client's.
#include "common/telemetry/grpc_tracing.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <mutex>

#include "common/telemetry/metrics.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/telemetry/memory_exporter.h"

namespace unmask::telemetry {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using testing::MemoryExporter;

// A Health service whose Check handler traces itself with ServerCall and, when it has a
// downstream, calls the downstream's Check on the request's behalf.
class TracedHealth final : public Health::Service {
 public:
  TracedHealth(const Tracer& tracer, ServiceMetrics* metrics) : tracer_(tracer), metrics_(metrics) {}
  void set_downstream(std::shared_ptr<grpc::Channel> channel) { downstream_ = Health::NewStub(channel); }
  void set_fail(grpc::StatusCode code) { fail_ = code; }

  grpc::Status Check(grpc::ServerContext* ctx, const HealthCheckRequest* req, HealthCheckResponse* resp) override {
    ServerCall call(tracer_, metrics_, ctx, "Check", "grpc.health.v1.Health");
    call.span().SetAttribute("service", req->service());
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_traceparent_.push_back(FormatTraceparent(ExtractContext(*ctx)));
    }
    if (fail_ != grpc::StatusCode::OK) return call.Finish(grpc::Status(fail_, "asked to fail"));
    if (downstream_) {
      grpc::ClientContext client_ctx;
      Span client = StartClientSpan(tracer_, &client_ctx, call.context(), "grpc.health.v1.Health/Check");
      HealthCheckResponse down;
      grpc::Status s = downstream_->Check(&client_ctx, *req, &down);
      SetRpcStatus(client, s);
      client.End();
      if (!s.ok()) return call.Finish(s);
    }
    resp->set_status(HealthCheckResponse::SERVING);
    return call.Finish(grpc::Status::OK);
  }
  std::vector<std::string> seen_traceparent() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_traceparent_;
  }

 private:
  const Tracer& tracer_;
  ServiceMetrics* metrics_;
  std::unique_ptr<Health::Stub> downstream_;
  grpc::StatusCode fail_ = grpc::StatusCode::OK;
  std::mutex mu_;
  std::vector<std::string> seen_traceparent_;
};

struct Server {
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
  Server(grpc::Service* service) {
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service);
    server = b.BuildAndStart();
    channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  }
  ~Server() {
    server->Shutdown();
    server->Wait();
  }
};

std::map<std::string, std::unique_ptr<SpanData>> ByServiceAndName(std::vector<std::unique_ptr<SpanData>> spans) {
  std::map<std::string, std::unique_ptr<SpanData>> out;
  for (auto& s : spans) {
    const std::string key = *s->service_name + "/" + s->name;
    EXPECT_EQ(out.count(key), 0u) << "duplicate " << key;
    out[key] = std::move(s);
  }
  return out;
}

TEST(GrpcTracing, ChildSpansAcrossTwoServersHaveTheRightParents) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer client_tracer("client", exporter, 1.0);
  Tracer front_tracer("front", exporter, 1.0);
  Tracer back_tracer("back", exporter, 1.0);
  TracedHealth back_svc(back_tracer, nullptr);
  Server back(&back_svc);
  TracedHealth front_svc(front_tracer, nullptr);
  front_svc.set_downstream(back.channel);
  Server front(&front_svc);

  SpanContext root_ctx, client_ctx;
  {
    Span root = client_tracer.StartSpan("test.root");
    grpc::ClientContext ctx;
    Span client = StartClientSpan(client_tracer, &ctx, root.context(), "grpc.health.v1.Health/Check");
    root_ctx = root.context();
    client_ctx = client.context();
    HealthCheckRequest req;
    req.set_service("x");
    HealthCheckResponse resp;
    auto stub = Health::NewStub(front.channel);
    grpc::Status s = stub->Check(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.status(), HealthCheckResponse::SERVING);
    SetRpcStatus(client, s);
  }
  auto spans = ByServiceAndName(exporter->Take());
  ASSERT_EQ(spans.size(), 5u);
  const auto& front_server = spans.at("front/Check");
  const auto& front_client = spans.at("front/grpc.health.v1.Health/Check");
  const auto& back_server = spans.at("back/Check");
  const auto& client = spans.at("client/grpc.health.v1.Health/Check");
  for (const auto& [key, s] : spans) EXPECT_EQ(s->context.trace_id, root_ctx.trace_id) << key;

  EXPECT_EQ(client->parent_span_id, root_ctx.span_id);
  EXPECT_EQ(client->kind, SpanKind::kClient);
  EXPECT_EQ(front_server->parent_span_id, client_ctx.span_id);
  EXPECT_TRUE(front_server->parent_remote);
  EXPECT_EQ(front_server->kind, SpanKind::kServer);
  EXPECT_EQ(front_client->parent_span_id, front_server->context.span_id);
  EXPECT_FALSE(front_client->parent_remote);
  EXPECT_EQ(back_server->parent_span_id, front_client->context.span_id);
  EXPECT_TRUE(back_server->parent_remote);
  EXPECT_EQ(back_server->status, SpanStatus::kOk);

  // The wire carried exactly the client span's context.
  ASSERT_EQ(front_svc.seen_traceparent().size(), 1u);
  EXPECT_EQ(front_svc.seen_traceparent()[0], FormatTraceparent(client_ctx));
}

TEST(GrpcTracing, NoTraceparentStartsANewRoot) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  TracedHealth svc(tracer, nullptr);
  Server server(&svc);
  grpc::ClientContext ctx;
  HealthCheckResponse resp;
  ASSERT_TRUE(Health::NewStub(server.channel)->Check(&ctx, HealthCheckRequest(), &resp).ok());
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_FALSE(spans[0]->has_parent());
  EXPECT_TRUE(spans[0]->context.valid());
}

TEST(GrpcTracing, MalformedTraceparentStartsANewRootAndTheCallSucceeds) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  TracedHealth svc(tracer, nullptr);
  Server server(&svc);
  grpc::ClientContext ctx;
  ctx.AddMetadata("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01");
  HealthCheckResponse resp;
  ASSERT_TRUE(Health::NewStub(server.channel)->Check(&ctx, HealthCheckRequest(), &resp).ok());
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_FALSE(spans[0]->has_parent());
}

TEST(GrpcTracing, TracestateTravelsWithTheTraceparent) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  TracedHealth svc(tracer, nullptr);
  Server server(&svc);
  auto parent = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7");
  ASSERT_TRUE(parent.ok());
  grpc::ClientContext ctx;
  InjectContext(&ctx, *parent);
  HealthCheckResponse resp;
  ASSERT_TRUE(Health::NewStub(server.channel)->Check(&ctx, HealthCheckRequest(), &resp).ok());
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0]->context.trace_state, "rojo=00f067aa0ba902b7");
  EXPECT_EQ(spans[0]->parent_span_id, parent->span_id);
  EXPECT_EQ(spans[0]->context.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
}

TEST(GrpcTracing, AServiceWithTracingOffStillPassesTheContextOn) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer back_tracer("back", exporter, 1.0);
  TracedHealth back_svc(back_tracer, nullptr);
  Server back(&back_svc);
  TracedHealth middle_svc(Tracer::Disabled(), nullptr);
  middle_svc.set_downstream(back.channel);
  Server middle(&middle_svc);

  auto parent = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(parent.ok());
  grpc::ClientContext ctx;
  InjectContext(&ctx, *parent);
  HealthCheckResponse resp;
  ASSERT_TRUE(Health::NewStub(middle.channel)->Check(&ctx, HealthCheckRequest(), &resp).ok());
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 1u);  // only the back service records
  EXPECT_EQ(spans[0]->context.trace_id, parent->trace_id);
  EXPECT_EQ(spans[0]->parent_span_id, parent->span_id);
}

TEST(GrpcTracing, ServerCallRecordsTheErrorOnTheSpanAndTheRequestMetric) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  ServiceMetrics metrics;
  TracedHealth svc(tracer, &metrics);
  svc.set_fail(grpc::StatusCode::NOT_FOUND);
  Server server(&svc);
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext ctx;
    HealthCheckResponse resp;
    grpc::Status s = Health::NewStub(server.channel)->Check(&ctx, HealthCheckRequest(), &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  }
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]->status, SpanStatus::kError);
  EXPECT_EQ(spans[0]->status_message, "NOT_FOUND: asked to fail");
  bool found_code = false;
  for (const auto& a : spans[0]->attributes) {
    if (a.key == "rpc.grpc.status_code") {
      found_code = true;
      EXPECT_EQ(std::get<std::int64_t>(a.value), 5);
    }
  }
  EXPECT_TRUE(found_code);

  const std::string text = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
  EXPECT_THAT(text, ::testing::HasSubstr("unmask_requests_total{code=\"NOT_FOUND\",method=\"Check\"} 2"));
  EXPECT_THAT(text, ::testing::HasSubstr("unmask_request_duration_seconds_count{method=\"Check\"} 2"));
}

// A Health service whose request field `service` carries a traceparent, standing in for a
// request message with a traceparent field of its own (RunRequest.traceparent).
class FallbackHealth final : public Health::Service {
 public:
  explicit FallbackHealth(const Tracer& tracer) : tracer_(tracer) {}
  grpc::Status Check(grpc::ServerContext* ctx, const HealthCheckRequest* req, HealthCheckResponse* resp) override {
    auto fallback = ParseTraceparent(req->service());
    ServerCall call(tracer_, nullptr, ctx, "Check", {}, fallback.ok() ? *fallback : SpanContext{});
    resp->set_status(HealthCheckResponse::SERVING);
    return call.Finish(grpc::Status::OK);
  }

 private:
  const Tracer& tracer_;
};

TEST(GrpcTracing, TheFallbackParentIsUsedOnlyWithoutATraceparentInTheMetadata) {
  auto exporter = std::make_shared<MemoryExporter>();
  Tracer tracer("svc", exporter, 1.0);
  FallbackHealth svc(tracer);
  Server server(&svc);
  const std::string field = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const std::string header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  HealthCheckRequest req;
  req.set_service(field);
  HealthCheckResponse resp;
  {
    grpc::ClientContext ctx;  // no metadata: the field's context is the parent
    ASSERT_TRUE(Health::NewStub(server.channel)->Check(&ctx, req, &resp).ok());
  }
  {
    grpc::ClientContext ctx;  // metadata wins over the field
    ctx.AddMetadata("traceparent", header);
    ASSERT_TRUE(Health::NewStub(server.channel)->Check(&ctx, req, &resp).ok());
  }
  auto spans = exporter->Take();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]->context.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(ToHex(spans[0]->parent_span_id.data(), 8), "00f067aa0ba902b7");
  EXPECT_EQ(spans[1]->context.trace_id_hex(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(ToHex(spans[1]->parent_span_id.data(), 8), "b7ad6b7169203331");
}

TEST(GrpcTracing, InjectDoesNothingForAnInvalidContext) {
  grpc::ClientContext ctx;
  InjectContext(&ctx, SpanContext{});
  InjectContext(nullptr, SpanContext{});
  // Nothing observable to assert on the client side but "no crash"; the server side of this is
  // NoTraceparentStartsANewRoot. GrpcCodeName covers the names the metric uses:
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(GrpcCodeName(static_cast<grpc::StatusCode>(99)), "UNKNOWN");
}

}  // namespace
}  // namespace unmask::telemetry
