#include "tools/make_model/make_model.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/checkpoint/checkpoint_writer.h"
#include "tools/make_model/fast_init.h"
#include "tools/make_model/half_bits.h"

namespace unmask::tools {

Status MakeModel(const std::string& dir, const MakeModelOptions& o) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return FailedPreconditionError(dir + ": cannot create: " + ec.message());
  // Validate the config by parsing what we are about to write.
  UNMASK_ASSIGN_OR_RETURN(auto config, checkpoint::LladaConfig::FromJsonText(o.config.ToJsonText(), "config"));
  if (!(o.head_scale > 0.0f) || !std::isfinite(o.head_scale))
    return InvalidArgumentError("head_scale must be a finite number > 0, got " + std::to_string(o.head_scale));
  if (o.head_scale != 1.0f && config.weight_tying)
    return InvalidArgumentError("head_scale: a tied model's LM head is its embedding table; untie it (weight_tying false)");
  if (o.dtype != checkpoint::DType::kBF16 && o.dtype != checkpoint::DType::kF16 && o.dtype != checkpoint::DType::kF32)
    return InvalidArgumentError("dtype must be BF16, F16 or F32");
  {
    std::ofstream out(dir + "/config.json");
    out << config.ToJsonText();
    if (!out) return InternalError(dir + "/config.json: write failed");
  }
  std::vector<checkpoint::TensorSpec> specs;
  for (const auto& t : checkpoint::ExpectedTensors(config)) specs.push_back({t.name, o.dtype, t.shape});

  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.f, o.init_std);
  std::vector<float> values;
  auto fill = [&](const checkpoint::TensorSpec& spec, std::uint8_t* dst) {
    const std::size_t n = spec.nbytes() / checkpoint::DTypeSize(spec.dtype);
    values.resize(n);
    const bool is_norm = spec.shape.size() == 1;
    for (auto& v : values) v = is_norm ? 1.0f : normal(rng);
    const bool is_head = spec.name == "model.transformer.ff_out.weight";
    if (is_head && o.head_scale != 1.0f)
      for (auto& v : values) v *= o.head_scale;
    if (is_head && o.active_vocab > 0 && o.active_vocab < spec.shape[0]) {
      std::fill(values.begin() + o.active_vocab * spec.shape[1], values.end(), 0.0f);
    }
    if (spec.dtype == checkpoint::DType::kF32) {
      std::memcpy(dst, values.data(), n * 4);
      return;
    }
    auto* out = reinterpret_cast<std::uint16_t*>(dst);
    for (std::size_t i = 0; i < n; ++i) out[i] = FloatToHalfBits(values[i], spec.dtype);
  };
  const checkpoint::TensorFiller filler = o.fast_init ? MakeFastFiller(o, specs) : checkpoint::TensorFiller(fill);
  UNMASK_RETURN_IF_ERROR(checkpoint::WriteShardedCheckpoint(dir, specs, o.shards, filler));
  if (!o.tokenizer.empty()) {
    std::filesystem::copy_file(o.tokenizer, dir + "/tokenizer.json", std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return NotFoundError(o.tokenizer + ": cannot copy: " + ec.message());
  }
  return OkStatus();
}

}  // namespace unmask::tools
