// tokenizer.json -> Tokenizer: the top level, the BPE model and the added tokens.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/tokenizer/added_tokens.h"
#include "common/tokenizer/bpe_model.h"
#include "common/tokenizer/json_parse.h"
#include "common/tokenizer/tokenizer.h"

namespace unmask::tokenizer {
namespace {

using json_parse::Json;

Status ParseVocab(const Json& model, std::vector<std::pair<std::string, int32_t>>* vocab) {
  auto it = model.find("vocab");
  if (it == model.end() || !it->is_object()) return InvalidArgumentError("model.vocab: expected an object");
  vocab->reserve(it->size());
  for (auto entry = it->begin(); entry != it->end(); ++entry) {
    const Json& id = entry.value();
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kTokenIdLimit) {
      return InvalidArgumentError("model.vocab['" + entry.key() + "']: expected an id in [0, 2^24), got " + id.dump());
    }
    vocab->emplace_back(entry.key(), static_cast<int32_t>(id.get<int64_t>()));
  }
  return OkStatus();
}

// Merges come as "a b" strings (older files) or ["a", "b"] pairs (tokenizers >= 0.20).
Status ParseMerges(const Json& model, std::vector<std::pair<std::string, std::string>>* merges) {
  auto it = model.find("merges");
  if (it == model.end() || it->is_null()) return OkStatus();
  if (!it->is_array()) return InvalidArgumentError("model.merges: expected an array");
  merges->reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& m = (*it)[i];
    const std::string where = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == s.size()) {
        return InvalidArgumentError(where + ": expected \"left right\", got \"" + s + "\"");
      }
      merges->emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges->emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return InvalidArgumentError(where + ": expected \"left right\" or [\"left\", \"right\"]");
    }
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<BpeModel>> ParseModel(const Json& root) {
  auto it = root.find("model");
  if (it == root.end() || it->is_null()) return InvalidArgumentError("missing \"model\"");
  const Json& model = *it;
  if (!model.is_object()) return InvalidArgumentError("model: expected an object");
  std::optional<std::string> type;
  UNMASK_RETURN_IF_ERROR(json_parse::GetString(model, "type", "model", &type));
  // Old files omit "type"; tokenizers then recognizes BPE by its "merges".
  if (!type && model.contains("merges")) type = "BPE";
  if (!type) return InvalidArgumentError("model: missing \"type\"");
  if (*type == "WordPiece" || *type == "WordLevel" || *type == "Unigram") {
    return UnimplementedError("model: model type '" + *type + "' is not supported (only BPE)");
  }
  if (*type != "BPE") return InvalidArgumentError("model: unknown model type '" + *type + "'");

  BpeOptions options;
  const std::string where = "model";
  std::optional<std::string> prefix, suffix;
  UNMASK_RETURN_IF_ERROR(json_parse::GetString(model, "unk_token", where, &options.unk_token));
  UNMASK_RETURN_IF_ERROR(json_parse::GetString(model, "continuing_subword_prefix", where, &prefix));
  UNMASK_RETURN_IF_ERROR(json_parse::GetString(model, "end_of_word_suffix", where, &suffix));
  UNMASK_RETURN_IF_ERROR(json_parse::GetBool(model, "fuse_unk", false, where, &options.fuse_unk));
  UNMASK_RETURN_IF_ERROR(json_parse::GetBool(model, "byte_fallback", false, where, &options.byte_fallback));
  UNMASK_RETURN_IF_ERROR(json_parse::GetBool(model, "ignore_merges", false, where, &options.ignore_merges));
  options.continuing_subword_prefix = prefix.value_or("");
  options.end_of_word_suffix = suffix.value_or("");

  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  UNMASK_RETURN_IF_ERROR(ParseVocab(model, &vocab));
  UNMASK_RETURN_IF_ERROR(ParseMerges(model, &merges));
  auto bpe = BpeModel::Create(std::move(options), std::move(vocab), merges);
  // BpeModel names the merge ("merges[3] ..."); make it the JSON path.
  if (!bpe.ok()) return Status(bpe.status().code(), "model." + bpe.status().message());
  return bpe;
}

StatusOr<std::vector<AddedToken>> ParseAddedTokens(const Json& root, const BpeModel& model) {
  std::vector<AddedToken> tokens;
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return tokens;
  if (!it->is_array()) return InvalidArgumentError("added_tokens: expected an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object()) return InvalidArgumentError(where + ": expected an object");
    AddedToken token;
    auto id = t.find("id");
    if (id == t.end() || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() >= kTokenIdLimit) {
      return InvalidArgumentError(where + ".id: expected an id in [0, 2^24)" +
                                  (id == t.end() ? std::string(", and there is none") : ", got " + id->dump()));
    }
    token.id = static_cast<int32_t>(id->get<int64_t>());
    UNMASK_RETURN_IF_ERROR(json_parse::GetRequiredString(t, "content", where, &token.content));
    UNMASK_RETURN_IF_ERROR(json_parse::GetBool(t, "special", false, where, &token.special));
    UNMASK_RETURN_IF_ERROR(json_parse::GetBool(t, "single_word", false, where, &token.single_word));
    UNMASK_RETURN_IF_ERROR(json_parse::GetBool(t, "lstrip", false, where, &token.lstrip));
    UNMASK_RETURN_IF_ERROR(json_parse::GetBool(t, "rstrip", false, where, &token.rstrip));
    // tokenizers' AddedToken default: special tokens are not normalized, others are.
    UNMASK_RETURN_IF_ERROR(json_parse::GetBool(t, "normalized", !token.special, where, &token.normalized));
    if (const std::optional<int32_t> vocab_id = model.TokenToId(token.content); vocab_id && *vocab_id != token.id) {
      return InvalidArgumentError(where + ": '" + token.content + "' has id " + std::to_string(token.id) +
                                  " but model.vocab gives it id " + std::to_string(*vocab_id));
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open tokenizer file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return DataLossError(path + ": read error");
  return FromJson(buffer.str(), path);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json, const std::string& source) {
  Json root;
  try {
    root = Json::parse(json.begin(), json.end());
  } catch (const Json::exception& e) {
    return InvalidArgumentError(source + ": invalid JSON: " + e.what());
  }
  if (!root.is_object()) return InvalidArgumentError(source + ": expected a JSON object at the top level");

  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  tok->source_ = source;
  // The component parsers report errors as Status; the try block is only a safety net so that
  // no nlohmann exception can escape the library.
  Status status = [&]() -> Status {
    try {
      UNMASK_ASSIGN_OR_RETURN(tok->model_, ParseModel(root));
      const Json null_value;
      auto field = [&](const char* key) -> const Json& {
        auto it = root.find(key);
        return it == root.end() ? null_value : *it;
      };
      UNMASK_ASSIGN_OR_RETURN(tok->normalizer_, json_parse::ParseNormalizer(field("normalizer"), "normalizer"));
      UNMASK_ASSIGN_OR_RETURN(tok->pre_tokenizer_,
                              json_parse::ParsePreTokenizer(field("pre_tokenizer"), "pre_tokenizer"));
      UNMASK_ASSIGN_OR_RETURN(tok->decoder_, json_parse::ParseDecoder(field("decoder"), "decoder"));
      UNMASK_ASSIGN_OR_RETURN(std::vector<AddedToken> added, ParseAddedTokens(root, *tok->model_));
      tok->id_limit_ = tok->model_->id_limit();
      for (const AddedToken& t : added) tok->id_limit_ = std::max(tok->id_limit_, t.id + 1);
      tok->added_ = std::make_unique<AddedVocabulary>();
      return tok->added_->Build(std::move(added), tok->normalizer_.get()).WithContext("added_tokens");
    } catch (const std::exception& e) {
      return InvalidArgumentError(std::string("unexpected value: ") + e.what());
    }
  }();
  if (!status.ok()) return status.WithContext(source);
  return tok;
}

}  // namespace unmask::tokenizer
