#include "common/auth/api_keys.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "common/auth/sha256.h"

namespace unmask::auth {
namespace {

// The reasons of a key's own refusals (IsKeyLimit): its max_queued_jobs, its requests_per_second.
constexpr char kKeyLimit[] = "API_KEY_LIMIT";
constexpr char kKeyRate[] = "API_KEY_RATE";
constexpr char kLimitPrefix[] = "API key limit: ";  // of the messages, for people

std::string FormatRate(double r) {
  std::ostringstream out;
  out << r;
  return out.str();
}

}  // namespace

JobReservation::JobReservation(JobReservation&& other) noexcept : keys_(other.keys_), key_(other.key_) {
  other.keys_ = nullptr;
}

JobReservation& JobReservation::operator=(JobReservation&& other) noexcept {
  if (this != &other) {
    Release();
    keys_ = other.keys_;
    key_ = other.key_;
    other.keys_ = nullptr;
  }
  return *this;
}

JobReservation::~JobReservation() { Release(); }

void JobReservation::Commit(const std::string& job_id) {
  if (keys_ == nullptr) return;
  keys_->Commit(key_, job_id);
  keys_ = nullptr;
}

void JobReservation::Release() {
  if (keys_ == nullptr) return;
  keys_->Release(key_);
  keys_ = nullptr;
}

ApiKeys::ApiKeys(const std::vector<ApiKeyEntry>& entries, Clock clock) : clock_(std::move(clock)) {
  const auto now = clock_();
  for (const auto& e : entries) {
    auto key = std::make_unique<ApiKey>(ApiKey{e.name, e.limits});
    KeyState& st = state_[key.get()];
    st.tokens = std::max(1.0, std::ceil(e.limits.requests_per_second));
    st.refilled = now;
    keys_[e.sha256_hex] = std::move(key);
  }
}

StatusOr<std::shared_ptr<ApiKeys>> ApiKeys::Load(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(auto entries, LoadApiKeyFile(path));
  return std::make_shared<ApiKeys>(entries);
}

StatusOr<const ApiKey*> ApiKeys::Authenticate(std::string_view authorization) const {
  const Status missing(StatusCode::kUnauthenticated,
                       "an API key is required: send 'Authorization: Bearer <key>' (gRPC metadata 'authorization')");
  std::size_t i = 0;
  while (i < authorization.size() && authorization[i] == ' ') ++i;
  authorization.remove_prefix(i);
  while (!authorization.empty() && authorization.back() == ' ') authorization.remove_suffix(1);
  // "Bearer" and a key, the scheme in any case; "Bearer" alone (an empty key) is a missing key.
  constexpr std::string_view kScheme = "bearer";
  bool bearer = authorization.size() >= kScheme.size() &&
                (authorization.size() == kScheme.size() || authorization[kScheme.size()] == ' ');
  for (std::size_t k = 0; bearer && k < kScheme.size(); ++k)
    bearer = std::tolower(static_cast<unsigned char>(authorization[k])) == kScheme[k];
  if (authorization.empty()) return missing;
  if (!bearer) return Status(StatusCode::kUnauthenticated, "the authorization value is not 'Bearer <key>'");
  std::string_view key = authorization.substr(kScheme.size());
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  if (key.empty()) return missing;
  // Looked up by hash: the comparison never sees the key itself, so its time says nothing about it.
  auto it = keys_.find(Sha256Hex(key));
  if (it == keys_.end()) return Status(StatusCode::kUnauthenticated, "the API key is not valid");
  return static_cast<const ApiKey*>(it->second.get());
}

Status ApiKeys::AdmitRequest(const ApiKey& key) {
  const double rate = key.limits.requests_per_second;
  if (rate <= 0) return OkStatus();
  const double burst = std::max(1.0, std::ceil(rate));
  const auto now = clock_();
  std::lock_guard<std::mutex> lock(mu_);
  KeyState& st = state_[&key];
  const double elapsed = std::chrono::duration<double>(now - st.refilled).count();
  if (elapsed > 0) {
    st.tokens = std::min(burst, st.tokens + elapsed * rate);
    st.refilled = now;
  }
  if (st.tokens < 1.0) {
    const std::string retry = FormatRate(std::ceil((1.0 - st.tokens) / rate * 1000) / 1000);
    return ResourceExhaustedError(std::string(kLimitPrefix) + "key '" + key.name + "' is over requests_per_second=" +
                                  FormatRate(rate) + "; retry in " + retry + " s")
        .WithReason(kKeyRate, {{"key", key.name}, {"limit", FormatRate(rate)}, {"retry_after_seconds", retry}});
  }
  st.tokens -= 1.0;
  return OkStatus();
}

StatusOr<JobReservation> ApiKeys::ReserveJob(const ApiKey& key, const JobFinished& finished) {
  const std::int64_t limit = key.limits.max_queued_jobs;
  if (limit <= 0) return JobReservation();
  std::vector<std::string> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const KeyState& st = state_[&key];
    if (static_cast<std::int64_t>(st.jobs.size()) + st.reserved < limit) {
      state_[&key].reserved++;
      return JobReservation(this, &key);
    }
    held.assign(st.jobs.begin(), st.jobs.end());
  }
  // Full: ask about the jobs outside the lock (it may be a Redis round trip each), then retry.
  std::vector<std::string> done;
  for (const auto& id : held)
    if (finished(id)) done.push_back(id);
  std::lock_guard<std::mutex> lock(mu_);
  KeyState& st = state_[&key];
  for (const auto& id : done) st.jobs.erase(id);
  const std::int64_t in_use = static_cast<std::int64_t>(st.jobs.size()) + st.reserved;
  if (in_use >= limit) {
    return ResourceExhaustedError(std::string(kLimitPrefix) + "key '" + key.name + "' has " + std::to_string(in_use) +
                                  " jobs queued or running, its max_queued_jobs=" + std::to_string(limit) +
                                  "; wait for one to finish")
        .WithReason(kKeyLimit, {{"key", key.name}, {"limit", std::to_string(limit)}});
  }
  st.reserved++;
  return JobReservation(this, &key);
}

std::int64_t ApiKeys::JobsHeld(const ApiKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = state_.find(&key);
  return it == state_.end() ? 0 : static_cast<std::int64_t>(it->second.jobs.size()) + it->second.reserved;
}

void ApiKeys::Commit(const ApiKey* key, const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  KeyState& st = state_[key];
  st.reserved--;
  st.jobs.insert(job_id);
}

void ApiKeys::Release(const ApiKey* key) {
  std::lock_guard<std::mutex> lock(mu_);
  state_[key].reserved--;
}

bool IsKeyLimit(const Status& status) {
  return status.code() == StatusCode::kResourceExhausted && (status.reason() == kKeyLimit || status.reason() == kKeyRate);
}

}  // namespace unmask::auth
