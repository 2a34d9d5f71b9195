// Real processes for end-to-end tests: start a binary, read its output lines, wait for a line
// (e.g. "listening on port N"), kill it. Every process is killed when its handle goes away.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace unmask::testing {

class Process {
 public:
  // Starts argv[0] with argv; stdout and stderr are captured together.
  explicit Process(std::vector<std::string> argv);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Waits until a captured line contains `needle`; returns that line ("" on timeout or exit).
  std::string WaitForLine(const std::string& needle, std::chrono::milliseconds timeout);
  // The number after "port " in the first line that contains `needle`, or -1.
  int WaitForPort(const std::string& needle, std::chrono::milliseconds timeout);
  void Kill(int signal);
  // Waits for exit and for the output the process wrote before it (up to 5 s more, in case a child
  // of it still holds the pipe); returns the exit code, or 128 + signal.
  int Wait();
  bool running();
  std::string output() const;
  pid_t pid() const { return pid_; }

 private:
  void ReadLoop(int fd);

  pid_t pid_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable eof_cv_;
  std::string output_;
  bool eof_ = false;
  int exit_code_ = -1;
};

// A free TCP port on 127.0.0.1 (bound to port 0, then released).
int FreePort();

}  // namespace unmask::testing
