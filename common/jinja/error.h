// The error a template raises while it is parsed or rendered. Internal to common/jinja: the
// lexer, parser and interpreter throw it, and Template::Parse / Template::Render turn it into a
// Status whose message names the line:column of the construct at fault (error.cc).
#pragma once

#include <cstdint>
#include <string>

#include "common/util/status.h"

namespace unmask::jinja {

// The reasons (ErrorDetail::reason) of the Statuses this library returns.
inline constexpr char kReasonSyntax[] = "TEMPLATE_SYNTAX";       // the template does not parse
inline constexpr char kReasonRender[] = "TEMPLATE_ERROR";        // rendering failed (type error, undefined, ...)
inline constexpr char kReasonRaised[] = "TEMPLATE_RAISED";       // the template called raise_exception(msg)
inline constexpr char kReasonLimit[] = "TEMPLATE_LIMIT";         // a step, size or depth limit was hit
inline constexpr char kReasonUnsupported[] = "TEMPLATE_UNSUPPORTED";  // valid Jinja this interpreter refuses

inline constexpr std::uint32_t kNoPos = 0xffffffffu;

struct TemplateError {
  StatusCode code = StatusCode::kInvalidArgument;
  const char* reason = kReasonRender;
  std::string message;
  std::uint32_t pos = kNoPos;  // byte offset in the (newline-normalized) source; kNoPos: not known here
};

// Throws a TemplateError (pos filled in later by whoever knows it).
[[noreturn]] void Fail(std::string message, const char* reason = kReasonRender,
                       StatusCode code = StatusCode::kInvalidArgument);
[[noreturn]] void FailAt(std::uint32_t pos, std::string message, const char* reason = kReasonRender,
                         StatusCode code = StatusCode::kInvalidArgument);

// "12:7": the 1-based line and column (in characters) of byte offset `pos` of `source`.
std::string LineColumn(const std::string& source, std::uint32_t pos);

// The Status of an error: "chat template 12:7: <message> (at '<the template from there>')", with
// the reason in its detail (raise_exception's: "chat template 12:7: <message>").
Status ToStatus(const TemplateError& error, const std::string& source);

}  // namespace unmask::jinja
