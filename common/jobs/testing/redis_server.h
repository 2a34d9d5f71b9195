// A real redis-server for tests and benchmarks: a child process on a free loopback port,
// started and waited for (PING) by the caller itself, killed when the object goes (and, via
// PR_SET_PDEATHSIG, when the calling process dies). No test framework in here.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/util/status.h"

namespace unmask::jobs::testing {

// Ignores SIGPIPE for the process (hiredis writes with write(2)). Start() calls it.
void IgnoreSigpipe();

struct RedisServerOptions {
  bool append_only = false;  // AOF on
  std::string appendfsync =
      "always";     // "always": a SIGKILL loses nothing; "everysec": Redis's default
  std::string dir;  // working directory (AOF files); a fresh temp dir when empty
  // Passed to redis-server as they are, e.g. {"--key-load-delay", "50"} to make loading slow.
  std::vector<std::string> extra_args;
};

class RedisServer {
 public:
  static StatusOr<std::unique_ptr<RedisServer>> Start(RedisServerOptions options = {});
  ~RedisServer();

  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  // SIGKILL, as if the machine lost power (only what AOF wrote survives).
  void Kill();
  // Starts it again on the same port and directory; returns once it answers PING, or, with
  // wait_until_loaded false, once it answers at all (PING refused with LOADING while it still
  // reads its AOF counts).
  Status Restart(bool wait_until_loaded = true);

 private:
  RedisServer(RedisServerOptions options, std::string dir, int port)
      : options_(std::move(options)), dir_(std::move(dir)), port_(port) {}
  Status Launch(bool wait_until_loaded = true);

  RedisServerOptions options_;
  std::string dir_;
  bool own_dir_ = false;
  int port_;
  pid_t pid_ = -1;
};

// A port nothing listens on right now (bind to port 0, read it back, close).
int PickFreePort();

}  // namespace unmask::jobs::testing
