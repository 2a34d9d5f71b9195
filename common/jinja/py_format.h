// Python's text forms of values: str() (what {{ value }} prints), repr() (how lists and dicts
// print their items), float repr, and json.dumps (transformers' tojson filter). Every function
// fails with a limit error rather than build a string longer than `max_bytes`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/jinja/value.h"

namespace unmask::jinja {

// repr(float): the shortest digits that read back to the same double, "1e+16", "0.0001", "2.0".
std::string FormatFloat(double d);

std::string PyStr(const Value& v, std::size_t max_bytes);
// markupsafe.escape: a Markup as it is, anything else as str() with & < > " ' made entities.
Value HtmlEscape(const Value& v, std::size_t max_bytes);
std::string PyRepr(const Value& v, std::size_t max_bytes);

// json.dumps(value, ensure_ascii=..., indent=..., separators=..., sort_keys=...).
struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // a number n of indent= becomes n spaces
  std::optional<std::string> item_separator, key_separator;  // separators=(item, key)
  bool sort_keys = false;
};
std::string JsonDumps(const Value& v, const JsonOptions& options, std::size_t max_bytes);

}  // namespace unmask::jinja
