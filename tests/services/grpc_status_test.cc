// Error details on the wire: ToGrpcStatus / FromGrpcStatus carry a Status's field, reason and
// metadata as google.rpc.BadRequest / google.rpc.ErrorInfo in the grpc::Status's binary details;
// a real scheduler refuses a bad field over gRPC with a BadRequest naming it, and GetJob of a
// failed job gives its field and reason; the `unmask` CLI prints the field under the error.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <sstream>

#include "common/jobs/memory_job_store.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "services/common/grpc_status.h"
#include "services/common/server_runner.h"
#include "services/scheduler/clamp_adapter.h"
#include "services/scheduler/scheduler_core.h"
#include "services/scheduler/scheduler_grpc.h"
#include "tools/unmask_cli/commands.h"

namespace unmask {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

// The google.rpc.Status in a grpc::Status's binary details (as any googleapis client reads it).
google::rpc::Status WireStatus(const grpc::Status& s) {
  google::rpc::Status wire;
  EXPECT_FALSE(s.error_details().empty());
  EXPECT_TRUE(wire.ParseFromString(s.error_details()));
  return wire;
}

// The field of the BadRequest among `wire`'s details; empty when there is none.
std::string BadRequestField(const google::rpc::Status& wire) {
  for (const auto& any : wire.details()) {
    google::rpc::BadRequest bad;
    if (any.Is<google::rpc::BadRequest>() && any.UnpackTo(&bad) && bad.field_violations_size() == 1)
      return bad.field_violations(0).field();
  }
  return "";
}

TEST(GrpcStatusTest, FieldReasonAndMetadataSurviveTheRoundTrip) {
  const Status original =
      InvalidFieldError("params.steps", "must be >= 1, got 0").WithReason("INVALID_VALUE", {{"min", "1"}, {"got", "0"}});
  const grpc::Status g = services::ToGrpcStatus(original);
  EXPECT_EQ(g.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(g.error_message(), "params.steps: must be >= 1, got 0");

  // On the wire: googleapis' messages, as a client without unmask's code reads them.
  const google::rpc::Status wire = WireStatus(g);
  EXPECT_EQ(wire.code(), 3);
  EXPECT_EQ(wire.message(), g.error_message());
  ASSERT_EQ(wire.details_size(), 2);
  EXPECT_EQ(wire.details(0).type_url(), "type.googleapis.com/google.rpc.BadRequest");
  EXPECT_EQ(wire.details(1).type_url(), "type.googleapis.com/google.rpc.ErrorInfo");
  google::rpc::BadRequest bad;
  ASSERT_TRUE(wire.details(0).UnpackTo(&bad));
  ASSERT_EQ(bad.field_violations_size(), 1);
  EXPECT_EQ(bad.field_violations(0).field(), "params.steps");
  EXPECT_EQ(bad.field_violations(0).description(), g.error_message());
  google::rpc::ErrorInfo info;
  ASSERT_TRUE(wire.details(1).UnpackTo(&info));
  EXPECT_EQ(info.reason(), "INVALID_VALUE");
  EXPECT_EQ(info.domain(), "unmask");
  EXPECT_EQ(info.metadata().at("min"), "1");

  // And back, as the next hop (scheduler from executor, CLI from scheduler) reads it.
  const Status back = services::FromGrpcStatus(g);
  EXPECT_EQ(back.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(back.message(), original.message());
  ASSERT_NE(back.detail(), nullptr);
  EXPECT_EQ(back.field(), "params.steps");
  EXPECT_EQ(back.reason(), "INVALID_VALUE");
  EXPECT_THAT(back.detail()->metadata, ElementsAre(Pair("got", "0"), Pair("min", "1")));
}

TEST(GrpcStatusTest, AReasonAloneTravelsAsAnErrorInfoAlone) {
  const Status full = ResourceExhaustedError("the queue is full").WithReason("QUEUE_FULL", {{"limit", "5"}});
  const grpc::Status g = services::ToGrpcStatus(full);
  const google::rpc::Status wire = WireStatus(g);
  ASSERT_EQ(wire.details_size(), 1);
  EXPECT_TRUE(wire.details(0).Is<google::rpc::ErrorInfo>());
  EXPECT_EQ(BadRequestField(wire), "");
  const Status back = services::FromGrpcStatus(g);
  EXPECT_EQ(back.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(back.field(), "");
  EXPECT_TRUE(scheduler::IsQueueFull(back));
  EXPECT_EQ(back.detail()->metadata.at("limit"), "5");
}

TEST(GrpcStatusTest, AStatusWithoutDetailHasNoneOnTheWireOrBack) {
  const grpc::Status g = services::ToGrpcStatus(NotFoundError("no such job"));
  EXPECT_EQ(g.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(g.error_message(), "no such job");
  EXPECT_TRUE(g.error_details().empty());
  const Status back = services::FromGrpcStatus(g);
  EXPECT_EQ(back.code(), StatusCode::kNotFound);
  EXPECT_EQ(back.message(), "no such job");
  EXPECT_EQ(back.detail(), nullptr);
  EXPECT_TRUE(services::ToGrpcStatus(OkStatus()).ok());
  EXPECT_TRUE(services::FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(GrpcStatusTest, ForeignOrBrokenDetailsAreIgnored) {
  // Another domain's reason is not unmask's; bytes that are no google.rpc.Status are nothing.
  google::rpc::Status wire;
  wire.set_code(8);
  google::rpc::ErrorInfo info;
  info.set_reason("QUEUE_FULL");
  info.set_domain("example.com");
  wire.add_details()->PackFrom(info);
  const Status foreign =
      services::FromGrpcStatus(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "full", wire.SerializeAsString()));
  EXPECT_EQ(foreign.reason(), "");
  EXPECT_FALSE(scheduler::IsQueueFull(foreign));
  const Status broken = services::FromGrpcStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "x", "\xff\xff\xff"));
  EXPECT_EQ(broken.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(broken.detail(), nullptr);
}

// A real scheduler (gRPC on port 0, the in-process job store, tests/data's tiny-llada config).
class SchedulerErrorDetailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scheduler::SchedulerOptions options;
    options.max_queue = 1;
    core_ = std::make_unique<scheduler::SchedulerCore>(
        store_, [] { return std::vector<scheduler::ExecutorSnapshot>{}; }, catalog_,
        scheduler::MakeClamper(fitting::ClampPolicy::kOff, 2), options);
    service_ = std::make_unique<scheduler::SchedulerGrpcService>(*core_);
    runner_.AddService(service_.get());
    ASSERT_TRUE(runner_.Start("127.0.0.1:0").ok());
    runner_.SetServing(true);
    stub_ = v1::Scheduler::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(runner_.port()), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { runner_.Drain(std::chrono::seconds(1)); }

  static v1::GenerateRequest Request() {
    v1::GenerateRequest r;
    r.set_model("tiny-llada");
    for (int id : {11, 12, 13}) r.mutable_ids()->add_ids(id);
    r.mutable_params()->set_gen_length(8);
    r.mutable_params()->set_block_length(8);
    r.mutable_params()->set_steps(8);
    return r;
  }
  grpc::Status Submit(const v1::GenerateRequest& r) {
    grpc::ClientContext ctx;
    v1::SubmitResponse resp;
    return stub_->Submit(&ctx, r, &resp);
  }

  jobs::MemoryJobStore store_;
  scheduler::ModelCatalog catalog_{std::vector<std::string>{std::string(UNMASK_TEST_DATA_DIR)}};
  std::unique_ptr<scheduler::SchedulerCore> core_;
  std::unique_ptr<scheduler::SchedulerGrpcService> service_;
  services::ServerRunner runner_{"Scheduler"};
  std::unique_ptr<v1::Scheduler::Stub> stub_;
};

TEST_F(SchedulerErrorDetailTest, ABadFieldComesBackAsABadRequestNamingIt) {
  v1::GenerateRequest r = Request();
  r.set_priority(11);
  grpc::Status s = Submit(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(BadRequestField(WireStatus(s)), "priority");

  r = Request();
  r.mutable_chat()->add_messages()->set_role("user");
  r.mutable_chat()->add_messages()->set_role("wizard");
  s = Submit(r);
  EXPECT_EQ(BadRequestField(WireStatus(s)), "chat.messages[1].role");

  r = Request();
  r.set_model("");
  EXPECT_EQ(BadRequestField(WireStatus(Submit(r))), "model");

  // Found after the model's config is read: a token id outside its vocabulary.
  r = Request();
  r.mutable_ids()->set_ids(1, 1 << 30);
  s = Submit(r);
  EXPECT_THAT(s.error_message(), HasSubstr("outside the vocabulary"));
  EXPECT_EQ(BadRequestField(WireStatus(s)), "ids[1]");

  // An unknown model is NOT_FOUND naming the field model.
  r = Request();
  r.set_model("no-such-model");
  s = Submit(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(services::FromGrpcStatus(s).field(), "model");
}

TEST_F(SchedulerErrorDetailTest, AFullQueueComesBackWithItsReason) {
  ASSERT_TRUE(Submit(Request()).ok());
  const grpc::Status s = Submit(Request());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  const google::rpc::Status wire = WireStatus(s);
  ASSERT_EQ(wire.details_size(), 1);
  google::rpc::ErrorInfo info;
  ASSERT_TRUE(wire.details(0).UnpackTo(&info));
  EXPECT_EQ(info.reason(), "QUEUE_FULL");
  EXPECT_EQ(info.domain(), "unmask");
  EXPECT_EQ(info.metadata().at("limit"), "1");
}

// A job that failed after acceptance, read back from the job store as any replica (or a
// restarted scheduler) reads it: GetJob and Watch's replay give its code, field, reason and
// metadata, not INTERNAL and the message alone.
TEST_F(SchedulerErrorDetailTest, AFailedJobReadBackFromTheStoreKeepsItsFieldAndReason) {
  grpc::ClientContext submit_ctx;
  v1::SubmitResponse submitted;
  ASSERT_TRUE(stub_->Submit(&submit_ctx, Request(), &submitted).ok());
  auto claimed = store_.Claim("dispatcher", 0);
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  const Status error = InvalidFieldError("params.steps", "must be <= gen_length (8), got 16")
                           .WithReason("INVALID_VALUE", {{"limit", "8"}});
  ASSERT_TRUE(store_.Fail(submitted.job_id(), (*claimed)->handle, error).ok());  // no event in the log

  grpc::ClientContext get_ctx;
  v1::GetJobRequest get;
  get.set_job_id(submitted.job_id());
  v1::JobInfo info;
  ASSERT_TRUE(stub_->GetJob(&get_ctx, get, &info).ok());
  EXPECT_EQ(info.state(), "failed");
  EXPECT_EQ(info.error().code(), static_cast<int>(StatusCode::kInvalidArgument));
  EXPECT_EQ(info.error().message(), error.message());
  EXPECT_EQ(info.error().field(), "params.steps");
  EXPECT_EQ(info.error().reason(), "INVALID_VALUE");
  EXPECT_EQ(info.error().metadata().at("limit"), "8");

  grpc::ClientContext watch_ctx;
  v1::WatchRequest watch;
  watch.set_job_id(submitted.job_id());
  auto reader = stub_->Watch(&watch_ctx, watch);
  v1::JobEvent ev, last;
  while (reader->Read(&ev)) last = ev;
  EXPECT_TRUE(reader->Finish().ok());
  ASSERT_TRUE(last.has_failed());
  EXPECT_EQ(last.failed().code(), static_cast<int>(StatusCode::kInvalidArgument));
  EXPECT_EQ(last.failed().field(), "params.steps");
  EXPECT_EQ(last.failed().reason(), "INVALID_VALUE");
}

TEST(CliReportStatusTest, PrintsTheFieldUnderTheError) {
  std::ostringstream err;
  std::streambuf* saved = std::cerr.rdbuf(err.rdbuf());
  const int with_field =
      cli::ReportStatus("submit", services::ToGrpcStatus(InvalidFieldError("params.steps", "must be >= 1, got 0")));
  const std::string first = err.str();
  err.str("");
  cli::ReportStatus("submit", services::ToGrpcStatus(InvalidArgumentError("steps: must be >= 1, got 0")));
  const std::string second = err.str();
  std::cerr.rdbuf(saved);
  EXPECT_EQ(with_field, 2);
  EXPECT_THAT(first, HasSubstr("params.steps: must be >= 1, got 0\n  field: params.steps\n"));
  EXPECT_THAT(second, Not(HasSubstr("field:")));  // no detail: the message is not parsed for one
}

}  // namespace
}  // namespace unmask
