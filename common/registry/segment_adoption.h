// Finding the weight segments a previous loader left in shared memory (it was killed, crashed,
// or exited with --keep-segments-on-exit) and adopting them, so that a restarted loader serves
// them again without reading any checkpoint.
//
// A leftover is considered only when its ownership lock is free (see ShmSegment): a segment
// whose owner still runs is never touched. A free one is then
//   - adopted when it is complete and valid: header and manifest checked exactly as an executor
//     checks them when it attaches, plus every tensor config.json needs present;
//   - removed (unlinked) when it is partial or corrupt: nobody owns it and nobody can attach;
//   - skipped when it is complete but was loaded from outside our model roots (another loader's).
// Scanning lists `shm_dir` (Linux keeps POSIX shared memory there) for names with the prefix.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/registry/progressive_loader.h"
#include "common/quant/quant_policy.h"

namespace unmask::weights {

struct LeftoverScanOptions {
  std::string shm_dir = "/dev/shm";
  std::string name_prefix = "unmask-";  // file names in shm_dir (segment names without the '/')
  // Adopt only models whose manifest source_dir lies under one of these; empty: any model.
  std::vector<std::string> model_roots;
  // false: complete leftovers of our model roots are removed instead of adopted.
  bool adopt = true;
  // An empty object younger than this may be a segment being created right now: left alone.
  std::chrono::seconds empty_grace{10};
};

struct AdoptedSegment {
  std::shared_ptr<LoadedModel> model;  // the segment (holding its ownership lock) and manifest
  PrecisionSpec precision;
};

// One segment that was not adopted, and why.
struct LeftoverNote {
  std::string segment;  // "/unmask-..."
  std::string reason;
};

struct LeftoverScan {
  std::vector<AdoptedSegment> adopted;  // at most one per model id
  std::vector<LeftoverNote> removed;    // unlinked
  std::vector<LeftoverNote> skipped;    // left as they are
  Status error;                         // the directory could not be listed
};

LeftoverScan ScanLeftoverSegments(const LeftoverScanOptions& options);

// Checks a mapped segment the way an attacher would, plus completeness against its config.json:
// DataLoss naming the segment (and the missing tensor) when it is not a complete model.
StatusOr<Manifest> ValidateCompleteSegment(const ShmSegment& segment);

}  // namespace unmask::weights
