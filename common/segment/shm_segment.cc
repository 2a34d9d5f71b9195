#include "common/segment/shm_segment.h"

#include <cstdio>
#include <random>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace unmask::weights {

namespace {

Status ErrnoStatus(const std::string& name, const char* call, int err) {
  std::string msg = "shm segment '" + name + "': " + call + " failed: " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return NotFoundError(msg);
    case EEXIST:
      return AlreadyExistsError(msg);
    case EACCES:
    case EPERM:
      return PermissionDeniedError(msg);
    case ENOSPC:
    case ENOMEM:
    case EFBIG:
      return ResourceExhaustedError(msg);
    default:
      return InternalError(msg);
  }
}

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

std::string ShmFreeText() {
  struct statvfs st {};
  if (::statvfs("/dev/shm", &st) != 0) return "";
  return " (/dev/shm has " + std::to_string(static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize) + " bytes free)";
}

}  // namespace

Status ShmSegment::ValidateName(const std::string& name) {
  auto bad = [&](const std::string& why) { return InvalidArgumentError("shm segment name '" + name + "': " + why); };
  if (name.size() < 2 || name[0] != '/') return bad("must be '/' followed by a name");
  if (name.size() > 251) return bad("longer than 250 characters");
  if (name == "/." || name == "/..") return bad("'.' and '..' are not names");
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (name[i] == '/') return bad("contains '/' after the leading one");
    if (!NameChar(name[i])) return bad("contains a character outside [A-Za-z0-9._-]");
  }
  return OkStatus();
}

std::string ShmSegment::MakeName(const std::string& model_id) {
  static std::atomic<std::uint64_t> counter{0};
  std::string model;
  for (char c : model_id.substr(0, 96)) model.push_back(NameChar(c) ? c : '_');
  if (model.empty()) model = "model";
  // The random part keeps a name unique even when a process that died without unlinking its
  // segment had the same pid (pids are reused).
  static thread_local std::mt19937 rng(std::random_device{}());
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%08x", static_cast<unsigned>(rng()));
  return "/unmask-" + model + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) + "-" +
         suffix;
}

StatusOr<ShmSegment> ShmSegment::Create(const std::string& name, std::size_t bytes, mode_t mode) {
  UNMASK_RETURN_IF_ERROR(ValidateName(name));
  if (bytes == 0) return InvalidArgumentError("shm segment '" + name + "': size must be positive");
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(name, "shm_open", errno);
  auto fail = [&](const char* call, int err) {
    Status s = ErrnoStatus(name, call, err);
    ::close(fd);
    ::shm_unlink(name.c_str());
    return s;
  };
  // Blocking: a loader scanning for leftovers may hold the lock of this (still empty) object for
  // a moment; it leaves fresh empty objects alone and lets go at once.
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return fail("flock", errno);
  }
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return fail("ftruncate", errno);
  const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc == ENOSPC) {
    Status s = fail("posix_fallocate", rc);
    return ResourceExhaustedError(s.message() + ": cannot reserve " + std::to_string(bytes) + " bytes" + ShmFreeText());
  }
  if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) return fail("posix_fallocate", rc);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail("mmap", errno);
  return ShmSegment(name, static_cast<std::uint8_t*>(p), bytes, /*writable=*/true, fd);
}

StatusOr<ShmSegment> ShmSegment::OpenReadOnly(const std::string& name) {
  UNMASK_RETURN_IF_ERROR(ValidateName(name));
  int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(name, "shm_open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoStatus(name, "fstat", errno);
    ::close(fd);
    return s;
  }
  if (st.st_size <= 0) {
    ::close(fd);
    return DataLossError("shm segment '" + name + "': is empty");
  }
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return ErrnoStatus(name, "mmap", err);
  return ShmSegment(name, static_cast<std::uint8_t*>(p), size, /*writable=*/false, /*owner_fd=*/-1);
}

namespace {
constexpr char kOwnedElsewhere[] = "is owned by a live process (its ownership lock is held)";
}  // namespace

StatusOr<ShmSegment> ShmSegment::OpenOwned(const std::string& name) {
  UNMASK_RETURN_IF_ERROR(ValidateName(name));
  int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(name, "shm_open", errno);
  auto fail = [&](Status s) {
    ::close(fd);
    return s;
  };
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return fail(FailedPreconditionError("shm segment '" + name + "' " + kOwnedElsewhere));
    if (errno != EINTR) return fail(ErrnoStatus(name, "flock", errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(ErrnoStatus(name, "fstat", errno));
  if (st.st_size <= 0) return fail(DataLossError("shm segment '" + name + "': is empty"));
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail(ErrnoStatus(name, "mmap", errno));
  return ShmSegment(name, static_cast<std::uint8_t*>(p), size, /*writable=*/false, fd);
}

// OpenOwned reports nothing else as FailedPrecondition (ErrnoStatus never maps to it).
bool ShmSegment::IsOwnedElsewhere(const Status& status) { return status.code() == StatusCode::kFailedPrecondition; }

Status ShmSegment::UnlinkName(const std::string& name) {
  UNMASK_RETURN_IF_ERROR(ValidateName(name));
  if (::shm_unlink(name.c_str()) != 0) return ErrnoStatus(name, "shm_unlink", errno);
  return OkStatus();
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    Reset();
    name_ = std::move(other.name_);
    data_ = other.data_;
    size_ = other.size_;
    writable_ = other.writable_;
    unlinked_ = other.unlinked_;
    fd_ = other.fd_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

ShmSegment::~ShmSegment() { Reset(); }

void ShmSegment::Reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);  // releases the ownership lock
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

Status ShmSegment::Unlink() {
  if (unlinked_) return OkStatus();
  if (name_.empty()) return FailedPreconditionError("shm segment: unlink of an empty segment handle");
  UNMASK_RETURN_IF_ERROR(UnlinkName(name_));
  unlinked_ = true;
  return OkStatus();
}

}  // namespace unmask::weights
