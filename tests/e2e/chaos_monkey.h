// The chaos thread of the chaos test: at seeded random moments it SIGKILLs one part of a Stack
// (an executor, the scheduler, or redis-server), leaves it down for a seeded random while, and
// starts it again on the same port. One action at a time; the kinds take turns in a shuffled
// order per round, so that a run of n rounds kills each kind n times.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/stack.h"

namespace unmask::testing {

struct ChaosPlan {
  std::uint64_t seed = 1;
  int executors = 2;  // executors 0..executors-1 of the stack may be killed
  int scheduler = 0;  // the scheduler that is killed
  std::chrono::milliseconds min_gap{500}, max_gap{2000};       // between actions
  std::chrono::milliseconds min_down{100}, max_down{1500};     // kill to restart
};

struct ChaosCounts {
  int executor_kills = 0;
  int scheduler_kills = 0;
  int redis_restarts = 0;
};

class ChaosMonkey {
 public:
  ChaosMonkey(Stack& stack, ChaosPlan plan);
  ~ChaosMonkey();  // Stop()

  void Start();
  // Ends after the action in progress: everything that was killed runs again.
  void Stop();
  // Blocks until `rounds` full rounds (one kill of each kind per round) are done, or Stop.
  void WaitForRounds(int rounds);

  ChaosCounts counts() const;
  // One line per action: "12.3s executor-1 down 0.84s".
  std::vector<std::string> timeline() const;
  // Why a restart failed (the stack is then not whole); empty when every restart worked.
  std::string error() const;

 private:
  enum class Kind { kExecutor, kScheduler, kRedis };
  void Loop();
  // false when stopped during the wait
  bool Pause(std::chrono::milliseconds d);
  void Act(Kind kind);

  Stack& stack_;
  const ChaosPlan plan_;
  std::mt19937_64 rng_;
  const std::chrono::steady_clock::time_point began_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  int rounds_ = 0;
  ChaosCounts counts_;
  std::vector<std::string> timeline_;
  std::string error_;
  std::thread thread_;
};

}  // namespace unmask::testing
