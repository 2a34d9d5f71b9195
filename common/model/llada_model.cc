#include "common/model/llada_model.h"

#include <ATen/ATen.h>

#include "common/model/layers.h"
#include "common/model/torch_util.h"
#include "common/segment/weight_view.h"

namespace unmask::model {

StatusOr<std::unique_ptr<LladaModel>> LladaModel::Load(const std::string& dir, const ModelOptions& options) {
  UNMASK_ASSIGN_OR_RETURN(auto config, checkpoint::LladaConfig::FromFile(dir + "/config.json"));
  UNMASK_ASSIGN_OR_RETURN(auto ckpt, checkpoint::Checkpoint::Open(dir));
  UNMASK_ASSIGN_OR_RETURN(c10::Device device, ParseDevice(options.device));
  std::shared_ptr<const checkpoint::Checkpoint> shared(std::move(ckpt));
  UNMASK_ASSIGN_OR_RETURN(auto weights, LoadLladaWeights(config, shared, options));
  return std::make_unique<LladaModel>(std::move(config), std::move(weights), options, device);
}

StatusOr<std::unique_ptr<LladaModel>> LladaModel::FromSegment(std::shared_ptr<const weights::AttachedModel> segment,
                                                            const ModelOptions& options) {
  UNMASK_ASSIGN_OR_RETURN(auto config, checkpoint::LladaConfig::FromJsonText(
                                           segment->manifest().config_json, "segment " + segment->segment().name() + " config"));
  UNMASK_ASSIGN_OR_RETURN(c10::Device device, ParseDevice(options.device));
  UNMASK_ASSIGN_OR_RETURN(auto weights, LoadLladaWeightsFromSegment(config, segment, options));
  return std::make_unique<LladaModel>(std::move(config), std::move(weights), options, device);
}

LladaModel::LladaModel(checkpoint::LladaConfig config, LladaWeights weights, ModelOptions options,
                       c10::Device device)
    : config_(std::move(config)), weights_(std::move(weights)), options_(std::move(options)), device_(device),
      rope_(MakeRotaryTables(std::max<std::int64_t>(1, config_.max_sequence_length), config_.rotary_dim(),
                             config_.rope_theta, device_)) {}

at::ScalarType LladaModel::compute_dtype() const { return ToScalarType(options_.precision); }

// The table may be kept in its storage type (bf16 computed in fp32): rows are widened as looked up.
at::Tensor LladaModel::Embed(const at::Tensor& ids) const {
  at::Tensor x = weights_.wte.Rows(ids);
  return x.scalar_type() == compute_dtype() ? x : x.to(compute_dtype());
}

at::Tensor LladaModel::Hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask) const {
  PackedSegment whole;
  whole.ids = input_ids;
  whole.attention_mask = attention_mask;
  return HiddenPacked({whole})[0];
}

at::Tensor LladaModel::HiddenFillCache(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                       KvCache* cache) const {
  TORCH_CHECK(cache != nullptr, "HiddenFillCache: no cache");
  PackedSegment whole;
  whole.ids = input_ids;
  whole.attention_mask = attention_mask;
  whole.cache = cache;
  return HiddenPacked({whole})[0];
}

at::Tensor LladaModel::HiddenSegment(const at::Tensor& segment_ids, std::int64_t offset, KvCache* cache) const {
  PackedSegment part;
  part.ids = segment_ids;
  part.whole = false;
  part.offset = offset;
  part.cache = cache;
  return HiddenPacked({part})[0];
}

at::Tensor LladaModel::HeadLogits(const at::Tensor& hidden) const {
  return weights_.lm_head.Apply(RmsNorm(hidden, weights_.ln_f, config_.rms_norm_eps));
}

at::Tensor LladaModel::Logits(const at::Tensor& input_ids, const at::Tensor& attention_mask) const {
  return HeadLogits(Hidden(input_ids, attention_mask));
}

}  // namespace unmask::model
