#include "tests/e2e/process.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace unmask::testing {

Process::Process(std::vector<std::string> argv) {
  int fds[2];
  if (::pipe(fds) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "exec %s failed: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  reader_ = std::thread([this, fd = fds[0]] { ReadLoop(fd); });
}

Process::~Process() {
  if (running()) Kill(SIGKILL);
  if (pid_ > 0) Wait();
  if (reader_.joinable()) reader_.join();
}

void Process::ReadLoop(int fd) {
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    output_.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  {
    std::lock_guard<std::mutex> lock(mu_);
    eof_ = true;
  }
  eof_cv_.notify_all();
}

std::string Process::WaitForLine(const std::string& needle, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto at = output_.find(needle);
      if (at != std::string::npos) {
        const auto begin = output_.rfind('\n', at);
        const auto end = output_.find('\n', at);
        return output_.substr(begin == std::string::npos ? 0 : begin + 1,
                              (end == std::string::npos ? output_.size() : end) - (begin == std::string::npos ? 0 : begin + 1));
      }
      if (eof_) return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

int Process::WaitForPort(const std::string& needle, std::chrono::milliseconds timeout) {
  const std::string line = WaitForLine(needle, timeout);
  const auto at = line.find("port ");
  if (at == std::string::npos) return -1;
  return std::atoi(line.c_str() + at + 5);
}

void Process::Kill(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

int Process::Wait() {
  if (pid_ <= 0) return exit_code_;
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // The child has exited, but the reader may not have drained the pipe yet.
  std::unique_lock<std::mutex> lock(mu_);
  eof_cv_.wait_for(lock, std::chrono::seconds(5), [this] { return eof_; });
  return exit_code_;
}

bool Process::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pid_ = -1;
  return false;
}

std::string Process::output() const {
  std::lock_guard<std::mutex> lock(mu_);
  return output_;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace unmask::testing
