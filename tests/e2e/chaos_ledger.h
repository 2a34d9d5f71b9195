// The chaos test's books: what each client saw of its job, what the system says at the end,
// and the tally of both (lost, ended twice, duplicated executor runs, ...).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/e2e/chaos_client.h"
#include "tests/e2e/process.h"

namespace unmask::testing {

// One job as its client saw it.
struct JobRun {
  std::string idempotency_key;
  std::int64_t gen_length = 0;
  ChaosClient::Submitted submitted;  // accepted once submitted.job_id is set
  WatchOutcome watched;
};

// One accepted job as the system tells it once the chaos is over.
struct FinalView {
  ChaosClient::Looked looked;    // GetJob through the scheduler
  int terminal_events = 0;       // completed + failed events in the job's event log
  int started_events = 0;        // dispatches to an executor
  int executor_runs = 0;         // "job done" lines of the executors for this job
};

struct ChaosTally {
  int jobs = 0, accepted = 0, refused = 0;
  int completed = 0, failed = 0;  // final state succeeded / a terminal failure with a reason
  int lost = 0;                   // accepted, but unknown or not finished at the end
  int failed_without_reason = 0;
  int ended_twice = 0;            // more than one terminal event in its log
  int watch_disagrees = 0;        // the client's watch saw another ending than the final state
  int wrong_result = 0;           // succeeded without gen_length ids
  int duplicated_runs = 0;        // executor runs beyond the first, summed over jobs
  int jobs_run_twice = 0;         // jobs with more than one executor run
  int redispatches = 0;           // started events beyond the first, summed over jobs
  int submit_retries = 0, rewatches = 0;
  std::vector<std::string> problems;  // the first few, for the failure message
};

// "job done" lines per job id in the output of every process given (only executors write them).
std::map<std::string, int> ExecutorRunsByJob(const std::vector<const Process*>& processes);

ChaosTally Tally(const std::vector<JobRun>& runs, const std::map<std::string, FinalView>& finals);

// One line per figure, for the log and docs/reliability.md.
std::string Summary(const ChaosTally& t);

}  // namespace unmask::testing
