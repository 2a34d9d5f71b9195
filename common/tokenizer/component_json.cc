// tokenizer.json -> normalizers, pre-tokenizers and decoders.
#include <utility>
#include <vector>

#include "common/tokenizer/json_parse.h"
#include "common/tokenizer/utf8.h"

namespace unmask::tokenizer::json_parse {
namespace {

const Json& FieldOrNull(const Json& obj, const char* key) {
  static const Json null_value;
  auto it = obj.find(key);
  return it == obj.end() ? null_value : *it;
}

Status Wrong(const std::string& where, const char* key, const char* expected) {
  return InvalidArgumentError(where + "." + key + ": expected " + expected);
}

Status UnknownType(const std::string& where, const char* kind, const std::string& type, const char* known) {
  return InvalidArgumentError(where + ": unknown " + kind + " type '" + type + "' (supported: " + known + ")");
}

// The replacement character of Metaspace / content of Strip: one code point given as a string.
StatusOr<char32_t> SingleChar(const std::string& text, const std::string& where) {
  size_t pos = 0;
  if (text.empty() || FindInvalidUtf8(text) != kNoInvalidUtf8) return InvalidArgumentError(where + ": expected one character");
  const char32_t c = NextCodePoint(text, &pos);
  if (pos != text.size()) return InvalidArgumentError(where + ": expected one character, got '" + text + "'");
  return c;
}

// Metaspace's "prepend_scheme", or the older boolean "add_prefix_space" it replaced.
StatusOr<PrependScheme> GetPrependScheme(const Json& obj, const std::string& where) {
  std::optional<std::string> scheme;
  UNMASK_RETURN_IF_ERROR(GetString(obj, "prepend_scheme", where, &scheme));
  if (scheme) {
    if (*scheme == "always") return PrependScheme::kAlways;
    if (*scheme == "first") return PrependScheme::kFirst;
    if (*scheme == "never") return PrependScheme::kNever;
    return InvalidArgumentError(where + ".prepend_scheme: unknown value '" + *scheme + "' (always, first, never)");
  }
  bool add_prefix_space = true;
  UNMASK_RETURN_IF_ERROR(GetBool(obj, "add_prefix_space", true, where, &add_prefix_space));
  return add_prefix_space ? PrependScheme::kAlways : PrependScheme::kNever;
}

// Parses obj[key], an array of components, with `parse` (one of the Parse* functions).
template <typename T, typename Fn>
StatusOr<std::vector<std::unique_ptr<T>>> ParseList(const Json& obj, const char* key, const std::string& where, Fn parse) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) return Wrong(where, key, "an array");
  std::vector<std::unique_ptr<T>> parts;
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string item_where = where + "." + key + "[" + std::to_string(i) + "]";
    UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<T> part, parse((*it)[i], item_where));
    if (part == nullptr) return InvalidArgumentError(item_where + ": null is not allowed here");
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace

Status GetBool(const Json& obj, const char* key, bool fallback, const std::string& where, bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    *out = fallback;
    return OkStatus();
  }
  if (!it->is_boolean()) return Wrong(where, key, "true or false");
  *out = it->get<bool>();
  return OkStatus();
}

Status GetString(const Json& obj, const char* key, const std::string& where, std::optional<std::string>* out) {
  out->reset();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return OkStatus();
  if (!it->is_string()) return Wrong(where, key, "a string");
  *out = it->get<std::string>();
  return OkStatus();
}

Status GetRequiredString(const Json& obj, const char* key, const std::string& where, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return Wrong(where, key, "a string");
  *out = it->get<std::string>();
  return OkStatus();
}

Status GetSize(const Json& obj, const char* key, size_t fallback, const std::string& where, size_t* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    *out = fallback;
    return OkStatus();
  }
  if (!it->is_number_unsigned()) return Wrong(where, key, "a non-negative integer");
  *out = it->get<size_t>();
  return OkStatus();
}

StatusOr<std::string> GetType(const Json& obj, const std::string& where) {
  if (!obj.is_object()) return InvalidArgumentError(where + ": expected an object");
  std::string type;
  UNMASK_RETURN_IF_ERROR(GetRequiredString(obj, "type", where, &type));
  return type;
}

StatusOr<Pattern> ParsePattern(const Json& value, const std::string& where) {
  if (value.is_object() && value.size() == 1) {
    if (auto it = value.find("String"); it != value.end() && it->is_string()) {
      return Pattern::Literal(it->get<std::string>());
    }
    if (auto it = value.find("Regex"); it != value.end() && it->is_string()) {
      auto regex = Regex::Compile(it->get<std::string>());
      if (!regex.ok()) return regex.status().WithContext(where);
      return Pattern::FromRegex(*std::move(regex));
    }
  }
  return InvalidArgumentError(where + ": expected {\"String\": ...} or {\"Regex\": ...}");
}

StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const Json& value, const std::string& where) {
  if (value.is_null()) return std::unique_ptr<Normalizer>();
  UNMASK_ASSIGN_OR_RETURN(const std::string type, GetType(value, where));
  if (type == "NFC") return NewUnicodeNormalizer(UnicodeForm::kNFC);
  if (type == "NFD") return NewUnicodeNormalizer(UnicodeForm::kNFD);
  if (type == "NFKC") return NewUnicodeNormalizer(UnicodeForm::kNFKC);
  if (type == "NFKD") return NewUnicodeNormalizer(UnicodeForm::kNFKD);
  if (type == "Lowercase") return NewLowercaseNormalizer();
  if (type == "StripAccents") return NewStripAccentsNormalizer();
  if (type == "ByteLevel") return NewByteLevelNormalizer();
  if (type == "Sequence") {
    UNMASK_ASSIGN_OR_RETURN(auto parts, ParseList<Normalizer>(value, "normalizers", where, ParseNormalizer));
    return NewSequenceNormalizer(std::move(parts));
  }
  if (type == "Replace") {
    UNMASK_ASSIGN_OR_RETURN(Pattern pattern, ParsePattern(FieldOrNull(value, "pattern"), where + ".pattern"));
    std::string content;
    UNMASK_RETURN_IF_ERROR(GetRequiredString(value, "content", where, &content));
    return NewReplaceNormalizer(std::move(pattern), std::move(content));
  }
  if (type == "Prepend") {
    std::string prepend;
    UNMASK_RETURN_IF_ERROR(GetRequiredString(value, "prepend", where, &prepend));
    return NewPrependNormalizer(std::move(prepend));
  }
  if (type == "Strip") {
    bool left = true, right = true;
    UNMASK_RETURN_IF_ERROR(GetBool(value, "strip_left", true, where, &left));
    UNMASK_RETURN_IF_ERROR(GetBool(value, "strip_right", true, where, &right));
    return NewStripNormalizer(left, right);
  }
  if (type == "BertNormalizer" || type == "Precompiled" || type == "Nmt") {
    return UnimplementedError(where + ": normalizer type '" + type + "' is not supported");
  }
  return UnknownType(where, "normalizer", type,
                     "NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Strip, StripAccents, ByteLevel, Sequence");
}

StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const Json& value, const std::string& where) {
  if (value.is_null()) return std::unique_ptr<PreTokenizer>();
  UNMASK_ASSIGN_OR_RETURN(const std::string type, GetType(value, where));
  if (type == "ByteLevel") {
    bool add_prefix_space = true, use_regex = true;  // tokenizers' defaults
    UNMASK_RETURN_IF_ERROR(GetBool(value, "add_prefix_space", true, where, &add_prefix_space));
    UNMASK_RETURN_IF_ERROR(GetBool(value, "use_regex", true, where, &use_regex));
    return NewByteLevelPreTokenizer(add_prefix_space, use_regex);
  }
  if (type == "Split") {
    UNMASK_ASSIGN_OR_RETURN(Pattern pattern, ParsePattern(FieldOrNull(value, "pattern"), where + ".pattern"));
    std::string behavior_name;
    UNMASK_RETURN_IF_ERROR(GetRequiredString(value, "behavior", where, &behavior_name));
    auto behavior = ParseSplitBehavior(behavior_name);
    if (!behavior.ok()) return behavior.status().WithContext(where + ".behavior");
    bool invert = false;
    UNMASK_RETURN_IF_ERROR(GetBool(value, "invert", false, where, &invert));
    return NewSplitPreTokenizer(std::move(pattern), *behavior, invert);
  }
  if (type == "Digits") {
    bool individual = false;
    UNMASK_RETURN_IF_ERROR(GetBool(value, "individual_digits", false, where, &individual));
    return NewDigitsPreTokenizer(individual);
  }
  if (type == "Whitespace") return NewWhitespacePreTokenizer();
  if (type == "WhitespaceSplit") return NewWhitespaceSplitPreTokenizer();
  if (type == "Punctuation") {
    std::optional<std::string> behavior_name;
    UNMASK_RETURN_IF_ERROR(GetString(value, "behavior", where, &behavior_name));
    auto behavior = ParseSplitBehavior(behavior_name.value_or("Isolated"));
    if (!behavior.ok()) return behavior.status().WithContext(where + ".behavior");
    return NewPunctuationPreTokenizer(*behavior);
  }
  if (type == "Metaspace") {
    std::optional<std::string> replacement;
    UNMASK_RETURN_IF_ERROR(GetString(value, "replacement", where, &replacement));
    UNMASK_ASSIGN_OR_RETURN(const char32_t c, SingleChar(replacement.value_or("\xE2\x96\x81"), where + ".replacement"));
    std::string replacement_utf8;
    AppendUtf8(c, &replacement_utf8);
    UNMASK_ASSIGN_OR_RETURN(const PrependScheme scheme, GetPrependScheme(value, where));
    bool split = true;
    UNMASK_RETURN_IF_ERROR(GetBool(value, "split", true, where, &split));
    return NewMetaspacePreTokenizer(std::move(replacement_utf8), scheme, split);
  }
  if (type == "Sequence") {
    UNMASK_ASSIGN_OR_RETURN(auto parts, ParseList<PreTokenizer>(value, "pretokenizers", where, ParsePreTokenizer));
    return NewSequencePreTokenizer(std::move(parts));
  }
  if (type == "BertPreTokenizer" || type == "CharDelimiterSplit" || type == "UnicodeScripts") {
    return UnimplementedError(where + ": pre-tokenizer type '" + type + "' is not supported");
  }
  return UnknownType(where, "pre-tokenizer", type,
                     "ByteLevel, Split, Digits, Whitespace, WhitespaceSplit, Punctuation, Metaspace, Sequence");
}

StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const Json& value, const std::string& where) {
  if (value.is_null()) return std::unique_ptr<Decoder>();
  UNMASK_ASSIGN_OR_RETURN(const std::string type, GetType(value, where));
  if (type == "ByteLevel") return NewByteLevelDecoder();
  if (type == "ByteFallback") return NewByteFallbackDecoder();
  if (type == "Fuse") return NewFuseDecoder();
  if (type == "Strip") {
    std::string content;
    UNMASK_RETURN_IF_ERROR(GetRequiredString(value, "content", where, &content));
    UNMASK_ASSIGN_OR_RETURN(const char32_t c, SingleChar(content, where + ".content"));
    size_t start = 0, stop = 0;
    UNMASK_RETURN_IF_ERROR(GetSize(value, "start", 0, where, &start));
    UNMASK_RETURN_IF_ERROR(GetSize(value, "stop", 0, where, &stop));
    return NewStripDecoder(c, start, stop);
  }
  if (type == "Replace") {
    UNMASK_ASSIGN_OR_RETURN(Pattern pattern, ParsePattern(FieldOrNull(value, "pattern"), where + ".pattern"));
    std::string content;
    UNMASK_RETURN_IF_ERROR(GetRequiredString(value, "content", where, &content));
    return NewReplaceDecoder(std::move(pattern), std::move(content));
  }
  if (type == "Metaspace") {
    std::optional<std::string> replacement;
    UNMASK_RETURN_IF_ERROR(GetString(value, "replacement", where, &replacement));
    UNMASK_ASSIGN_OR_RETURN(const char32_t c, SingleChar(replacement.value_or("\xE2\x96\x81"), where + ".replacement"));
    UNMASK_ASSIGN_OR_RETURN(const PrependScheme scheme, GetPrependScheme(value, where));
    return NewMetaspaceDecoder(c, scheme != PrependScheme::kNever);
  }
  if (type == "Sequence") {
    UNMASK_ASSIGN_OR_RETURN(auto parts, ParseList<Decoder>(value, "decoders", where, ParseDecoder));
    return NewSequenceDecoder(std::move(parts));
  }
  if (type == "WordPiece" || type == "BPEDecoder" || type == "CTC") {
    return UnimplementedError(where + ": decoder type '" + type + "' is not supported");
  }
  return UnknownType(where, "decoder", type, "ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, Sequence");
}

}  // namespace unmask::tokenizer::json_parse
