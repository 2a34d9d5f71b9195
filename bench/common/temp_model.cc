#include "bench/common/temp_model.h"
#include "common/util/remove_tree.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace unmask::bench {

tools::MakeModelOptions RandomModel(std::int64_t d_model, std::int64_t n_layers, std::int64_t n_heads,
                                    std::int64_t mlp_hidden_size) {
  tools::MakeModelOptions mo;
  mo.config.d_model = d_model;
  mo.config.n_layers = n_layers;
  mo.config.n_heads = mo.config.n_kv_heads = n_heads;
  mo.config.mlp_hidden_size = mlp_hidden_size;
  return mo;
}

tools::MakeModelOptions RandomMoeModel(const MoeModelShape& s) {
  tools::MakeModelOptions mo;
  checkpoint::LladaConfig& c = mo.config;
  const bool llada2 = s.architecture == checkpoint::Architecture::kLlada2Moe;
  c.architecture = s.architecture;
  c.d_model = s.d_model;
  c.n_layers = s.n_layers;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_kv_heads;
  c.mlp_hidden_size = s.dense_hidden;
  c.qk_norm = true;
  c.partial_rotary_factor = llada2 ? 0.5 : 1.0;
  checkpoint::MoeConfig& m = c.moe;
  m.num_experts = s.experts;
  m.top_k = s.top_k;
  m.expert_hidden_size = s.expert_hidden;
  m.shared_hidden_size = s.shared_hidden;
  m.n_group = s.n_group;
  m.topk_group = s.topk_group;
  m.routed_scaling_factor = llada2 ? 2.5 : 1.0;
  m.expert_bias = llada2;  // LLaDA2's gate always has one; the published LLaDA-MoE has none
  for (std::int64_t i = 0; i < s.n_layers; ++i) m.moe_layers.push_back(i >= s.first_dense);
  return mo;
}

StatusOr<std::unique_ptr<TempModel>> TempModel::Make(const std::string& tag, const tools::MakeModelOptions& options,
                                                     const std::string& model_id) {
  namespace fs = std::filesystem;
  const std::string root =
      (fs::temp_directory_path() / ("unmask-bench-" + tag + "-" + std::to_string(::getpid()))).string();
  std::unique_ptr<TempModel> model(new TempModel(root, root + "/" + model_id));
  UNMASK_RETURN_IF_ERROR(tools::MakeModel(model->dir(), options));  // on failure, ~TempModel cleans up
  return model;
}

TempModel::~TempModel() {
  std::error_code ec;
  unmask::util::RemoveTree(root_);
}

}  // namespace unmask::bench
