#include "tests/e2e/chaos_monkey.h"

#include <algorithm>
#include <cstdio>
#include <exception>

namespace unmask::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds Between(std::mt19937_64& rng, std::chrono::milliseconds lo, std::chrono::milliseconds hi) {
  std::uniform_int_distribution<std::int64_t> d(lo.count(), std::max(lo.count(), hi.count()));
  return std::chrono::milliseconds(d(rng));
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

ChaosMonkey::ChaosMonkey(Stack& stack, ChaosPlan plan) : stack_(stack), plan_(plan), rng_(plan.seed) {}

ChaosMonkey::~ChaosMonkey() { Stop(); }

void ChaosMonkey::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ChaosMonkey::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ChaosMonkey::WaitForRounds(int rounds) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return stop_ || rounds_ >= rounds || !error_.empty(); });
}

bool ChaosMonkey::Pause(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [&] { return stop_; });
}

void ChaosMonkey::Loop() {
  std::vector<Kind> round = {Kind::kExecutor, Kind::kScheduler, Kind::kRedis};
  for (;;) {
    std::shuffle(round.begin(), round.end(), rng_);
    for (Kind kind : round) {
      if (!Pause(Between(rng_, plan_.min_gap, plan_.max_gap))) return;
      try {
        Act(kind);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = e.what();
        cv_.notify_all();
        return;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++rounds_;
    cv_.notify_all();
  }
}

void ChaosMonkey::Act(Kind kind) {
  const auto down = Between(rng_, plan_.min_down, plan_.max_down);
  const int victim = std::uniform_int_distribution<int>(0, plan_.executors - 1)(rng_);
  const auto at = Clock::now();
  std::string what;
  switch (kind) {
    case Kind::kExecutor:
      what = "executor-" + std::to_string(victim);
      stack_.KillExecutor(victim);
      std::this_thread::sleep_for(down);  // not cut short by Stop: the stack ends whole
      stack_.ReviveExecutor(victim);
      break;
    case Kind::kScheduler:
      what = "scheduler-" + std::to_string(plan_.scheduler);
      stack_.KillScheduler(plan_.scheduler);
      std::this_thread::sleep_for(down);
      stack_.ReviveScheduler(plan_.scheduler);
      break;
    case Kind::kRedis:
      what = "redis-server";
      stack_.KillRedis();
      std::this_thread::sleep_for(down);
      stack_.ReviveRedis();
      break;
  }
  char line[160];
  std::snprintf(line, sizeof(line), "%.1fs %s down %.2fs (back after %.2fs)", Seconds(at - began_), what.c_str(),
                down.count() / 1000.0, Seconds(Clock::now() - at));
  std::lock_guard<std::mutex> lock(mu_);
  timeline_.push_back(line);
  switch (kind) {
    case Kind::kExecutor: ++counts_.executor_kills; break;
    case Kind::kScheduler: ++counts_.scheduler_kills; break;
    case Kind::kRedis: ++counts_.redis_restarts; break;
  }
}

ChaosCounts ChaosMonkey::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

std::vector<std::string> ChaosMonkey::timeline() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timeline_;
}

std::string ChaosMonkey::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

}  // namespace unmask::testing
