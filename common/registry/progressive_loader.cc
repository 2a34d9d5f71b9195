#include "common/registry/progressive_loader.h"

#include <fstream>
#include <sstream>

#include "common/segment/layout.h"
#include "common/segment/segment_format.h"
#include "common/registry/tensor_store.h"

namespace unmask::weights {

using checkpoint::Checkpoint;
using checkpoint::LladaConfig;
using checkpoint::TensorRef;

const char* LoadPhaseName(LoadPhase phase) {
  switch (phase) {
    case LoadPhase::kValidating:
      return "validating";
    case LoadPhase::kPlanning:
      return "planning";
    case LoadPhase::kStreaming:
      return "streaming";
    case LoadPhase::kPublishing:
      return "publishing";
    case LoadPhase::kDone:
      return "done";
  }
  return "?";
}

namespace {

// Unlinks the segment unless the load got through to the end.
class UnlinkUnlessReleased {
 public:
  explicit UnlinkUnlessReleased(ShmSegment* segment) : segment_(segment) {}
  ~UnlinkUnlessReleased() {
    if (segment_ != nullptr) (void)segment_->Unlink();
  }
  void Release() { segment_ = nullptr; }

 private:
  ShmSegment* segment_;
};

std::string ReadConfigText(const Checkpoint& ckpt, const LladaConfig& config) {
  // LLaDA-MoE / LLaDA2.x config.json files lack the mask and EOS ids (the tokenizer has them):
  // the parsed config, written back with them, is what the segment carries.
  if (config.architecture != checkpoint::Architecture::kLlada) return config.ToJsonText();
  std::ifstream in(ckpt.dir() + "/config.json");
  if (!in) return config.ToJsonText();
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

StatusOr<LoadedModel> LoadIntoSegment(const Checkpoint& ckpt, const LladaConfig& config, const PrecisionSpec& spec,
                                      const std::string& model_id, const LoadProgressFn& progress,
                                      const LoadOptions& options) {
  LoadProgress p;
  auto report = [&](LoadPhase phase) -> Status {
    p.phase = phase;
    if (progress && !progress(p)) {
      return CancelledError("loading '" + model_id + "' was cancelled (" + LoadPhaseName(phase) + ", " +
                            std::to_string(p.tensors_done) + "/" + std::to_string(p.tensors_total) + " tensors)");
    }
    return OkStatus();
  };
  const auto expected = checkpoint::ExpectedTensors(config);
  p.tensors_total = static_cast<std::int64_t>(expected.size());
  UNMASK_RETURN_IF_ERROR(report(LoadPhase::kValidating));
  UNMASK_RETURN_IF_ERROR(checkpoint::ValidateCheckpoint(config, ckpt));

  UNMASK_RETURN_IF_ERROR(report(LoadPhase::kPlanning));
  std::vector<LayoutInput> inputs;
  std::vector<TensorRef> refs;
  for (const auto& t : expected) {
    UNMASK_ASSIGN_OR_RETURN(TensorRef ref, ckpt.Find(t.name));
    inputs.push_back({t.name, t.shape, ref.info->dtype});
    refs.push_back(ref);
    p.bytes_total += ref.info->nbytes;
  }
  UNMASK_ASSIGN_OR_RETURN(Manifest manifest, PlanLayout(inputs, spec));
  manifest.model_id = model_id;
  manifest.source_dir = ckpt.dir();
  manifest.config_json = ReadConfigText(ckpt, config);
  const SegmentPlan plan = PlanSegment(manifest);

  const std::string name = options.segment_name.empty() ? ShmSegment::MakeName(model_id) : options.segment_name;
  UNMASK_ASSIGN_OR_RETURN(ShmSegment segment, ShmSegment::Create(name, plan.segment_bytes, options.segment_mode));
  UnlinkUnlessReleased guard(&segment);
  std::uint8_t* base = segment.mutable_data();
  WriteSegmentHeader(base, plan, manifest.totals.data_bytes);
  std::uint8_t* data = base + plan.data_offset;

  TensorWriter writer(options.chunk_elems);
  for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
    const TensorEntry& entry = manifest.tensors[i];
    const TensorRef& ref = refs[i];
    p.current_tensor = entry.name;
    UNMASK_RETURN_IF_ERROR(report(LoadPhase::kStreaming));
    TensorWriter::SourceDone drop;
    if (options.drop_source_pages) {
      drop = [&](std::uint64_t begin, std::uint64_t end) {
        ref.file->file().DropPages(ref.info->offset + begin, end - begin);
      };
    }
    Status s = writer.Write(entry, ref.data(), data, drop);
    if (!s.ok()) return s.WithContext(ref.file->path());
    p.tensors_done = static_cast<std::int64_t>(i) + 1;
    p.bytes_done += ref.info->nbytes;
  }
  p.current_tensor.clear();
  UNMASK_RETURN_IF_ERROR(report(LoadPhase::kPublishing));
  MarkSegmentReady(base);
  UNMASK_RETURN_IF_ERROR(report(LoadPhase::kDone));
  guard.Release();
  return LoadedModel{std::move(segment), std::move(manifest), {}};
}

StatusOr<LoadedModel> LoadModelDir(const std::string& dir, const PrecisionSpec& spec, const std::string& model_id,
                                   const LoadProgressFn& progress, const LoadOptions& options) {
  UNMASK_ASSIGN_OR_RETURN(LladaConfig config, LladaConfig::FromFile(dir + "/config.json"));
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::Open(dir));
  return LoadIntoSegment(*ckpt, config, spec, model_id, progress, options);
}

}  // namespace unmask::weights
