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
