// A POSIX shared-memory object, mapped whole (RAII: the mapping is removed on destruction; the
// name stays until Unlink, and the memory until the last process unmaps it).
//
// Ownership lock: the process that owns a segment (its writer, or a loader that adopted it)
// keeps the object's fd open with flock(LOCK_EX) for as long as the handle lives, so the lock
// goes exactly when the owner does (exit, SIGKILL or crash). A restarted loader adopts a
// leftover segment only if it can take that lock (OpenOwned); pids are useless for this in
// containers, where every loader is pid 1. Attachers (OpenReadOnly) never lock.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/util/status.h"

namespace unmask::weights {

class ShmSegment {
 public:
  // Creates a new object (fails with AlreadyExists if the name is taken), sizes it and maps it
  // read-write. Its tmpfs blocks are reserved up front (posix_fallocate) so that a /dev/shm too
  // small for the model fails here with ResourceExhausted, not with SIGBUS halfway through a
  // load. On failure nothing is left behind under `name`.
  static StatusOr<ShmSegment> Create(const std::string& name, std::size_t bytes, mode_t mode = 0600);
  // Maps an existing object read-only (PROT_READ, MAP_SHARED).
  static StatusOr<ShmSegment> OpenReadOnly(const std::string& name);
  // Takes over an existing object whose owner is gone: maps it read-only and holds its ownership
  // lock from now on. FailedPrecondition (IsOwnedElsewhere) when a live process holds the lock.
  static StatusOr<ShmSegment> OpenOwned(const std::string& name);
  // True for the status OpenOwned returns when another process owns the segment.
  static bool IsOwnedElsewhere(const Status& status);

  // Names are "/" followed by 1..250 characters of [A-Za-z0-9._-] (no other '/', not "."/"..").
  static Status ValidateName(const std::string& name);
  // "/unmask-<model>-<pid>-<n>-<random>": the model id reduced to [A-Za-z0-9._-] (anything else becomes
  // '_', at most 96 characters) and n counting the names made by this process.
  static std::string MakeName(const std::string& model_id);
  // Removes a name without mapping it (e.g. the segment of a loader that died).
  static Status UnlinkName(const std::string& name);

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  // Removes the name so that no new process can attach; existing mappings stay valid.
  Status Unlink();

  bool valid() const { return data_ != nullptr; }
  const std::string& name() const { return name_; }
  std::size_t size() const { return size_; }
  const std::uint8_t* data() const { return data_; }
  // nullptr for a read-only mapping.
  std::uint8_t* mutable_data() const { return writable_ ? data_ : nullptr; }
  bool writable() const { return writable_; }
  bool unlinked() const { return unlinked_; }
  // Whether this handle holds the segment's ownership lock (Create and OpenOwned handles do).
  bool owner() const { return fd_ >= 0; }

 private:
  ShmSegment(std::string name, std::uint8_t* data, std::size_t size, bool writable, int owner_fd)
      : name_(std::move(name)), data_(data), size_(size), writable_(writable), fd_(owner_fd) {}
  void Reset();

  std::string name_;
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool writable_ = false;
  bool unlinked_ = false;
  int fd_ = -1;  // holds the ownership lock (flock LOCK_EX); -1 for attachers
};

}  // namespace unmask::weights
