#include "common/jobs/testing/redis_server.h"
#include "common/util/remove_tree.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

namespace unmask::jobs::testing {
namespace {

// PONG, or (when loading_counts) the LOADING refusal of a server still reading its AOF.
bool Pings(int port, bool loading_counts) {
  timeval tv{0, 200 * 1000};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c == nullptr) return false;
  bool ok = false;
  if (c->err == 0) {
    auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = reply && reply->type == REDIS_REPLY_STATUS && std::string(reply->str) == "PONG";
    ok = ok || (loading_counts && reply && reply->type == REDIS_REPLY_ERROR &&
                std::string(reply->str).rfind("LOADING", 0) == 0);
    if (reply) freeReplyObject(reply);
  }
  redisFree(c);
  return ok;
}

std::string MakeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "unmask-redis-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

}  // namespace

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

void IgnoreSigpipe() { signal(SIGPIPE, SIG_IGN); }

StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(RedisServerOptions options) {
  // A connection reset by a killed server must not kill the caller with SIGPIPE.
  IgnoreSigpipe();
  std::string dir = options.dir;
  const bool own_dir = dir.empty();
  if (own_dir) dir = MakeTempDir();
  if (dir.empty()) return InternalError("cannot create a temp dir for redis-server");
  Status last = InternalError("no attempt");
  // Another process may take the port between PickFreePort and redis binding it: try again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    int port = PickFreePort();
    if (port <= 0) return InternalError("cannot pick a free port");
    std::unique_ptr<RedisServer> server(new RedisServer(options, dir, port));
    server->own_dir_ = own_dir;
    last = server->Launch();
    if (last.ok()) return server;
    server->own_dir_ = false;  // keep the dir for the next attempt
  }
  if (own_dir) unmask::util::RemoveTree(dir);
  return last;
}

Status RedisServer::Launch(bool wait_until_loaded) {
  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   options_.append_only ? "yes" : "no",
                                   "--appendfsync",
                                   options_.appendfsync,
                                   "--dir",
                                   dir_,
                                   "--daemonize",
                                   "no",
                                   "--logfile",
                                   dir_ + "/redis.log"};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return InternalError("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp("redis-server", argv.data());
    _exit(127);
  }
  pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return UnavailableError("redis-server on port " + std::to_string(port_) +
                              " exited at start-up (see " + dir_ + "/redis.log)");
    }
    if (Pings(port_, !wait_until_loaded)) return OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling, not ordering
  }
  Kill();
  return UnavailableError("redis-server on port " + std::to_string(port_) + " did not answer PING");
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

Status RedisServer::Restart(bool wait_until_loaded) {
  Kill();
  return Launch(wait_until_loaded);
}

RedisServer::~RedisServer() {
  Kill();
  if (own_dir_) {
    std::error_code ignored;
    unmask::util::RemoveTree(dir_);
  }
}

}  // namespace unmask::jobs::testing
