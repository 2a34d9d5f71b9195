#include "common/jobs/redis_client.h"

#include <sys/time.h>

#include <cerrno>
#include <utility>

namespace unmask::jobs {
namespace {

timeval ToTimeval(std::int64_t ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

std::string CommandName(const std::vector<std::string>& argv) {
  return argv.empty() ? std::string("(empty)") : argv[0];
}

void ToArgv(const std::vector<std::string>& argv, std::vector<const char*>& ptrs,
            std::vector<size_t>& lens) {
  ptrs.clear();
  lens.clear();
  for (const std::string& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
}

}  // namespace

bool IsErrorReply(const redisReply* reply) { return reply && reply->type == REDIS_REPLY_ERROR; }
bool IsNilReply(const redisReply* reply) { return !reply || reply->type == REDIS_REPLY_NIL; }

std::string ReplyString(const redisReply* reply) {
  if (!reply) return "";
  if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS ||
      reply->type == REDIS_REPLY_ERROR) {
    return std::string(reply->str, reply->len);
  }
  return "";
}

const redisReply* ReplyElement(const redisReply* reply, std::size_t i) {
  if (!reply || reply->type != REDIS_REPLY_ARRAY || i >= reply->elements) return nullptr;
  return reply->element[i];
}

std::size_t ReplyArraySize(const redisReply* reply) {
  return reply && reply->type == REDIS_REPLY_ARRAY ? reply->elements : 0;
}

Status ErrorReplyStatus(const std::string& command, const redisReply* reply) {
  std::string text = ReplyString(reply);
  std::string message = "redis " + command + ": " + text;
  if (text.find("WRONGTYPE") != std::string::npos) return DataLossError(message);
  return UnavailableError(message);
}

Status UnexpectedReply(const std::string& command, const std::string& what) {
  return InternalError("redis " + command + ": unexpected reply: " + what);
}

StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Connect(const RedisEndpoint& endpoint) {
  const std::string where = endpoint.host + ":" + std::to_string(endpoint.port);
  std::unique_ptr<TlsBridge> tls;
  redisContext* context = nullptr;
  if (endpoint.tls.enabled) {
    auto bridge = TlsBridge::Open(endpoint.host, endpoint.port, endpoint.tls, endpoint.connect_timeout_ms);
    if (!bridge.ok()) return UnavailableError("redis connect " + where + ": " + bridge.status().message());
    tls = std::move(*bridge);
    context = redisConnectFd(tls->TakePlainFd());
  } else {
    context = redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, ToTimeval(endpoint.connect_timeout_ms));
  }
  if (context == nullptr) return UnavailableError("redis connect " + where + ": out of memory");
  if (context->err != 0) {
    std::string reason = context->errstr;
    redisFree(context);
    return UnavailableError("redis connect " + where + ": " + reason);
  }
  std::unique_ptr<RedisConnection> connection(new RedisConnection(context, endpoint.io_timeout_ms, std::move(tls)));
  if (!endpoint.password.empty()) {
    UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply, connection->Command({"AUTH", endpoint.password}));
    if (IsErrorReply(reply.get())) return ErrorReplyStatus("AUTH", reply.get());
  }
  if (endpoint.db != 0) {
    UNMASK_ASSIGN_OR_RETURN(RedisReplyPtr reply,
                            connection->Command({"SELECT", std::to_string(endpoint.db)}));
    if (IsErrorReply(reply.get())) return ErrorReplyStatus("SELECT", reply.get());
  }
  return connection;
}

RedisConnection::~RedisConnection() { redisFree(context_); }

Status RedisConnection::TransportError(const std::string& command) {
  const int saved_errno = errno;
  broken_ = true;
  closed_by_peer_ =
      context_->err == REDIS_ERR_EOF ||
      (context_->err == REDIS_ERR_IO && (saved_errno == ECONNRESET || saved_errno == EPIPE));
  std::string reason = context_->err != 0 ? context_->errstr : "no reply";
  return UnavailableError("redis " + command + ": " + reason);
}

Status RedisConnection::SetTimeout(std::int64_t ms) {
  if (ms == current_timeout_ms_) return OkStatus();
  if (redisSetTimeout(context_, ToTimeval(ms)) != REDIS_OK) {
    return TransportError("(set timeout)");
  }
  current_timeout_ms_ = ms;
  return OkStatus();
}

StatusOr<RedisReplyPtr> RedisConnection::Command(const std::vector<std::string>& argv,
                                                 std::int64_t extra_timeout_ms) {
  if (broken_) return UnavailableError("redis " + CommandName(argv) + ": connection is broken");
  UNMASK_RETURN_IF_ERROR(SetTimeout(io_timeout_ms_ + extra_timeout_ms));
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ToArgv(argv, ptrs, lens);
  void* raw = redisCommandArgv(context_, static_cast<int>(ptrs.size()), ptrs.data(), lens.data());
  if (raw == nullptr) return TransportError(CommandName(argv));
  return RedisReplyPtr(static_cast<redisReply*>(raw));
}

StatusOr<std::vector<RedisReplyPtr>> RedisConnection::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  std::vector<RedisReplyPtr> replies;
  if (commands.empty()) return replies;
  const std::string name =
      "pipeline of " + std::to_string(commands.size()) + " (" + CommandName(commands[0]) + "...)";
  if (broken_) return UnavailableError("redis " + name + ": connection is broken");
  UNMASK_RETURN_IF_ERROR(SetTimeout(io_timeout_ms_));
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& argv : commands) {
    ToArgv(argv, ptrs, lens);
    if (redisAppendCommandArgv(context_, static_cast<int>(ptrs.size()), ptrs.data(), lens.data()) !=
        REDIS_OK) {
      return TransportError(name);
    }
  }
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) return TransportError(name);
    replies.emplace_back(static_cast<redisReply*>(raw));
  }
  return replies;
}

RedisClient::RedisClient(RedisEndpoint endpoint, int max_idle_connections)
    : endpoint_(std::move(endpoint)),
      max_idle_(static_cast<std::size_t>(max_idle_connections < 1 ? 1 : max_idle_connections)) {}

StatusOr<RedisClient::Lease> RedisClient::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      Lease lease{std::move(idle_.back()), true};
      idle_.pop_back();
      return lease;
    }
  }
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<RedisConnection> fresh,
                          RedisConnection::Connect(endpoint_));
  return Lease{std::move(fresh), false};
}

void RedisClient::Release(std::unique_ptr<RedisConnection> connection) {
  if (connection->broken()) return;  // closed here; the next Acquire reconnects
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(connection));
}

template <typename Fn>
auto RedisClient::WithRetry(Fn&& fn) -> decltype(fn(std::declval<RedisConnection&>())) {
  for (int round = 0;; ++round) {
    auto lease = Acquire();
    if (!lease.ok()) return lease.status();
    auto result = fn(*lease->connection);
    const bool retry =
        !result.ok() && lease->connection->closed_by_peer() && lease->reused && round == 0;
    Release(std::move(lease->connection));
    if (!retry) return result;
    // The server closed a pooled connection: it probably restarted, so the other idle
    // connections are dead too.
    std::lock_guard<std::mutex> lock(mu_);
    idle_.clear();
  }
}

StatusOr<RedisReplyPtr> RedisClient::Command(const std::vector<std::string>& argv,
                                             std::int64_t extra_timeout_ms) {
  return WithRetry([&](RedisConnection& c) { return c.Command(argv, extra_timeout_ms); });
}

StatusOr<std::vector<RedisReplyPtr>> RedisClient::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  return WithRetry([&](RedisConnection& c) { return c.Pipeline(commands); });
}

}  // namespace unmask::jobs
