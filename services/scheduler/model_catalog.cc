#include "services/scheduler/model_catalog.h"

#include <sys/stat.h>

#include <algorithm>

namespace unmask::scheduler {
namespace {

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool SafeName(const std::string& model) {
  return !model.empty() && model.find('/') == std::string::npos && model != "." && model != "..";
}

}  // namespace

StatusOr<checkpoint::LladaConfig> ModelCatalog::Config(const std::string& model,
                                                       const std::vector<ExecutorSnapshot>& executors) {
  for (const auto& e : executors) {
    if (e.healthy && !e.model_config_json.empty() &&
        std::find(e.models.begin(), e.models.end(), model) != e.models.end()) {
      return checkpoint::LladaConfig::FromJsonText(e.model_config_json, "executor " + e.address + " config");
    }
  }
  if (SafeName(model)) {
    for (const auto& root : roots_) {
      const std::string path = root + "/" + model + "/config.json";
      if (IsFile(path)) return checkpoint::LladaConfig::FromFile(path);
    }
  }
  return NotFoundError("model: no executor serves '" + model + "' and no model root holds it").WithField("model");
}

StatusOr<std::shared_ptr<const tokenizer::Tokenizer>> ModelCatalog::Tokenizer(const std::string& model) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tokenizers_.find(model);
  if (it != tokenizers_.end()) return it->second;
  std::shared_ptr<const tokenizer::Tokenizer> tok;
  if (SafeName(model)) {
    for (const auto& root : roots_) {
      const std::string dir = root + "/" + model;
      if (!tokenizer::Tokenizer::DirectoryHasTokenizer(dir)) continue;
      UNMASK_ASSIGN_OR_RETURN(auto loaded, tokenizer::Tokenizer::FromDirectory(dir));
      tok = std::move(loaded);
      break;
    }
  }
  tokenizers_[model] = tok;
  return tok;
}

StatusOr<std::shared_ptr<const tokenizer::CheckpointChatTemplate>> ModelCatalog::ChatTemplate(const std::string& model) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = chat_templates_.find(model);
  if (it != chat_templates_.end()) return it->second;
  std::shared_ptr<const tokenizer::CheckpointChatTemplate> found;
  if (SafeName(model)) {
    for (const auto& root : roots_) {  // the root whose tokenizer the model uses
      if (!tokenizer::Tokenizer::DirectoryHasTokenizer(root + "/" + model)) continue;
      UNMASK_ASSIGN_OR_RETURN(found, tokenizer::CheckpointChatTemplate::FromTokenizerConfig(
                                         root + "/" + model + "/tokenizer_config.json"));
      break;
    }
  }
  chat_templates_[model] = found;
  return found;
}

}  // namespace unmask::scheduler
