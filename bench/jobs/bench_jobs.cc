// bench_jobs: how many jobs per second the job store accepts (Submit) and hands out
// (Claim + Complete), for the in-process store and for Redis on loopback, with one client
// thread and with four.
//
//   bench_jobs [--n 20000] [--payload 512] [--doc docs/benchmarks.md]
//
// Redis runs as a child redis-server on a free loopback port, twice: without persistence and
// with AOF (appendfsync everysec, Redis's default and what the Helm chart uses). Each row
// starts from an empty store. The client threads share one store object, i.e. one scheduler
// replica with a connection pool; a Redis submit is one EVALSHA round trip.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/bench_report.h"
#include "common/jobs/memory_job_store.h"
#include "common/jobs/redis_job_store.h"
#include "common/jobs/testing/redis_server.h"

namespace unmask::jobs {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int n = 20000;
  int payload = 512;
  std::string doc;
};

struct Row {
  std::string store;
  int threads = 0;
  double submits_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  double drains_per_s = 0;  // claim + complete
};

double Percentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  const std::size_t k = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

// Runs `work(thread, index)` for indexes 0..n-1 split over `threads`; returns seconds.
StatusOr<double> RunSplit(int n, int threads, const std::function<Status(int, int)>& work) {
  std::atomic<bool> failed{false};
  Status first_error;
  std::mutex mu;
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = t; i < n && !failed; i += threads) {
        Status s = work(t, i);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (!failed.exchange(true)) first_error = s;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  if (failed) return first_error;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

StatusOr<Row> Measure(const std::string& name, JobStore& store, int threads, const Args& args) {
  Row row{name, threads};
  std::vector<std::vector<double>> latencies(threads);
  JobRecord job;
  job.model = "llada-8b-instruct";
  job.payload.assign(static_cast<std::size_t>(args.payload), 'x');
  job.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  UNMASK_ASSIGN_OR_RETURN(
      double submit_s, RunSplit(args.n, threads, [&](int t, int i) -> Status {
        JobRecord mine = job;
        mine.priority = i % 3;
        mine.idempotency_key = "bench-" + std::to_string(i);
        const auto begin = Clock::now();
        StatusOr<SubmitResult> r = store.Submit(mine);
        latencies[t].push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - begin).count());
        return r.status();
      }));
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  row.submits_per_s = args.n / submit_s;
  row.p50_us = Percentile(all, 0.50);
  row.p99_us = Percentile(all, 0.99);

  UNMASK_ASSIGN_OR_RETURN(
      double drain_s, RunSplit(args.n, threads, [&](int t, int) -> Status {
        const std::string consumer = "bench-" + std::to_string(t);
        UNMASK_ASSIGN_OR_RETURN(std::optional<ClaimedJob> claimed, store.Claim(consumer, 1000));
        if (!claimed) return InternalError("queue ran dry before every job was claimed");
        return store.Complete(claimed->record.job_id, claimed->handle, "result");
      }));
  row.drains_per_s = args.n / drain_s;
  UNMASK_ASSIGN_OR_RETURN(std::int64_t left, store.QueueDepth());
  if (left != 0) return InternalError(std::to_string(left) + " jobs left after the drain");
  return row;
}

Status Flush(RedisJobStore& store) {
  UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply, store.client().Command({"FLUSHALL"}));
  if (IsErrorReply(reply.get())) return ErrorReplyStatus("FLUSHALL", reply.get());
  return OkStatus();
}

StatusOr<std::vector<Row>> RedisRows(const std::string& name, bool aof, const Args& args) {
  testing::RedisServerOptions server_options;
  server_options.append_only = aof;
  server_options.appendfsync = "everysec";
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<testing::RedisServer> server,
                          testing::RedisServer::Start(server_options));
  std::vector<Row> rows;
  for (int threads : {1, 4}) {
    RedisJobStoreOptions options;
    options.endpoint.port = server->port();
    UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<RedisJobStore> store, RedisJobStore::Connect(options));
    UNMASK_RETURN_IF_ERROR(Flush(*store));
    UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<RedisJobStore> fresh, RedisJobStore::Connect(options));
    UNMASK_ASSIGN_OR_RETURN(Row row, Measure(name, *fresh, threads, args));
    rows.push_back(row);
  }
  return rows;
}

int Main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--n") {
      args.n = std::atoi(next().c_str());
    } else if (a == "--payload") {
      args.payload = std::atoi(next().c_str());
    } else if (a == "--doc") {
      args.doc = next();
    } else {
      std::fprintf(stderr, "usage: bench_jobs [--n 20000] [--payload 512] [--doc FILE]\n");
      return 2;
    }
  }
  if (args.n < 1 || args.payload < 0) {
    std::fprintf(stderr, "error: --n must be >= 1 and --payload >= 0\n");
    return 2;
  }

  std::vector<Row> rows;
  for (int threads : {1, 4}) {
    MemoryJobStore memory;
    StatusOr<Row> row = Measure("memory (in-process)", memory, threads, args);
    if (!row.ok()) {
      std::fprintf(stderr, "error: memory: %s\n", row.status().ToString().c_str());
      return 1;
    }
    rows.push_back(*row);
  }
  for (bool aof : {false, true}) {
    const std::string name = aof ? "Redis, AOF everysec" : "Redis, no persistence";
    StatusOr<std::vector<Row>> redis_rows = RedisRows(name, aof, args);
    if (!redis_rows.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", name.c_str(), redis_rows.status().ToString().c_str());
      return 1;
    }
    rows.insert(rows.end(), redis_rows->begin(), redis_rows->end());
  }

  std::ostringstream md;
  md << args.n << " submits per row (payload " << args.payload
     << " bytes, idempotency key, priorities 0..2), then the same jobs drained with Claim + "
        "Complete by the same number of threads. Redis 7 on loopback, started by the benchmark; "
        "one store object (one replica, pooled connections) shared by the client threads.\n\n"
     << "| store | client threads | submits/s | submit p50 µs | submit p99 µs | claim+complete/s "
        "|\n"
     << "|---|---|---|---|---|---|\n";
  char line[256];
  for (const Row& r : rows) {
    std::snprintf(line, sizeof(line), "| %s | %d | %.0f | %.1f | %.1f | %.0f |\n", r.store.c_str(),
                  r.threads, r.submits_per_s, r.p50_us, r.p99_us, r.drains_per_s);
    md << line;
  }
  md << "\nMachine: " << bench::MachineDescription() << ". Command: `"
     << bench::CommandLine(argc, argv) << "`\n";
  std::fputs(md.str().c_str(), stdout);
  if (!args.doc.empty() && !bench::ReplaceDocSection(args.doc, "jobs", md.str())) {
    std::fprintf(stderr, "error: cannot update %s\n", args.doc.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace unmask::jobs

int main(int argc, char** argv) { return unmask::jobs::Main(argc, argv); }
