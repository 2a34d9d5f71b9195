// The scheduler's API keys: who a request is (from its "Authorization: Bearer <key>" value, HTTP
// header or gRPC metadata alike) and whether the key's own limits let it in. Both adapters call
// this and nothing else; neither knows the file or the hashes.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/auth/api_key_file.h"

namespace unmask::auth {

class ApiKeys;

// A key of the file (without its hash): what a request authenticated as.
struct ApiKey {
  std::string name;
  KeyLimits limits;
};

// One of a key's max_queued_jobs, held while a job is being accepted: Commit() counts the
// accepted job against the key until it finishes; dropped without Commit() (the request was
// refused) it frees the slot.
class JobReservation {
 public:
  JobReservation() = default;
  JobReservation(JobReservation&& other) noexcept;
  JobReservation& operator=(JobReservation&& other) noexcept;
  ~JobReservation();

  void Commit(const std::string& job_id);

 private:
  friend class ApiKeys;
  JobReservation(ApiKeys* keys, const ApiKey* key) : keys_(keys), key_(key) {}
  void Release();

  ApiKeys* keys_ = nullptr;  // null: nothing held (no key, or no limit)
  const ApiKey* key_ = nullptr;
};

class ApiKeys {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // Whether a job counted against a key has finished (its slot is then free again).
  using JobFinished = std::function<bool(const std::string& job_id)>;

  explicit ApiKeys(const std::vector<ApiKeyEntry>& entries, Clock clock = std::chrono::steady_clock::now);
  static StatusOr<std::shared_ptr<ApiKeys>> Load(const std::string& path);

  std::size_t size() const { return keys_.size(); }

  // The key that `authorization` ("Bearer <key>"; the scheme in any case) presents.
  // UNAUTHENTICATED when it is empty, not a bearer token, or not a key of the file.
  StatusOr<const ApiKey*> Authenticate(std::string_view authorization) const;

  // Counts one request of `key` against its requests_per_second (a token bucket holding one
  // second's worth, at least 1). RESOURCE_EXHAUSTED naming the limit when it is spent.
  Status AdmitRequest(const ApiKey& key);

  // Takes one of the key's max_queued_jobs for a job about to be accepted; jobs committed
  // earlier that `finished` says are done give their slot back first. RESOURCE_EXHAUSTED naming
  // the limit when every slot is taken. Keys without the limit get an empty reservation.
  StatusOr<JobReservation> ReserveJob(const ApiKey& key, const JobFinished& finished);

  // Jobs counted against `key` now (committed and reserved).
  std::int64_t JobsHeld(const ApiKey& key) const;

 private:
  friend class JobReservation;
  struct KeyState {
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled;
    std::set<std::string> jobs;  // committed, not yet seen finished
    std::int64_t reserved = 0;
  };
  void Commit(const ApiKey* key, const std::string& job_id);
  void Release(const ApiKey* key);

  std::map<std::string, std::unique_ptr<ApiKey>> keys_;  // by SHA-256 hex of the key
  Clock clock_;
  mutable std::mutex mu_;
  std::map<const ApiKey*, KeyState> state_;
};

// Whether `status` is a refusal by a key's own limit: reason API_KEY_LIMIT (max_queued_jobs) or
// API_KEY_RATE (requests_per_second). Adapters answer it like a full queue: HTTP 429.
bool IsKeyLimit(const Status& status);

}  // namespace unmask::auth
