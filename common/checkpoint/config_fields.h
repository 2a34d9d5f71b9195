// Reading config.json fields with errors that name the field: shared by the parsers of every
// architecture (llada_config.cc for dense LLaDA, moe_config.cc for LLaDA-MoE and LLaDA2.x).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/util/status.h"

namespace unmask::checkpoint::config_fields {

using nlohmann::json;

// Upper bounds on the sizes a config.json may give, far above any LLaDA-style model, so that
// every product the loader and the memory model compute (parameter counts, tensor byte sizes)
// fits in 64 bits and a hostile config cannot make them allocate the impossible.
constexpr std::int64_t kMaxDModel = 1 << 20;  // also bounds n_heads, n_kv_heads, head_dim
constexpr std::int64_t kMaxMlpHiddenSize = 1 << 22;
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxVocab = 1 << 24;  // vocab_size and embedding_size
constexpr std::int64_t kMaxSequence = 1 << 24;  // max_sequence_length
constexpr std::int64_t kMaxExperts = 1 << 16;  // num_experts
// Experts over all MoE layers (LLaDA2.0-flash: 256 x 31), which bounds the tensor list's length.
constexpr std::int64_t kMaxExpertInstances = 1 << 16;

// Reads `key` into `out` when present and not null; absent or null keeps `out` (or is an error
// when `required`). A value of the wrong JSON type is an error naming the key.
template <typename T>
Status ReadField(const json& j, const char* key, T& out, const std::string& source, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? InvalidArgumentError(source + ": missing field '" + key + "'") : OkStatus();
  }
  try {
    if constexpr (std::is_same_v<T, bool>) {
      if (!it->is_boolean()) throw std::runtime_error("");
    } else if constexpr (std::is_integral_v<T>) {
      if (!it->is_number_integer()) throw std::runtime_error("");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!it->is_number()) throw std::runtime_error("");
    } else {
      if (!it->is_string()) throw std::runtime_error("");
    }
    out = it->get<T>();
  } catch (const std::exception&) {
    return InvalidArgumentError(source + ": field '" + key + "' has the wrong type");
  }
  return OkStatus();
}

// A feature that must be off (or equal a fixed value): refused by name, never ignored.
template <typename T>
Status Refuse(const json& j, const char* key, const T& supported, const std::string& source, const char* why) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return OkStatus();
  // Compared as JSON values: it->get<T>() of a number out of T's range (a block_group_size of
  // 1e20 read as int) is undefined behaviour, found by fuzz/config_json_fuzz.cc.
  if (*it != json(supported)) {
    return UnimplementedError(source + ": '" + key + "' = " + it->dump() + " is not supported (" + why + ")");
  }
  return OkStatus();
}

// A size that must be in [1, max]: "must be positive" below, "exceeds the supported maximum" above.
inline Status InRange(const char* name, std::int64_t v, std::int64_t max, const std::string& source) {
  if (v <= 0) return InvalidArgumentError(source + ": '" + name + "' must be positive, got " + std::to_string(v));
  if (v > max) {
    return InvalidArgumentError(source + ": '" + name + "' = " + std::to_string(v) +
                                " exceeds the supported maximum of " + std::to_string(max));
  }
  return OkStatus();
}

}  // namespace unmask::checkpoint::config_fields
