// The mixture-of-experts members of the LLaDA family in config.json (LLaDA-MoE and LLaDA2.x):
// which architecture a config.json describes, their Hugging Face style fields mapped onto
// LladaConfig, and the tensors such a checkpoint holds. LladaConfig's own functions call these
// for the MoE architectures; nothing else needs to.
//
// What each field means is what the official modeling code computes (tests/data/moe-golden.md):
// fields that code never reads (LLaDA-MoE's norm_topk_prob, router_num_group; LLaDA2's
// score_function, router_dtype, rotary_dim) are not read here either, and switches the engine
// does not implement (biases, clip_qkv, rope_scaling, norm_head) are refused by name.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/checkpoint/llada_config.h"
#include "common/util/status.h"

namespace unmask::checkpoint {

// From `architectures` (its first entry the engine knows), else from `model_type`; both absent
// is dense LLaDA (the engine's own config.json files). An unknown value, or a model_type that
// contradicts the architecture, is an error naming the field.
StatusOr<Architecture> ArchitectureOf(const nlohmann::json& j, const std::string& source);

// Parses and validates a LLaDA-MoE or LLaDA2.x config.json (arch from ArchitectureOf). The mask
// and EOS ids are taken from `mask_token_id` / `eos_token_id` when present, else left -1 for
// FillSpecialTokenIds.
StatusOr<LladaConfig> ParseMoeFamilyConfig(const nlohmann::json& j, Architecture arch, const std::string& source);

// The ids config.json left unknown (-1), from `dir`/tokenizer_config.json: its mask_token and
// eos_token strings looked up in added_tokens_decoder. Without that file they stay -1 (the
// forward pass does not need them; a sampler does).
Status FillSpecialTokenIds(const std::string& dir, LladaConfig& config);

// LLaDA2.1 checkpoints may say model_type "llada2_moe", as LLaDA2.0's do: they ship the same
// configuration_llada2_moe.py / modeling_llada2_moe.py file names, and only their generate()
// differs (token editing). An LLaDA2 config without token editing gets it when the checkpoint's
// own modeling file (auto_map's AutoModelForCausalLM module, else modeling_llada2_moe.py, in
// `dir`) defines LLaDA2.1's generate (it takes `editing_threshold`): what trust_remote_code would
// run. `config_json` is config.json's text. Without such a file nothing changes.
void DetectTokenEditing(const std::string& dir, const std::string& config_json, LladaConfig& config);

// Dream's own fields (dream_config.cc), after the shared ones.
Status ReadDreamFields(const nlohmann::json& j, const std::string& source, LladaConfig& c);
nlohmann::json DreamFields(const LladaConfig& c);

std::string MoeFamilyToJsonText(const LladaConfig& config);
std::vector<ExpectedTensor> MoeFamilyExpectedTensors(const LladaConfig& config);
std::int64_t MoeFamilyParameterCount(const LladaConfig& config);

}  // namespace unmask::checkpoint
