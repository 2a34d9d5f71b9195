#include "fuzz/fuzz_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/util/remove_tree.h"

namespace unmask::fuzz {

ScratchDir::ScratchDir(const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/unmask-fuzz-" + tag + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = buf.data();
}

ScratchDir::~ScratchDir() { util::RemoveTree(path_); }

std::string ScratchDir::Write(const std::string& name, const std::uint8_t* data, std::size_t size) const {
  const std::string file = path_ + "/" + name;
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(file.c_str());
    std::abort();
  }
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      std::perror(file.c_str());
      std::abort();
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return file;
}

std::string ScratchDir::Write(const std::string& name, const std::string& bytes) const {
  return Write(name, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace unmask::fuzz
