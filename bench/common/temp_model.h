// A random LLaDA-layout checkpoint that a benchmark writes for itself (when it is not given
// --model): <temp dir>/unmask-bench-<tag>-<pid>/<model id>, removed with the object.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/util/status.h"
#include "tools/make_model/make_model.h"

namespace unmask::bench {

// MakeModelOptions for a random model of these sizes (n_heads query and KV heads; the rest as
// MakeModel's defaults: LLaDA's vocabulary, bf16, 2 shards).
tools::MakeModelOptions RandomModel(std::int64_t d_model, std::int64_t n_layers, std::int64_t n_heads,
                                    std::int64_t mlp_hidden_size);

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
