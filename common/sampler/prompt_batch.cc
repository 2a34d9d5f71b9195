#include "common/sampler/generation_params.h"

#include <cmath>

namespace unmask::sampler {

StatusOr<Remasking> ParseRemasking(const std::string& text) {
  if (text == "low_confidence") return Remasking::kLowConfidence;
  if (text == "random") return Remasking::kRandom;
  return InvalidArgumentError("remasking '" + text + "' is not one of low_confidence, random");
}

const char* RemaskingName(Remasking r) { return r == Remasking::kRandom ? "random" : "low_confidence"; }

Status ValidateParams(const GenerationParams& p, const checkpoint::LladaConfig& config, std::int64_t prompt_length) {
  auto bad = [](const std::string& m) { return InvalidArgumentError(m); };
  if (p.gen_length < 1) return bad("gen_length must be >= 1, got " + std::to_string(p.gen_length));
  if (p.block_length < 1) return bad("block_length must be >= 1, got " + std::to_string(p.block_length));
  if (p.steps < 1) return bad("steps must be >= 1, got " + std::to_string(p.steps));
  if (p.gen_length % p.block_length != 0)
    return bad("gen_length (" + std::to_string(p.gen_length) + ") must be divisible by block_length (" +
               std::to_string(p.block_length) + ")");
  const std::int64_t num_blocks = p.gen_length / p.block_length;
  if (p.steps % num_blocks != 0)
    return bad("steps (" + std::to_string(p.steps) + ") must be divisible by the number of blocks (gen_length / block_length = " +
               std::to_string(num_blocks) + ")");
  if (p.steps > p.gen_length)
    return bad("steps (" + std::to_string(p.steps) + ") must be <= gen_length (" + std::to_string(p.gen_length) + ")");
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    return bad("temperature must be a finite number >= 0");
  if (!std::isfinite(p.cfg_scale) || p.cfg_scale < 0) return bad("cfg_scale must be a finite number >= 0");
  auto in_vocab = [&](const char* name, std::int64_t id) -> Status {
    if (id < 0 || id >= config.embedding_size)
      return bad(std::string(name) + " (" + std::to_string(id) + ") must be in [0, " + std::to_string(config.embedding_size) + ")");
    return OkStatus();
  };
  UNMASK_RETURN_IF_ERROR(in_vocab("mask_id", p.mask_id));
  // EOS and EOT index the logits only under the EOS switches; elsewhere they are only compared
  // with generated ids, so a checkpoint whose vocabulary lacks LLaDA-8B's ids still generates.
  if (p.logits_eos_inf || p.confidence_eos_eot_inf) UNMASK_RETURN_IF_ERROR(in_vocab("eos_id", p.eos_id));
  if (p.confidence_eos_eot_inf) UNMASK_RETURN_IF_ERROR(in_vocab("eot_id", p.eot_id));
  if (prompt_length + p.gen_length > config.max_sequence_length)
    return bad("prompt length + gen_length (" + std::to_string(prompt_length + p.gen_length) +
               ") exceeds the model's max_sequence_length (" + std::to_string(config.max_sequence_length) + ")");
  return OkStatus();
}

StatusOr<PromptBatch> NormalizePromptBatch(const PromptBatch& batch, std::int64_t pad_id, std::int64_t vocab_size) {
  if (batch.ids.empty()) return InvalidArgumentError("prompt batch is empty");
  const bool has_mask = !batch.attention_mask.empty();
  if (has_mask && batch.attention_mask.size() != batch.ids.size())
    return InvalidArgumentError("attention_mask has " + std::to_string(batch.attention_mask.size()) +
                                " rows but the batch has " + std::to_string(batch.ids.size()));
  std::size_t longest = 0;
  for (std::size_t r = 0; r < batch.ids.size(); ++r) {
    longest = std::max(longest, batch.ids[r].size());
    for (auto id : batch.ids[r]) {
      if (id < 0 || id >= vocab_size)
        return InvalidArgumentError("prompt row " + std::to_string(r) + ": token id " + std::to_string(id) +
                                    " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    }
    if (has_mask && batch.attention_mask[r].size() != batch.ids[r].size())
      return InvalidArgumentError("attention_mask row " + std::to_string(r) + " has a different length than its prompt");
  }
  PromptBatch out;
  bool needs_mask = has_mask;
  for (const auto& row : batch.ids) needs_mask |= row.size() != longest;
  for (std::size_t r = 0; r < batch.ids.size(); ++r) {
    const std::size_t pad = longest - batch.ids[r].size();
    std::vector<std::int64_t> ids(pad, pad_id);
    ids.insert(ids.end(), batch.ids[r].begin(), batch.ids[r].end());
    out.ids.push_back(std::move(ids));
    if (needs_mask) {
      std::vector<std::int64_t> mask(pad, 0);
      if (has_mask) {
        mask.insert(mask.end(), batch.attention_mask[r].begin(), batch.attention_mask[r].end());
      } else {
        mask.insert(mask.end(), batch.ids[r].size(), 1);
      }
      out.attention_mask.push_back(std::move(mask));
    }
  }
  return out;
}

}  // namespace unmask::sampler
