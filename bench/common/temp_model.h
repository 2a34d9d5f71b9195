// A random LLaDA-layout checkpoint that a benchmark writes for itself (when it is not given
// --model): <temp dir>/unmask-bench-<tag>-<pid>/<model id>, removed with the object.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/checkpoint/llada_config.h"
#include "common/util/status.h"
#include "tools/make_model/make_model.h"

namespace unmask::bench {

// MakeModelOptions for a random model of these sizes (n_heads query and KV heads; the rest as
// MakeModel's defaults: LLaDA's vocabulary, bf16, 2 shards).
tools::MakeModelOptions RandomModel(std::int64_t d_model, std::int64_t n_layers, std::int64_t n_heads,
                                    std::int64_t mlp_hidden_size);

// The shape of a random mixture-of-experts checkpoint (LLaDA-MoE or LLaDA2.x). Every layer is a
// MoE layer except the first `first_dense` (LLaDA2's first_k_dense_replace, LLaDA-MoE's
// moe_layer_freq 0), which get the dense SwiGLU MLP of `dense_hidden`.
struct MoeModelShape {
  checkpoint::Architecture architecture = checkpoint::Architecture::kLladaMoe;
  std::int64_t d_model = 256, n_layers = 4, n_heads = 4, n_kv_heads = 4;
  std::int64_t experts = 64, expert_hidden = 128, top_k = 8;
  std::int64_t shared_hidden = 0;  // the shared expert's width, 0 = none (LLaDA2: a multiple of expert_hidden)
  std::int64_t n_group = 1, topk_group = 1;  // LLaDA2's group-limited routing
  std::int64_t first_dense = 0, dense_hidden = 0;
};

// MakeModelOptions for a random MoE model of that shape, with the rest as the official configs
// have it (QK-norm; LLaDA2: partial rotary 0.5, expert bias, routed scaling 2.5) and LLaDA's
// vocabulary and special token ids (MakeModel's defaults: bf16, 2 shards).
tools::MakeModelOptions RandomMoeModel(const MoeModelShape& shape);

class TempModel {
 public:
  static StatusOr<std::unique_ptr<TempModel>> Make(const std::string& tag, const tools::MakeModelOptions& options,
                                                   const std::string& model_id = "model");
  ~TempModel();
  TempModel(const TempModel&) = delete;
  TempModel& operator=(const TempModel&) = delete;

  const std::string& root() const { return root_; }  // a model root holding dir()
  const std::string& dir() const { return dir_; }    // the checkpoint directory

 private:
  TempModel(std::string root, std::string dir) : root_(std::move(root)), dir_(std::move(dir)) {}
  std::string root_, dir_;
};

}  // namespace unmask::bench
