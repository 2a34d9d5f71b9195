#include "common/jinja/error.h"

#include <algorithm>
#include <utility>

namespace unmask::jinja {

void Fail(std::string message, const char* reason, StatusCode code) {
  throw TemplateError{code, reason, std::move(message), kNoPos};
}

void FailAt(std::uint32_t pos, std::string message, const char* reason, StatusCode code) {
  throw TemplateError{code, reason, std::move(message), pos};
}

std::string LineColumn(const std::string& source, std::uint32_t pos) {
  if (pos > source.size()) pos = static_cast<std::uint32_t>(source.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < pos; ++i) {
    const unsigned char c = static_cast<unsigned char>(source[i]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {  // count characters, not UTF-8 continuation bytes
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

namespace {

// Up to 30 bytes of the template from `pos`, to the end of the line (not cutting a character).
std::string Excerpt(const std::string& source, std::uint32_t pos) {
  std::size_t end = std::min(source.find('\n', pos), source.size());
  if (end - pos > 30) {
    end = pos + 30;
    while (end > pos && (static_cast<unsigned char>(source[end]) & 0xC0) == 0x80) --end;
    return source.substr(pos, end - pos) + "...";
  }
  return source.substr(pos, end - pos);
}

}  // namespace

Status ToStatus(const TemplateError& error, const std::string& source) {
  std::string message = "chat template";
  if (error.pos != kNoPos) message += " " + LineColumn(source, error.pos);
  message += ": " + error.message;
  // Where, in the template's words (not for raise_exception: its message is for the user).
  if (error.pos < source.size() && error.reason != std::string(kReasonRaised)) {
    message += " (at '" + Excerpt(source, error.pos) + "')";
  }
  return Status(error.code, std::move(message)).WithReason(error.reason);
}

}  // namespace unmask::jinja
