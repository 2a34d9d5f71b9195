#include "common/memory/sampler_kind.h"

namespace unmask::memory {
namespace {

// The rule part of a mode name: "", "threshold" or "factor".
std::string RuleOf(const std::string& mode) {
  const auto plus = mode.find('+');
  if (plus != std::string::npos) return mode.substr(plus + 1);
  if (mode == "threshold" || mode == "factor") return mode;
  return "";
}

}  // namespace

const char* SamplerKindName(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::kReference: return "reference";
    case SamplerKind::kBlockLogits: return "block_logits";
    case SamplerKind::kPrefixCache: return "prefix_cache";
    case SamplerKind::kDualCache: return "dual_cache";
  }
  return "reference";
}

const std::vector<std::string>& SamplerModeNames() {
  static const std::vector<std::string> kNames = {
      "reference",          "block_logits", "prefix_cache",          "dual_cache",          "threshold",
      "prefix_cache+threshold", "dual_cache+threshold", "factor", "prefix_cache+factor", "dual_cache+factor",
  };
  return kNames;
}

StatusOr<SamplerKind> SamplerKindOf(const std::string& mode) {
  if (mode == "reference") return SamplerKind::kReference;
  if (mode == "block_logits" || mode == "threshold" || mode == "factor" || mode == "block_logits+threshold" ||
      mode == "block_logits+factor")
    return SamplerKind::kBlockLogits;
  if (mode == "prefix_cache" || mode == "prefix_cache+threshold" || mode == "prefix_cache+factor")
    return SamplerKind::kPrefixCache;
  if (mode == "dual_cache" || mode == "dual_cache+threshold" || mode == "dual_cache+factor")
    return SamplerKind::kDualCache;
  std::string names;
  for (const auto& n : SamplerModeNames()) names += (names.empty() ? "" : ", ") + n;
  return InvalidArgumentError("sampler mode '" + mode + "' is not one of " + names);
}

std::string WithSamplerKind(const std::string& mode, SamplerKind kind) {
  const std::string rule = RuleOf(mode);
  switch (kind) {
    case SamplerKind::kReference: return "reference";
    case SamplerKind::kBlockLogits: return rule.empty() ? "block_logits" : rule;
    case SamplerKind::kPrefixCache: return rule.empty() ? "prefix_cache" : "prefix_cache+" + rule;
    case SamplerKind::kDualCache: return rule.empty() ? "dual_cache" : "dual_cache+" + rule;
  }
  return mode;
}

}  // namespace unmask::memory
