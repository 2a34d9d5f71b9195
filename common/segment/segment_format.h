// Byte layout of a weight segment (the shm object one loaded model lives in):
//   [0, 64)                         SegmentHeader
//   [64, 64 + manifest_bytes)       the manifest as JSON (not NUL-terminated)
//   [data_offset, + data_bytes)     the data region; data_offset is a multiple of 4096, so
//                                   every 64-aligned tensor offset is 64-aligned in memory too
// The manifest lives inside the segment rather than in a second one: one name to pass to
// executors, one object to unlink, and a manifest can never be paired with the wrong data.
// The writer fills header, manifest and data, then stores state = kReady last (release); an
// attacher refuses a segment that is not ready (a load in progress, or one that died midway).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/util/status.h"
#include "common/segment/manifest.h"

namespace unmask::weights {

inline constexpr char kSegmentMagic[8] = {'U', 'N', 'M', 'A', 'S', 'K', 'W', '1'};
inline constexpr std::uint32_t kSegmentFormatVersion = 1;
inline constexpr std::uint64_t kSegmentDataAlignment = 4096;

enum class SegmentState : std::uint32_t { kWriting = 0, kReady = 1 };

struct SegmentHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t state;  // SegmentState, accessed atomically
  std::uint64_t manifest_offset;
  std::uint64_t manifest_bytes;
  std::uint64_t data_offset;
  std::uint64_t data_bytes;
  std::uint64_t segment_bytes;
  std::uint64_t reserved;
};
static_assert(sizeof(SegmentHeader) == 64, "the header is one cache line");

struct SegmentPlan {
  std::string manifest_json;
  std::uint64_t data_offset = 0;
  std::uint64_t segment_bytes = 0;
};

// Places the data region after the manifest: sets manifest.data_offset and segment_bytes (which
// are part of the JSON, hence the fixed point) and returns the serialized manifest.
SegmentPlan PlanSegment(Manifest& manifest);

// Writes header (state kWriting) and manifest to the start of a segment of plan.segment_bytes.
void WriteSegmentHeader(std::uint8_t* base, const SegmentPlan& plan, std::uint64_t data_bytes);
// Publishes the segment: everything written before becomes visible to attachers that see kReady.
void MarkSegmentReady(std::uint8_t* base);

// Checks the header of a mapped segment of `size` bytes and parses its manifest. Errors name
// `segment_name`: DataLoss for a foreign or corrupt segment, Unavailable while not ready.
StatusOr<Manifest> ReadSegmentManifest(const std::uint8_t* base, std::size_t size, const std::string& segment_name);

}  // namespace unmask::weights
