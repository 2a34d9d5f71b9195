#include "common/sampler/sampler_params.h"

#include <algorithm>

namespace unmask::sampler {

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
  out.canvas = batch.canvas;
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
