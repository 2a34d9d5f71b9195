// A checkpoint directory's tokenizer -> Tokenizer: tokenizer.json when the directory has one, else
// the files a "slow" (Python) byte-level BPE tokenizer ships, converted as transformers'
// convert_slow_tokenizer converts them (Qwen2Converter, GPT2Converter) into the tokenizer.json
// that Tokenizer::FromJson reads. Dream-v0 publishes this layout: vocab.json, merges.txt,
// added_tokens.json, special_tokens_map.json and tokenizer_config.json (tokenizer_class
// "DreamTokenizer", a copy of Qwen2Tokenizer), no tokenizer.json.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/tokenizer/bpe_model.h"
#include "common/tokenizer/json_parse.h"
#include "common/tokenizer/tokenizer.h"

namespace unmask::tokenizer {
namespace {

using json_parse::Json;

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return DataLossError(path + ": read error");
  return buffer.str();
}

StatusOr<Json> ReadJsonObject(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  Json value;
  try {
    value = Json::parse(text);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(path + ": invalid JSON: " + e.what());
  }
  if (!value.is_object()) return InvalidArgumentError(path + ": expected a JSON object at the top level");
  return value;
}

// The pre-tokenizer of each supported class, as convert_slow_tokenizer builds it.
// Qwen2 (and Dream's copy of it): NFC, then Qwen2's split pattern, then byte-level without regex.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class Family { kQwen2, kGpt2 };

StatusOr<Family> FamilyOf(const Json& config, const std::string& config_path) {
  std::optional<std::string> cls;
  UNMASK_RETURN_IF_ERROR(json_parse::GetString(config, "tokenizer_class", config_path, &cls));
  if (!cls) {
    return InvalidArgumentError(config_path + ": tokenizer_class: missing; it says how vocab.json and merges.txt "
                                "split text (Qwen2Tokenizer, DreamTokenizer or GPT2Tokenizer)");
  }
  std::string name = *cls;
  const std::string fast = "Fast";
  if (name.size() > fast.size() && name.compare(name.size() - fast.size(), fast.size(), fast) == 0) {
    name.resize(name.size() - fast.size());
  }
  if (name == "Qwen2Tokenizer" || name == "DreamTokenizer") return Family::kQwen2;
  if (name == "GPT2Tokenizer") return Family::kGpt2;
  return UnimplementedError(config_path + ": tokenizer_class: '" + *cls +
                            "' is not supported without a tokenizer.json (supported with vocab.json + "
                            "merges.txt: Qwen2Tokenizer, DreamTokenizer, GPT2Tokenizer)");
}

// merges.txt as the slow tokenizers read it: a "#version:" first line and blank lines are
// skipped, every other line is two tokens separated by one space, both in the vocabulary.
StatusOr<Json> ReadMerges(const std::string& path, const Json& vocab) {
  UNMASK_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  Json merges = Json::array();
  std::istringstream lines(text);
  std::string line;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version:", 0) == 0)) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos) {
      return InvalidArgumentError(path + ": line " + std::to_string(number) +
                                  ": expected two tokens separated by one space, got \"" + line + "\"");
    }
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    for (const std::string* token : {&left, &right}) {
      if (!vocab.contains(*token)) {
        return InvalidArgumentError(path + ": line " + std::to_string(number) + ": '" + *token +
                                    "' is not in vocab.json");
      }
    }
    merges.push_back(line);
  }
  return merges;
}

// The added tokens: tokenizer_config.json's added_tokens_decoder ({"id": {content, special,
// lstrip, rstrip, normalized, single_word}}), or, in older checkpoints without it,
// added_tokens.json ({content: id}) with the special flag for the tokens the config names
// (bos/eos/unk/pad/mask tokens and additional_special_tokens).
StatusOr<Json> AddedTokens(const std::string& dir, const Json& config, const std::string& config_path) {
  Json added = Json::array();
  auto decoder = config.find("added_tokens_decoder");
  if (decoder != config.end() && !decoder->is_null()) {
    if (!decoder->is_object()) return InvalidArgumentError(config_path + ": added_tokens_decoder: expected an object");
    for (auto it = decoder->begin(); it != decoder->end(); ++it) {
      const std::string where = config_path + ": added_tokens_decoder['" + it.key() + "']";
      size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(it.key(), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != it.key().size() || id < 0 || id >= kTokenIdLimit) {
        return InvalidArgumentError(where + ": the key must be a token id in [0, 2^24)");
      }
      if (!it->is_object()) return InvalidArgumentError(where + ": expected an object");
      Json token = *it;
      token.erase("__type");  // transformers writes "__type": "AddedToken" in some versions
      token["id"] = id;
      added.push_back(std::move(token));
    }
  } else if (const std::string path = dir + "/added_tokens.json"; IsRegularFile(path)) {
    UNMASK_ASSIGN_OR_RETURN(Json ids, ReadJsonObject(path));
    std::unordered_set<std::string> special;
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "mask_token", "sep_token", "cls_token"}) {
      auto it = config.find(key);
      if (it == config.end()) continue;
      if (it->is_string()) special.insert(it->get<std::string>());
      if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
        special.insert((*it)["content"].get<std::string>());
      }
    }
    auto extra = config.find("additional_special_tokens");
    if (extra != config.end() && extra->is_array()) {
      for (const Json& t : *extra) {
        if (t.is_string()) special.insert(t.get<std::string>());
      }
    }
    for (auto it = ids.begin(); it != ids.end(); ++it) {
      if (!it->is_number_integer()) {
        return InvalidArgumentError(path + ": '" + it.key() + "': expected a token id, got " + it->dump());
      }
      const bool is_special = special.count(it.key()) > 0;
      added.push_back(Json{{"id", *it}, {"content", it.key()}, {"special", is_special}, {"normalized", !is_special}});
    }
  }
  std::stable_sort(added.begin(), added.end(), [](const Json& a, const Json& b) {
    return a["id"].get<long long>() < b["id"].get<long long>();
  });
  return added;
}

}  // namespace

bool Tokenizer::DirectoryHasTokenizer(const std::string& dir) {
  return IsRegularFile(dir + "/tokenizer.json") ||
         (IsRegularFile(dir + "/vocab.json") && IsRegularFile(dir + "/merges.txt"));
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromPath(const std::string& path) {
  return IsDirectory(path) ? FromDirectory(path) : FromFile(path);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromDirectory(const std::string& dir) {
  if (IsRegularFile(dir + "/tokenizer.json")) return FromFile(dir + "/tokenizer.json");
  const std::string vocab_path = dir + "/vocab.json", merges_path = dir + "/merges.txt";
  const std::string config_path = dir + "/tokenizer_config.json";
  if (!IsRegularFile(vocab_path) || !IsRegularFile(merges_path)) {
    return NotFoundError(dir + ": no tokenizer: neither tokenizer.json nor vocab.json with merges.txt");
  }
  if (!IsRegularFile(config_path)) {
    return NotFoundError(config_path + ": missing; without a tokenizer.json it names the tokenizer_class that "
                         "says how vocab.json and merges.txt split text");
  }
  UNMASK_ASSIGN_OR_RETURN(Json config, ReadJsonObject(config_path));
  UNMASK_ASSIGN_OR_RETURN(Family family, FamilyOf(config, config_path));
  bool add_prefix_space = false;
  UNMASK_RETURN_IF_ERROR(json_parse::GetBool(config, "add_prefix_space", false, config_path, &add_prefix_space));

  UNMASK_ASSIGN_OR_RETURN(Json vocab, ReadJsonObject(vocab_path));
  UNMASK_ASSIGN_OR_RETURN(Json merges, ReadMerges(merges_path, vocab));
  UNMASK_ASSIGN_OR_RETURN(Json added, AddedTokens(dir, config, config_path));

  // The tokenizer.json convert_slow_tokenizer writes for the class.
  Json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", false},
                     {"use_regex", family == Family::kGpt2}};
  Json root;
  root["model"] = {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};
  root["added_tokens"] = std::move(added);
  root["decoder"] = byte_level;
  if (family == Family::kQwen2) {
    root["normalizer"] = {{"type", "NFC"}};
    root["pre_tokenizer"] = {{"type", "Sequence"},
                             {"pretokenizers",
                              {{{"type", "Split"},
                                {"pattern", {{"Regex", kQwen2Pattern}}},
                                {"behavior", "Isolated"},
                                {"invert", false}},
                               byte_level}}};
  } else {
    root["pre_tokenizer"] = byte_level;
  }
  return FromJson(root.dump(), dir + " (vocab.json, merges.txt, tokenizer_config.json)");
}

}  // namespace unmask::tokenizer
