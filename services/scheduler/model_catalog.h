// What the scheduler knows about each model: its config (from the executors serving it, or from
// config.json under a model root), its tokenizer (under a model root) and the chat
// template it ships (tokenizer_config.json beside it).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/tokenizer/checkpoint_chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "services/scheduler/dispatch_policy.h"

namespace unmask::scheduler {

class ModelCatalog {
 public:
  explicit ModelCatalog(std::vector<std::string> model_roots) : roots_(std::move(model_roots)) {}

  // NotFound when no executor serves the model and no model root holds it.
  StatusOr<checkpoint::LladaConfig> Config(const std::string& model, const std::vector<ExecutorSnapshot>& executors);
  // nullptr (not an error) when the model has no tokenizer under a model root (tokenizer.json, or a
  // slow tokenizer's vocab.json + merges.txt: Tokenizer::FromDirectory).
  StatusOr<std::shared_ptr<const tokenizer::Tokenizer>> Tokenizer(const std::string& model);
  // nullptr (not an error) when the model ships no chat template (then the built-in ones apply).
  StatusOr<std::shared_ptr<const tokenizer::CheckpointChatTemplate>> ChatTemplate(const std::string& model);

 private:
  std::vector<std::string> roots_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const tokenizer::Tokenizer>> tokenizers_;
  std::map<std::string, std::shared_ptr<const tokenizer::CheckpointChatTemplate>> chat_templates_;
};

}  // namespace unmask::scheduler
