#include "tools/unmask_engine/tokenize_commands.h"

#include <iostream>
#include <iterator>
#include <limits>
#include <memory>

#include <nlohmann/json.hpp>

namespace unmask::cli {
namespace {

using Json = nlohmann::json;

constexpr int kErrorExitCode = 2;

bool IsSeparator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

StatusOr<int32_t> IdFromJson(const Json& v, size_t index) {
  if (!v.is_number_integer()) {
    return InvalidArgumentError("ids[" + std::to_string(index) + "]: expected an integer, got " + v.dump());
  }
  const int64_t id = v.get<int64_t>();
  if (id < std::numeric_limits<int32_t>::min() || id > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("ids[" + std::to_string(index) + "]: " + std::to_string(id) + " is out of range");
  }
  return static_cast<int32_t>(id);
}

StatusOr<std::vector<int32_t>> ParseJsonIds(std::string_view input) {
  Json doc;
  try {
    doc = Json::parse(input.begin(), input.end());
  } catch (const Json::exception& e) {
    return InvalidArgumentError(std::string("invalid JSON: ") + e.what());
  }
  const Json* list = &doc;
  if (doc.is_object()) {
    auto it = doc.find("ids");
    if (it == doc.end()) return InvalidArgumentError("expected {\"ids\": [...]}");
    list = &*it;
  }
  if (!list->is_array()) return InvalidArgumentError("expected a JSON array of ids");
  std::vector<int32_t> ids;
  ids.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    UNMASK_ASSIGN_OR_RETURN(const int32_t id, IdFromJson((*list)[i], i));
    ids.push_back(id);
  }
  return ids;
}

std::string ReadAll(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct CommandOptions {
  std::string tokenizer_path;
  bool json = false;
  bool flag = false;   // --special for tokenize, --skip-special for detokenize
  bool jsonl = false;  // one JSON input per line, one JSON result per line
};

// --jsonl: `fn` maps each non-empty input line to its JSON result; an error names the line.
template <typename Fn>
StatusOr<std::string> EachJsonLine(std::string_view input, Fn fn) {
  std::string out;
  std::size_t line_no = 0, begin = 0;
  while (begin < input.size()) {
    std::size_t end = input.find('\n', begin);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    StatusOr<Json> result = fn(line);
    if (!result.ok()) return InvalidArgumentError("line " + std::to_string(line_no) + ": " + result.status().message());
    out += result->dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  return out;
}

StatusOr<std::string> TokenizeLines(const tokenizer::Tokenizer& tokenizer, std::string_view input, bool special) {
  return EachJsonLine(input, [&](std::string_view line) -> StatusOr<Json> {
    Json text;
    try {
      text = Json::parse(line.begin(), line.end());
    } catch (const Json::exception& e) {
      return InvalidArgumentError(std::string("invalid JSON: ") + e.what());
    }
    if (!text.is_string()) return InvalidArgumentError("expected a JSON string, got " + text.dump());
    UNMASK_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, tokenizer.Encode(text.get<std::string>(), special));
    return Json{{"ids", ids}};
  });
}

StatusOr<std::string> DetokenizeLines(const tokenizer::Tokenizer& tokenizer, std::string_view input, bool skip_special) {
  return EachJsonLine(input, [&](std::string_view line) -> StatusOr<Json> {
    UNMASK_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, ParseJsonIds(line));
    UNMASK_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(ids, skip_special));
    return Json{{"text", text}};
  });
}

// Runs one subcommand: loads the tokenizer, reads stdin, writes the result or the error.
template <typename Fn>
void Run(const char* name, const CommandOptions& opt, std::istream& in, std::ostream& out, std::ostream& err, Fn fn) {
  auto fail = [&](const Status& status) {
    err << "unmask-engine " << name << ": " << status.ToString() << "\n";
    throw CLI::RuntimeError(kErrorExitCode);
  };
  // Checked here rather than with CLI11's required() so that every failure exits with code 2.
  if (opt.tokenizer_path.empty()) fail(InvalidArgumentError("--tokenizer FILE is required"));
  auto tokenizer = tokenizer::Tokenizer::FromPath(opt.tokenizer_path);
  if (!tokenizer.ok()) fail(tokenizer.status());
  const std::string input = ReadAll(in);
  StatusOr<std::string> result = fn(**tokenizer, input);
  if (!result.ok()) fail(result.status());
  out << *result << std::flush;
}

}  // namespace

StatusOr<std::string> TokenizeToText(const tokenizer::Tokenizer& tokenizer, std::string_view text, bool json,
                                     bool parse_special_tokens) {
  UNMASK_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, tokenizer.Encode(text, parse_special_tokens));
  if (json) return Json{{"ids", ids}}.dump() + "\n";
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out.push_back(' ');
    out += std::to_string(ids[i]);
  }
  out.push_back('\n');
  return out;
}

StatusOr<std::vector<int32_t>> ParseIds(std::string_view input) {
  size_t begin = 0;
  while (begin < input.size() && IsSeparator(input[begin])) ++begin;
  if (begin < input.size() && (input[begin] == '[' || input[begin] == '{')) return ParseJsonIds(input.substr(begin));
  std::vector<int32_t> ids;
  size_t pos = begin;
  while (pos < input.size()) {
    if (IsSeparator(input[pos])) {
      ++pos;
      continue;
    }
    size_t end = pos;
    while (end < input.size() && !IsSeparator(input[end])) ++end;
    const std::string item(input.substr(pos, end - pos));
    size_t digits = (item[0] == '-' || item[0] == '+') ? 1 : 0;
    bool ok = digits < item.size() && item.size() - digits <= 10;
    for (size_t i = digits; ok && i < item.size(); ++i) ok = item[i] >= '0' && item[i] <= '9';
    const long long value = ok ? std::stoll(item) : 0;
    if (!ok || value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("'" + item + "' at byte offset " + std::to_string(pos) + " is not an id");
    }
    ids.push_back(static_cast<int32_t>(value));
    pos = end;
  }
  return ids;
}

StatusOr<std::string> DetokenizeToText(const tokenizer::Tokenizer& tokenizer, std::string_view input, bool json,
                                       bool skip_special_tokens) {
  UNMASK_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, ParseIds(input));
  UNMASK_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(ids, skip_special_tokens));
  if (json) return Json{{"text", text}}.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  return text;
}

void AddTokenizeCommands(CLI::App& app) { AddTokenizeCommands(app, std::cin, std::cout, std::cerr); }

void AddTokenizeCommands(CLI::App& app, std::istream& in, std::ostream& out, std::ostream& err) {
  auto tok_opt = std::make_shared<CommandOptions>();
  CLI::App* tok = app.add_subcommand("tokenize", "Encode the text on stdin to token ids");
  tok->add_option("--tokenizer", tok_opt->tokenizer_path, "tokenizer.json, or a checkpoint directory (tokenizer.json or vocab.json + merges.txt) (required)");
  tok->add_flag("--json", tok_opt->json, "print {\"ids\": [...]}");
  tok->add_flag("--special", tok_opt->flag, "parse special tokens such as <|eot_id|> in the text");
  tok->add_flag("--jsonl", tok_opt->jsonl, "many texts: one JSON string per line in, one {\"ids\": [...]} per line out");
  tok->callback([tok_opt, &in, &out, &err] {
    Run("tokenize", *tok_opt, in, out, err, [&](const tokenizer::Tokenizer& t, const std::string& input) {
      if (tok_opt->jsonl) return TokenizeLines(t, input, tok_opt->flag);
      return TokenizeToText(t, input, tok_opt->json, tok_opt->flag);
    });
  });

  auto detok_opt = std::make_shared<CommandOptions>();
  CLI::App* detok = app.add_subcommand("detokenize", "Decode the token ids on stdin to text");
  detok->add_option("--tokenizer", detok_opt->tokenizer_path, "tokenizer.json, or a checkpoint directory (tokenizer.json or vocab.json + merges.txt) (required)");
  detok->add_flag("--json", detok_opt->json, "print {\"text\": \"...\"}");
  detok->add_flag("--skip-special", detok_opt->flag, "leave special tokens out of the text");
  detok->add_flag("--jsonl", detok_opt->jsonl, "many id lists: one JSON list or {\"ids\"} per line in, one {\"text\"} per line out");
  detok->callback([detok_opt, &in, &out, &err] {
    Run("detokenize", *detok_opt, in, out, err, [&](const tokenizer::Tokenizer& t, const std::string& input) {
      if (detok_opt->jsonl) return DetokenizeLines(t, input, detok_opt->flag);
      return DetokenizeToText(t, input, detok_opt->json, detok_opt->flag);
    });
  });
}

}  // namespace unmask::cli
