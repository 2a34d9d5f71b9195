// A client of the scheduler's public API that rides out restarts, as a careful application
// would: a submit is retried with the same idempotency key until an id comes back (the job is
// accepted from then on), and a watch that breaks is started again until the job's terminal
// event arrives. Only UNAVAILABLE and DEADLINE_EXCEEDED are retried; any other error is final.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::testing {

// What one Watch (with its re-watches) saw of a job.
struct WatchOutcome {
  bool ended = false;           // a terminal event arrived before the client gave up
  bool completed = false;       // it was `completed` (else `failed`)
  std::vector<std::int64_t> ids;  // completed: the generated ids
  int failed_code = 0;          // failed: google.rpc.Code and message
  std::string failed_message;
  int rewatches = 0;            // streams that broke and were started again
  std::string last_error;       // the last error of a broken stream or refused call
};

class ChaosClient {
 public:
  // Every retry loop gives up at `give_up` (a point in time shared by the whole run).
  ChaosClient(const std::string& address, std::chrono::steady_clock::time_point give_up);

  // Submits until an id comes back; retries counts the attempts that failed first. A non-empty
  // `error` (and no id) means the request was refused for good or the client gave up.
  struct Submitted {
    std::string job_id;
    int retries = 0;
    std::string error;
  };
  Submitted Submit(const v1::GenerateRequest& request);

  WatchOutcome WatchToEnd(const std::string& job_id);

  // GetJob, retried; `error` is set when it did not answer (NOT_FOUND included).
  struct Looked {
    v1::JobInfo info;
    std::string error;
  };
  Looked GetJob(const std::string& job_id);

 private:
  bool TimeLeft() const { return std::chrono::steady_clock::now() < give_up_; }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Scheduler::Stub> stub_;
  const std::chrono::steady_clock::time_point give_up_;
};

bool IsRetryable(const grpc::Status& s);

}  // namespace unmask::testing
