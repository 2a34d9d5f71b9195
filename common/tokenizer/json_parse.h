// Internal: building tokenizer components from tokenizer.json values. Every function reports
// problems as a Status whose message starts with `where`, the JSON path of the value
// (e.g. "pre_tokenizer.pretokenizers[1]"); nothing here throws.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/tokenizer/decoders.h"
#include "common/tokenizer/normalizers.h"
#include "common/tokenizer/pre_tokenizers.h"
#include "common/tokenizer/regex.h"
#include "common/util/status.h"

namespace unmask::tokenizer::json_parse {

using Json = nlohmann::json;

// Field readers: a missing or null field gives the default; a field of the wrong type is an error.
Status GetBool(const Json& obj, const char* key, bool fallback, const std::string& where, bool* out);
Status GetString(const Json& obj, const char* key, const std::string& where, std::optional<std::string>* out);
Status GetRequiredString(const Json& obj, const char* key, const std::string& where, std::string* out);
Status GetSize(const Json& obj, const char* key, size_t fallback, const std::string& where, size_t* out);
// The "type" string of a component object.
StatusOr<std::string> GetType(const Json& obj, const std::string& where);

// {"String": "..."} or {"Regex": "..."}.
StatusOr<Pattern> ParsePattern(const Json& value, const std::string& where);

// Each returns null for a JSON null (no component).
StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const Json& value, const std::string& where);
StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const Json& value, const std::string& where);
StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const Json& value, const std::string& where);

}  // namespace unmask::tokenizer::json_parse
