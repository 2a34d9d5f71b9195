#include "tests/e2e/chaos_ledger.h"

#include <sstream>

namespace unmask::testing {
namespace {

constexpr std::size_t kMaxProblems = 20;

void Note(ChaosTally& t, const std::string& line) {
  if (t.problems.size() < kMaxProblems) t.problems.push_back(line);
}

bool IsFailureState(const std::string& state) {
  return state == "failed" || state == "dead" || state == "expired" || state == "cancelled";
}

}  // namespace

std::map<std::string, int> ExecutorRunsByJob(const std::vector<const Process*>& processes) {
  std::map<std::string, int> runs;
  for (const Process* p : processes) {
    std::istringstream in(p->output());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("msg=\"job done\"") == std::string::npos) continue;
      const auto at = line.find(" job_id=");
      if (at == std::string::npos) continue;
      const auto begin = at + 8;
      ++runs[line.substr(begin, line.find(' ', begin) - begin)];
    }
  }
  return runs;
}

ChaosTally Tally(const std::vector<JobRun>& runs, const std::map<std::string, FinalView>& finals) {
  ChaosTally t;
  t.jobs = static_cast<int>(runs.size());
  for (const JobRun& run : runs) {
    t.submit_retries += run.submitted.retries;
    const std::string& id = run.submitted.job_id;
    if (id.empty()) {
      ++t.refused;
      Note(t, run.idempotency_key + ": not accepted: " + run.submitted.error);
      continue;
    }
    ++t.accepted;
    t.rewatches += run.watched.rewatches;
    const auto found = finals.find(id);
    if (found == finals.end() || !found->second.looked.error.empty()) {
      ++t.lost;
      Note(t, id + ": lost: " + (found == finals.end() ? "never looked up" : found->second.looked.error));
      continue;
    }
    const FinalView& f = found->second;
    const v1::JobInfo& info = f.looked.info;
    t.redispatches += std::max(0, f.started_events - 1);
    t.duplicated_runs += std::max(0, f.executor_runs - 1);
    t.jobs_run_twice += f.executor_runs > 1;
    if (f.terminal_events > 1) {
      ++t.ended_twice;
      Note(t, id + ": " + std::to_string(f.terminal_events) + " terminal events in its log");
    }
    if (info.state() == "succeeded") {
      ++t.completed;
      if (info.result().ids_size() != run.gen_length) {
        ++t.wrong_result;
        Note(t, id + ": succeeded with " + std::to_string(info.result().ids_size()) + " ids");
      }
      const bool same = run.watched.completed &&
                        std::equal(run.watched.ids.begin(), run.watched.ids.end(), info.result().ids().begin(),
                                   info.result().ids().end());
      if (!same) {
        ++t.watch_disagrees;
        Note(t, id + ": succeeded, but its watch saw " +
                    (run.watched.ended ? (run.watched.completed ? "other ids" : "failed: " + run.watched.failed_message)
                                       : "no end: " + run.watched.last_error));
      }
    } else if (IsFailureState(info.state())) {
      ++t.failed;
      if (info.error().message().empty()) {
        ++t.failed_without_reason;
        Note(t, id + ": " + info.state() + " without a reason");
      }
      if (!run.watched.ended || run.watched.completed) {
        ++t.watch_disagrees;
        Note(t, id + ": " + info.state() + " (" + info.error().message() + "), but its watch saw " +
                    (run.watched.ended ? "completed" : "no end: " + run.watched.last_error));
      }
    } else {
      ++t.lost;
      Note(t, id + ": still " + info.state() + " at the end (attempts " + std::to_string(info.attempts()) + ")");
    }
  }
  return t;
}

std::string Summary(const ChaosTally& t) {
  std::ostringstream s;
  s << "jobs " << t.jobs << ", accepted " << t.accepted << ", refused " << t.refused << "\n"
    << "completed " << t.completed << ", failed with a reason " << t.failed - t.failed_without_reason
    << ", failed without one " << t.failed_without_reason << "\n"
    << "lost " << t.lost << ", ended twice " << t.ended_twice << ", watch disagrees " << t.watch_disagrees
    << ", wrong result " << t.wrong_result << "\n"
    << "duplicated executor runs " << t.duplicated_runs << " (jobs run more than once " << t.jobs_run_twice
    << "), re-dispatches " << t.redispatches << "\n"
    << "submit retries " << t.submit_retries << ", watch retries " << t.rewatches << " (streams broken or refused, started again)\n";
  return s.str();
}

}  // namespace unmask::testing
