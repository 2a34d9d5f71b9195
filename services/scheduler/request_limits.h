// The scheduler's configurable request limits (flags of unmask-scheduler),
// gRPC-free: prompt size before and after encoding, and the jobs an anonymous
// client may hold. Every refusal names the flag that set the limit, so a caller
// (or an operator reading logs) knows what to change.
//
//   limit                          flag                            status
//   text / chat content bytes      --max-prompt-bytes INVALID_ARGUMENT chat
//   messages                  --max-chat-messages             INVALID_ARGUMENT
//   prompt tokens (ids, encoded)   --max-prompt-tokens INVALID_ARGUMENT jobs
//   per anonymous client      --max-queued-jobs-per-client RESOURCE_EXHAUSTED
//
// Others live elsewhere: the request size (--grpc-max-receive-bytes,
// --http-max-body-bytes), the whole queue (--max-queue), each API key's own
// limits (auth::ApiKeys), deadlines (deadline_seconds, the gRPC deadline of
// Generate, --default-deadline-seconds).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "common/auth/api_keys.h"
#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {

struct RequestLimits {
  std::int64_t max_prompt_bytes = 1
                                  << 20; // text, or the chat contents together
  std::int64_t max_chat_messages = 256;
  std::int64_t max_prompt_tokens =
      0; // ids given or encoded; 0 = only the model's length
  std::int64_t max_queued_jobs_per_client =
      0; // anonymous callers, per client address; 0 = none
};

// Checks the limits that need no model: prompt bytes, chat messages, ids given.
Status CheckPromptLimits(const v1::GenerateRequest &request,
                         const RequestLimits &limits);
// The encoded prompt's length against --max-prompt-tokens.
Status CheckPromptTokens(std::size_t tokens, const RequestLimits &limits);
// The limits themselves (from flags): the error names the flag.
Status ValidateRequestLimits(const RequestLimits &limits);

// The client address of a gRPC peer string: "ipv4:10.0.0.7:51234" ->
// "10.0.0.7", "ipv6:[::1]:51234" -> "::1"; anything else is returned unchanged.
std::string ClientAddress(std::string_view grpc_peer);

// Jobs queued or running per anonymous client (--max-queued-jobs-per-client).
// Behind a proxy every client has the proxy's address: give such clients API
// keys (their own max_queued_jobs).
class ClientJobLimit {
public:
  using JobFinished = auth::ApiKeys::JobFinished;

  // One client's slot while its job is being accepted: Commit() counts the job
  // until it finishes; dropped uncommitted (the request was refused) it frees
  // the slot.
  class Slot {
  public:
    Slot() = default;
    Slot(Slot &&other) noexcept;
    Slot &operator=(Slot &&other) noexcept;
    ~Slot();
    void Commit(const std::string &job_id);

  private:
    friend class ClientJobLimit;
    Slot(ClientJobLimit *owner, std::string client)
        : owner_(owner), client_(std::move(client)) {}
    void Release();
    ClientJobLimit *owner_ = nullptr; // null: nothing held
    std::string client_;
  };

  explicit ClientJobLimit(std::int64_t max_jobs) : max_jobs_(max_jobs) {}

  // Takes a slot for `client`; jobs that `finished` says are done give theirs
  // back first. RESOURCE_EXHAUSTED naming --max-queued-jobs-per-client when all
  // are taken. An empty client or no limit: an empty slot.
  StatusOr<Slot> Reserve(const std::string &client,
                         const JobFinished &finished);
  std::int64_t JobsHeld(const std::string &client) const;

private:
  struct ClientState {
    std::set<std::string> jobs; // committed, not yet seen finished
    std::int64_t reserved = 0;
  };
  void Commit(const std::string &client, const std::string &job_id);
  void Release(const std::string &client);
  void ForgetIfIdleLocked(const std::string &client);
  // Clients whose jobs all ended are forgotten when the map reaches sweep_at_
  // clients (at least kSweepAbove, then twice what a sweep left), so that it
  // stays bounded without a timer.
  static constexpr std::size_t kSweepAbove = 1024;
  void Sweep(const JobFinished &finished);

  const std::int64_t max_jobs_;
  mutable std::mutex mu_;
  std::map<std::string, ClientState>
      clients_; // clients holding (or lately holding) jobs
  std::size_t sweep_at_ = kSweepAbove;
};

// Whether `status` is ClientJobLimit's refusal (HTTP answers it 429).
bool IsClientJobLimit(const Status &status);

} // namespace unmask::scheduler
