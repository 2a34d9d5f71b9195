#include "tools/unmask_engine/canvas_options.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "common/generation/field_names.h"
#include "common/tokenizer/canvas_text.h"

namespace unmask::cli {
namespace {

std::string TemplateFlag(const std::string& path) { return "--template-file " + path; }

StatusOr<std::string> ReadTemplateFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError(TemplateFlag(path) + ": cannot read it: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(TemplateFlag(path) + ": cannot read it: " + std::strerror(errno));
  return text.str();
}

// A token's text as the tokenizer decodes it alone (special tokens shown); empty when unknown.
std::string TokenText(const tokenizer::Tokenizer& tok, std::int64_t id) {
  if (id < 0 || id > INT32_MAX || !tok.IdToToken(static_cast<std::int32_t>(id))) return "";
  auto text = tok.Decode(std::vector<std::int32_t>{static_cast<std::int32_t>(id)}, /*skip_special_tokens=*/false);
  return text.ok() ? *text : "";
}

// The token for a terminal line: its text quoted as a JSON string (a byte-level token that is
// part of a UTF-8 character shows as U+FFFD), or its id without a tokenizer.
std::string TokenLabel(const tokenizer::Tokenizer* tok, std::int64_t id) {
  if (tok == nullptr) return std::to_string(id);
  return nlohmann::json(TokenText(*tok, id)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Fixed4(double v) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(4) << v;
  return out.str();
}

}  // namespace

StatusOr<generation::Canvas> BuildCanvas(const std::string& suffix, const std::string& template_file,
                                         const tokenizer::Tokenizer& tok) {
  std::string template_text;
  if (!template_file.empty()) {
    UNMASK_ASSIGN_OR_RETURN(template_text, ReadTemplateFile(template_file));
    // An empty file would be no template at all: refused as a template without a hole.
    if (template_text.empty())
      return InvalidFieldError(TemplateFlag(template_file), "has no hole: mark each one with <hole:N> (N tokens)");
  }
  auto canvas = tokenizer::EncodeCanvas(tok, suffix, template_text);
  if (!canvas.ok()) {
    const Status& s = canvas.status();
    if (s.field() == "suffix") return generation::RenameField(s, "--suffix");
    if (s.field() == "template_text") return generation::RenameField(s, TemplateFlag(template_file));
    return s;
  }
  return canvas;
}

Status FitTemplateLength(const generation::Canvas& canvas, const std::string& template_file,
                         std::optional<std::int64_t>& gen_length) {
  if (canvas.region.empty()) return OkStatus();
  const auto tokens = static_cast<std::int64_t>(canvas.region.size());
  if (gen_length && *gen_length != tokens)
    return InvalidFieldError("--gen-length", std::to_string(*gen_length) + " does not match " +
                                                 TemplateFlag(template_file) + ", which is " + std::to_string(tokens) +
                                                 " tokens (leave --gen-length out: a template sets it)");
  gen_length = tokens;
  return OkStatus();
}

nlohmann::json RowLogprobsJson(const std::vector<std::optional<sampler::TokenLogprob>>& row, std::size_t length,
                               const tokenizer::Tokenizer* tok) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t pos = 0; pos < row.size() && pos < length; ++pos) {
    if (!row[pos]) continue;
    nlohmann::json entry = {{"position", pos}, {"token", row[pos]->token}, {"logprob", row[pos]->logprob}};
    if (tok) entry["text"] = TokenText(*tok, row[pos]->token);
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [token, logprob] : row[pos]->top) {
      nlohmann::json alt = {{"token", token}, {"logprob", logprob}};
      if (tok) alt["text"] = TokenText(*tok, token);
      top.push_back(std::move(alt));
    }
    entry["top"] = std::move(top);
    out.push_back(std::move(entry));
  }
  return out;
}

void PrintRowLogprobs(std::ostream& out, const std::vector<std::optional<sampler::TokenLogprob>>& row,
                      std::size_t length, const tokenizer::Tokenizer* tok) {
  for (std::size_t pos = 0; pos < row.size() && pos < length; ++pos) {
    if (!row[pos]) continue;
    out << "  pos " << pos << "  " << TokenLabel(tok, row[pos]->token) << "  " << Fixed4(row[pos]->logprob);
    const auto& top = row[pos]->top;
    if (!top.empty()) out << "  top:";
    for (std::size_t i = 0; i < top.size(); ++i)
      out << (i ? ", " : " ") << TokenLabel(tok, top[i].first) << " " << Fixed4(top[i].second);
    out << "\n";
  }
}

}  // namespace unmask::cli
