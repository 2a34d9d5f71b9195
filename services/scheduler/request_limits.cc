#include "services/scheduler/request_limits.h"

#include <algorithm>
#include <vector>

#include "common/util/host_port.h"
#include "services/scheduler/request_validation.h"

namespace unmask::scheduler {
namespace {

constexpr char kClientLimitPrefix[] = "client limit: ";
// The reason of ClientJobLimit's refusal (IsClientJobLimit).
constexpr char kClientJobLimit[] = "CLIENT_JOB_LIMIT";

// `field` is the request field over the limit, as the gRPC API names it.
Status OverLimit(const std::string &field, std::int64_t got, std::int64_t limit,
                 const char *unit, const char *flag) {
  return InvalidFieldError(field, "must be at most " + std::to_string(limit) +
                                      " " + unit + " (the scheduler's " +
                                      flag + "), got " + std::to_string(got));
}

} // namespace

Status CheckPromptLimits(const v1::GenerateRequest &r,
                         const RequestLimits &limits) {
  switch (r.prompt_case()) {
  case v1::GenerateRequest::kText: {
    const auto bytes = static_cast<std::int64_t>(r.text().size());
    if (bytes > limits.max_prompt_bytes)
      return OverLimit("text", bytes, limits.max_prompt_bytes, "bytes",
                       "--max-prompt-bytes");
    return OkStatus();
  }
  case v1::GenerateRequest::kChat: {
    const auto &messages = r.chat().messages();
    if (messages.size() > limits.max_chat_messages)
      return OverLimit("chat.messages", messages.size(),
                       limits.max_chat_messages, "messages",
                       "--max-chat-messages");
    // Everything the template renders: the contents, the calls made, the tools offered.
    std::size_t bytes = 0;
    for (const auto &m : messages) {
      bytes += m.content().size() + m.tool_call_id().size();
      for (const auto &call : m.tool_calls())
        bytes += call.id().size() + call.name().size() + call.arguments().size();
    }
    for (const auto &t : r.chat().tools())
      bytes += t.name().size() + t.description().size() + t.parameters().size();
    if (static_cast<std::int64_t>(bytes) > limits.max_prompt_bytes)
      return OverLimit("chat.messages", static_cast<std::int64_t>(bytes), limits.max_prompt_bytes,
                       "bytes of content, tool calls and tools", "--max-prompt-bytes");
    return OkStatus();
  }
  case v1::GenerateRequest::kIds:
    if (limits.max_prompt_tokens > 0 &&
        r.ids().ids_size() > limits.max_prompt_tokens)
      return OverLimit("ids", r.ids().ids_size(), limits.max_prompt_tokens,
                       "token ids", "--max-prompt-tokens");
    return OkStatus();
  case v1::GenerateRequest::PROMPT_NOT_SET:
    break;
  }
  return OkStatus(); // ValidateGenerateRequest refuses it
}

Status CheckPromptTokens(std::size_t tokens, const RequestLimits &limits) {
  const auto n = static_cast<std::int64_t>(tokens);
  if (limits.max_prompt_tokens > 0 && n > limits.max_prompt_tokens)
    return OverLimit("prompt", n, limits.max_prompt_tokens,
                     "tokens once encoded", "--max-prompt-tokens");
  return OkStatus();
}

Status ValidateRequestLimits(const RequestLimits &l) {
  const auto max_bytes = static_cast<std::int64_t>(kMaxPromptBytes);
  if (l.max_prompt_bytes < 1 || l.max_prompt_bytes > max_bytes)
    return InvalidArgumentError("--max-prompt-bytes: must be in [1, " +
                                std::to_string(max_bytes) + "], got " +
                                std::to_string(l.max_prompt_bytes));
  if (l.max_chat_messages < 1)
    return InvalidArgumentError("--max-chat-messages: must be >= 1, got " +
                                std::to_string(l.max_chat_messages));
  if (l.max_prompt_tokens < 0)
    return InvalidArgumentError(
        "--max-prompt-tokens: must be >= 0 (0 = the model's length), got " +
        std::to_string(l.max_prompt_tokens));
  if (l.max_queued_jobs_per_client < 0)
    return InvalidArgumentError(
        "--max-queued-jobs-per-client: must be >= 0 (0 = no limit), got " +
        std::to_string(l.max_queued_jobs_per_client));
  return OkStatus();
}

std::string ClientAddress(std::string_view peer) {
  for (std::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (peer.substr(0, scheme.size()) != scheme)
      continue;
    const std::string_view rest = peer.substr(scheme.size());
    HostPortRules rules;
    rules.default_port = 0;  // the address alone
    rules.allow_empty_host = true;
    auto parsed = ParseHostPort(rest, rules);
    return parsed.ok() ? parsed->host : std::string(rest);
  }
  return std::string(peer);
}

ClientJobLimit::Slot::Slot(Slot &&other) noexcept
    : owner_(other.owner_), client_(std::move(other.client_)) {
  other.owner_ = nullptr;
}

ClientJobLimit::Slot &ClientJobLimit::Slot::operator=(Slot &&other) noexcept {
  if (this != &other) {
    Release();
    owner_ = other.owner_;
    client_ = std::move(other.client_);
    other.owner_ = nullptr;
  }
  return *this;
}

ClientJobLimit::Slot::~Slot() { Release(); }

void ClientJobLimit::Slot::Commit(const std::string &job_id) {
  if (owner_ == nullptr)
    return;
  owner_->Commit(client_, job_id);
  owner_ = nullptr;
}

void ClientJobLimit::Slot::Release() {
  if (owner_ == nullptr)
    return;
  owner_->Release(client_);
  owner_ = nullptr;
}

void ClientJobLimit::Sweep(const JobFinished &finished) {
  std::vector<std::pair<std::string, std::string>> held; // client, job
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (clients_.size() < sweep_at_)
      return;
    for (const auto &[client, st] : clients_)
      for (const auto &id : st.jobs)
        held.emplace_back(client, id);
  }
  std::vector<std::pair<std::string, std::string>> done;
  for (auto &entry : held)
    if (finished(entry.second))
      done.push_back(std::move(entry));
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto &[client, id] : done) {
    auto it = clients_.find(client);
    if (it == clients_.end())
      continue;
    it->second.jobs.erase(id);
    ForgetIfIdleLocked(client);
  }
  // Amortized: the next sweep waits until the map doubles.
  sweep_at_ = std::max(kSweepAbove, 2 * clients_.size());
}

StatusOr<ClientJobLimit::Slot>
ClientJobLimit::Reserve(const std::string &client,
                        const JobFinished &finished) {
  if (max_jobs_ <= 0 || client.empty())
    return Slot();
  Sweep(finished);
  std::vector<std::string> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ClientState &st = clients_[client];
    if (static_cast<std::int64_t>(st.jobs.size()) + st.reserved < max_jobs_) {
      st.reserved++;
      return Slot(this, client);
    }
    held.assign(st.jobs.begin(), st.jobs.end());
  }
  // Full: ask about the jobs outside the lock (a Redis round trip each), then
  // count again.
  std::vector<std::string> done;
  for (const auto &id : held)
    if (finished(id))
      done.push_back(id);
  std::lock_guard<std::mutex> lock(mu_);
  ClientState &st = clients_[client];
  for (const auto &id : done)
    st.jobs.erase(id);
  const std::int64_t in_use =
      static_cast<std::int64_t>(st.jobs.size()) + st.reserved;
  if (in_use >= max_jobs_) {
    return ResourceExhaustedError(
        std::string(kClientLimitPrefix) + "client " + client + " has " +
        std::to_string(in_use) + " jobs queued or running, the scheduler's " +
        "--max-queued-jobs-per-client=" + std::to_string(max_jobs_) +
        "; wait for one to finish (or use an API key with its own limit)")
        .WithReason(kClientJobLimit, {{"client", client},
                                      {"limit", std::to_string(max_jobs_)}});
  }
  st.reserved++;
  return Slot(this, client);
}

std::int64_t ClientJobLimit::JobsHeld(const std::string &client) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(client);
  return it == clients_.end()
             ? 0
             : static_cast<std::int64_t>(it->second.jobs.size()) +
                   it->second.reserved;
}

void ClientJobLimit::Commit(const std::string &client,
                            const std::string &job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  ClientState &st = clients_[client];
  st.reserved--;
  st.jobs.insert(job_id);
}

void ClientJobLimit::Release(const std::string &client) {
  std::lock_guard<std::mutex> lock(mu_);
  clients_[client].reserved--;
  ForgetIfIdleLocked(client);
}

void ClientJobLimit::ForgetIfIdleLocked(const std::string &client) {
  auto it = clients_.find(client);
  if (it != clients_.end() && it->second.jobs.empty() &&
      it->second.reserved <= 0)
    clients_.erase(it);
}

bool IsClientJobLimit(const Status &status) {
  return status.code() == StatusCode::kResourceExhausted &&
         status.reason() == kClientJobLimit;
}

} // namespace unmask::scheduler
