#include "tools/unmask_cli/canvas_flags.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/generation/canvas.h"
#include "common/generation/params.h"

namespace unmask::cli {
namespace {

// The file's bytes as they are (a trailing newline is part of the template).
StatusOr<std::string> ReadTemplateFile(const std::string& path) {
  const std::string flag = "--template-file " + path;
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError(flag + ": cannot read it: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(flag + ": cannot read it: " + std::strerror(errno));
  return text.str();
}

std::string Logprob(double value) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(4) << value;
  return out.str();
}

}  // namespace

Status ApplyCanvasFlags(const CanvasFlags& f, v1::GenerateRequest& r) {
  if (!f.suffix.empty()) r.set_suffix(f.suffix);
  if (!f.template_file.empty()) {
    UNMASK_ASSIGN_OR_RETURN(std::string text, ReadTemplateFile(f.template_file));
    // The scheduler checks it too (field template_text); here the error names the flag and file.
    auto pieces = generation::ParseHoleTemplate(text, "--template-file " + f.template_file);
    if (!pieces.ok()) return pieces.status();
    r.set_template_text(text);
  }
  if (f.logprobs) {
    if (*f.logprobs < 0 || *f.logprobs > generation::kMaxLogprobs)
      return InvalidFieldError("--logprobs", "must be in [0, " + std::to_string(generation::kMaxLogprobs) +
                                                 "], got " + std::to_string(*f.logprobs));
    r.mutable_params()->set_logprobs(*f.logprobs);
  }
  if (f.prompt_logprobs) {
    if (*f.prompt_logprobs < 0 || *f.prompt_logprobs > generation::kMaxLogprobs)
      return InvalidFieldError("--prompt-logprobs", "must be in [0, " + std::to_string(generation::kMaxLogprobs) +
                                                        "], got " + std::to_string(*f.prompt_logprobs));
    r.mutable_params()->set_prompt_logprobs(*f.prompt_logprobs);
  }
  return OkStatus();
}

namespace {

// One header line ("<name> (N tokens<count_note>; <position>, token id, ...):"), then a line per token.
void PrintTokens(std::ostream& out, const google::protobuf::RepeatedPtrField<v1::TokenLogprob>& tokens,
                 const std::string& tag, const std::string& name, const std::string& count_note,
                 const std::string& position, const std::string& where) {
  if (tokens.empty()) return;
  const bool alternatives =
      std::any_of(tokens.begin(), tokens.end(), [](const v1::TokenLogprob& t) { return !t.top().empty(); });
  out << tag << name << " (" << tokens.size() << " tokens" << count_note << "; " << position
      << ", token id, its text, log-probability" << (alternatives ? ", the most likely tokens " + where : "") << "):\n";
  // A token's text as the scheduler decoded it, quoted (JSON escapes), or nothing without one.
  auto text = [](const std::string& s) { return s.empty() ? std::string() : " " + nlohmann::json(s).dump(); };
  for (const auto& t : tokens) {
    out << tag << "  pos " << t.position() << "  id " << t.token() << text(t.text()) << "  logprob "
        << Logprob(t.logprob());
    if (!t.top().empty()) {
      out << "  top:";
      for (int i = 0; i < t.top_size(); ++i)
        out << (i ? ", " : " ") << t.top(i).token() << text(t.top(i).text()) << " " << Logprob(t.top(i).logprob());
    }
    out << "\n";
  }
}

}  // namespace

void PrintLogprobs(std::ostream& out, const v1::Completed& c, const std::string& tag) {
  PrintTokens(out, c.prompt_logprobs(), tag, "prompt logprobs", ", the first has none", "position in the prompt",
              "there");
  PrintTokens(out, c.logprobs(), tag, "logprobs", "", "position after the prompt", "at that step");
}

}  // namespace unmask::cli
