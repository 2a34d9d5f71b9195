#include "common/segment/segment_format.h"

#include <cstring>

namespace unmask::weights {

SegmentPlan PlanSegment(Manifest& manifest) {
  manifest.totals = manifest.ComputeTotals();
  SegmentPlan plan;
  manifest.data_offset = kSegmentDataAlignment;
  // The offsets' digits are part of the JSON; page rounding makes this settle in one or two rounds.
  for (;;) {
    manifest.segment_bytes = manifest.data_offset + manifest.totals.data_bytes;
    plan.manifest_json = manifest.ToJson();
    const std::uint64_t needed = AlignUp(sizeof(SegmentHeader) + plan.manifest_json.size(), kSegmentDataAlignment);
    if (needed <= manifest.data_offset) break;
    manifest.data_offset = needed;
  }
  plan.data_offset = manifest.data_offset;
  plan.segment_bytes = manifest.segment_bytes;
  return plan;
}

void WriteSegmentHeader(std::uint8_t* base, const SegmentPlan& plan, std::uint64_t data_bytes) {
  SegmentHeader h{};
  std::memcpy(h.magic, kSegmentMagic, sizeof(h.magic));
  h.version = kSegmentFormatVersion;
  h.state = static_cast<std::uint32_t>(SegmentState::kWriting);
  h.manifest_offset = sizeof(SegmentHeader);
  h.manifest_bytes = plan.manifest_json.size();
  h.data_offset = plan.data_offset;
  h.data_bytes = data_bytes;
  h.segment_bytes = plan.segment_bytes;
  std::memcpy(base, &h, sizeof(h));
  std::memcpy(base + h.manifest_offset, plan.manifest_json.data(), plan.manifest_json.size());
}

void MarkSegmentReady(std::uint8_t* base) {
  auto* header = reinterpret_cast<SegmentHeader*>(base);
  __atomic_store_n(&header->state, static_cast<std::uint32_t>(SegmentState::kReady), __ATOMIC_RELEASE);
}

StatusOr<Manifest> ReadSegmentManifest(const std::uint8_t* base, std::size_t size, const std::string& segment_name) {
  auto corrupt = [&](const std::string& why) { return DataLossError("segment '" + segment_name + "': " + why); };
  if (size < sizeof(SegmentHeader))
    return corrupt("smaller than the segment header (" + std::to_string(size) + " bytes)");
  SegmentHeader h;
  std::memcpy(&h, base, sizeof(h));
  if (std::memcmp(h.magic, kSegmentMagic, sizeof(h.magic)) != 0)
    return corrupt("not an unmask weight segment (bad magic)");
  if (h.version != kSegmentFormatVersion)
    return corrupt("format version " + std::to_string(h.version) + " is not supported (expected " +
                   std::to_string(kSegmentFormatVersion) + ")");
  const auto* header = reinterpret_cast<const SegmentHeader*>(base);
  const std::uint32_t state = __atomic_load_n(&header->state, __ATOMIC_ACQUIRE);
  if (state != static_cast<std::uint32_t>(SegmentState::kReady))
    return UnavailableError("segment '" + segment_name + "': not ready (still being written, or its loader failed)");
  if (h.segment_bytes != size) {
    return corrupt("header says " + std::to_string(h.segment_bytes) + " bytes but the segment has " +
                   std::to_string(size));
  }
  if (h.manifest_offset != sizeof(SegmentHeader) || h.manifest_bytes > size ||
      h.manifest_offset + h.manifest_bytes > h.data_offset || h.data_offset > size ||
      h.data_bytes > size - h.data_offset) {
    return corrupt("header regions are inconsistent with the segment size");
  }
  const char* json = reinterpret_cast<const char*>(base + h.manifest_offset);
  auto manifest = Manifest::FromJson(std::string(json, h.manifest_bytes));
  if (!manifest.ok()) return corrupt(manifest.status().message());
  if (manifest->data_offset != h.data_offset || manifest->totals.data_bytes != h.data_bytes ||
      manifest->segment_bytes != h.segment_bytes) {
    return corrupt("manifest and header disagree on the data region");
  }
  return manifest;
}

}  // namespace unmask::weights
