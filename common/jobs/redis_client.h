// A small synchronous Redis client over hiredis: a pool of connections shared by all threads,
// binary-safe commands, and one place where hiredis failures become Status.
//
// Contract:
//   - Every call takes a connection from the pool (or opens one) and gives it back afterwards;
//     a connection that saw an I/O or protocol error is closed, never reused.
//   - A reused connection that the server had closed (EOF, reset, broken pipe; not a timeout)
//     is retried once on a fresh connection, and the other idle connections are dropped too:
//     the usual cause is a server restart, in which case the command never reached a server.
//     The rare case where the server executed the command and died before answering could run
//     a command twice; the job store's scripts make a repeated submit with an idempotency key,
//     a repeated claim (the delivery is reclaimed by the reaper) or a repeated ack harmless.
//   - hiredis writes with write(2): the process must ignore SIGPIPE (gRPC servers do), or a
//     write to a connection the server has reset kills it.
//   - Transport failures are Unavailable("redis <COMMAND>: <reason>"). Error replies are
//     handed back as replies (callers know which ones they expect, e.g. NOSCRIPT).
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/jobs/redis_tls.h"
#include "common/util/status.h"

namespace unmask::jobs {

struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;  // AUTH when non-empty
  int db = 0;            // SELECT when non-zero
  int connect_timeout_ms = 2000;
  int io_timeout_ms = 5000;  // per command; blocking commands get their block time on top
  RedisTlsOptions tls;       // TLS (redis_tls.h): each connection through its own TlsBridge
};

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using RedisReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// Reply helpers: all tolerate null.
bool IsErrorReply(const redisReply* reply);
bool IsNilReply(const redisReply* reply);
// The bytes of a string / status / error reply; "" for other types.
std::string ReplyString(const redisReply* reply);
// Element i of an array reply; null when the reply is not an array or is shorter.
const redisReply* ReplyElement(const redisReply* reply, std::size_t i);
std::size_t ReplyArraySize(const redisReply* reply);
// "redis <COMMAND>: <error text>". WRONGTYPE (someone stored another type under our key) is
// DataLoss; everything else (LOADING, READONLY, OOM, BUSY, script errors) Unavailable.
Status ErrorReplyStatus(const std::string& command, const redisReply* reply);
// Unexpected reply shape: Internal("redis <COMMAND>: unexpected reply: <what>").
Status UnexpectedReply(const std::string& command, const std::string& what);

class RedisConnection {
 public:
  static StatusOr<std::unique_ptr<RedisConnection>> Connect(const RedisEndpoint& endpoint);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends argv[0] with arguments argv[1..]; waits up to io_timeout_ms + extra_timeout_ms.
  StatusOr<RedisReplyPtr> Command(const std::vector<std::string>& argv,
                                  std::int64_t extra_timeout_ms = 0);
  // Sends all commands, then reads all replies (one round trip).
  StatusOr<std::vector<RedisReplyPtr>> Pipeline(
      const std::vector<std::vector<std::string>>& commands);
  bool broken() const { return broken_; }
  // The last failure means "the server had closed this connection" (EOF, reset, broken pipe),
  // not a timeout: the command cannot have run, so it is safe to send again.
  bool closed_by_peer() const { return closed_by_peer_; }

 private:
  RedisConnection(redisContext* context, int io_timeout_ms, std::unique_ptr<TlsBridge> tls)
      : context_(context), io_timeout_ms_(io_timeout_ms), tls_(std::move(tls)) {}
  Status TransportError(const std::string& command);
  Status SetTimeout(std::int64_t ms);

  redisContext* context_;
  int io_timeout_ms_;
  std::unique_ptr<TlsBridge> tls_;  // with TLS: what context_'s socket leads to (freed after it)
  std::int64_t current_timeout_ms_ = -1;
  bool broken_ = false;
  bool closed_by_peer_ = false;
};

class RedisClient {
 public:
  RedisClient(RedisEndpoint endpoint, int max_idle_connections);

  StatusOr<RedisReplyPtr> Command(const std::vector<std::string>& argv,
                                  std::int64_t extra_timeout_ms = 0);
  StatusOr<std::vector<RedisReplyPtr>> Pipeline(
      const std::vector<std::vector<std::string>>& commands);
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  struct Lease {
    std::unique_ptr<RedisConnection> connection;
    bool reused = false;
  };
  StatusOr<Lease> Acquire();
  void Release(std::unique_ptr<RedisConnection> connection);
  template <typename Fn>
  auto WithRetry(Fn&& fn) -> decltype(fn(std::declval<RedisConnection&>()));

  const RedisEndpoint endpoint_;
  const std::size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<RedisConnection>> idle_;
};

}  // namespace unmask::jobs
