#include "common/jinja/py_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/jinja/error.h"
#include "common/jinja/py_string.h"

namespace unmask::jinja {

namespace {

// A string builder that refuses to grow past its limit.
class Writer {
 public:
  explicit Writer(std::size_t max_bytes) : max_(max_bytes) {}
  void Add(const std::string& s) { Add(s.data(), s.size()); }
  void Add(const char* s) { Add(s, std::char_traits<char>::length(s)); }
  void Add(const char* s, std::size_t n) {
    if (out_.size() + n > max_) Fail("the text is longer than the " + std::to_string(max_) + "-byte limit", kReasonLimit, StatusCode::kResourceExhausted);
    out_.append(s, n);
  }
  void Repeat(const std::string& s, std::size_t times) {
    for (std::size_t i = 0; i < times; ++i) Add(s);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::size_t max_;
  std::string out_;
};

void CheckDepth(int depth) {
  if (depth > kMaxValueDepth) Fail("values are nested too deep to print", kReasonLimit, StatusCode::kResourceExhausted);
}

void AppendHex(std::string* out, const char* prefix, unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, value);
  *out += buf;
}

// Python's str.isprintable() for one character (the categories it refuses, by their ranges).
bool IsPrintable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x1680 || c == 0x180E) return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x2064)) return false;
  if ((c >= 0x2066 && c <= 0x206F) || c == 0x3000 || (c >= 0xD800 && c <= 0xF8FF) || c == 0xFEFF) return false;
  if ((c >= 0xFFF9 && c <= 0xFFFB) || c == 0xFFFE || c == 0xFFFF || c >= 0xF0000) return false;
  return !(c == 0xE0001 || (c >= 0xE0020 && c <= 0xE007F));
}

std::string ReprString(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    const char32_t c = py::DecodeAt(s, i, &len);
    if (c == static_cast<char32_t>(quote) || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (len == 1 && c >= 0x80) AppendHex(&out, "\\x", c, 2);  // an invalid byte
    else if (IsPrintable(c)) out.append(s, i, len);
    else if (c <= 0xFF) AppendHex(&out, "\\x", c, 2);
    else if (c <= 0xFFFF) AppendHex(&out, "\\u", c, 4);
    else AppendHex(&out, "\\U", c, 8);
  }
  out += quote;
  return out;
}

void Repr(const Value& v, Writer* w, int depth);

void ReprItems(const std::vector<Value>& items, Writer* w, int depth) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) w->Add(", ");
    Repr(items[i], w, depth + 1);
  }
}

void ReprSequence(const ListData& list, Writer* w, int depth) {
  switch (list.seq) {
    case SeqKind::kGenerator: return w->Add("<generator object>");
    case SeqKind::kRange: {
      std::string text = "range(" + std::to_string(list.range[0]) + ", " + std::to_string(list.range[1]);
      if (list.range[2] != 1) text += ", " + std::to_string(list.range[2]);
      return w->Add(text + ")");
    }
    case SeqKind::kDictKeys: w->Add("dict_keys(["); break;
    case SeqKind::kDictValues: w->Add("dict_values(["); break;
    case SeqKind::kDictItems: w->Add("dict_items(["); break;
    case SeqKind::kTuple: w->Add("("); break;
    case SeqKind::kList: w->Add("["); break;
  }
  ReprItems(list.items, w, depth);
  if (list.seq == SeqKind::kTuple) w->Add(list.items.size() == 1 ? ",)" : ")");
  else w->Add(list.seq == SeqKind::kList ? "]" : "])");
}

void Repr(const Value& v, Writer* w, int depth) {
  CheckDepth(depth);
  switch (v.kind()) {
    case Value::Kind::kString:
      if (v.is_markup()) return w->Add("Markup(" + ReprString(v.string()) + ")");
      return w->Add(ReprString(v.string()));
    case Value::Kind::kList: return ReprSequence(v.list(), w, depth);
    case Value::Kind::kDict: {
      w->Add("{");
      bool first = true;
      for (const auto& [key, value] : v.dict().items) {
        if (!first) w->Add(", ");
        first = false;
        Repr(key, w, depth + 1);
        w->Add(": ");
        Repr(value, w, depth + 1);
      }
      w->Add("}");
      return;
    }
    case Value::Kind::kUndefined: w->Add("Undefined"); return;
    case Value::Kind::kNamespace: {
      w->Add("<Namespace {");
      bool first = true;
      for (const auto& [name, value] : v.ns().attrs) {
        if (!first) w->Add(", ");
        first = false;
        w->Add(ReprString(name));
        w->Add(": ");
        Repr(value, w, depth + 1);
      }
      w->Add("}>");
      return;
    }
    case Value::Kind::kFunction: w->Add("<function " + v.function().name + ">"); return;
    case Value::Kind::kLoop: {
      const LoopData& loop = v.loop();
      w->Add("<LoopContext " + std::to_string(loop.index0 + 1) + "/" + std::to_string(loop.items->items.size()) + ">");
      return;
    }
    default: w->Add(PyStr(v, ~std::size_t{0}));
  }
}

// json.dumps' string encoding.
void JsonString(const std::string& s, bool ensure_ascii, Writer* w) {
  std::string out = "\"";
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    const char32_t c = py::DecodeAt(s, i, &len);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {
        AppendHex(&out, "\\u", 0xD800 + ((c - 0x10000) >> 10), 4);
        AppendHex(&out, "\\u", 0xDC00 + ((c - 0x10000) & 0x3FF), 4);
      } else {
        AppendHex(&out, "\\u", c, 4);
      }
    } else {
      out.append(s, i, len);
    }
  }
  out += '"';
  w->Add(out);
}

std::string JsonFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return FormatFloat(d);
}

std::string JsonKey(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::kString: return key.string();
    case Value::Kind::kFloat: return JsonFloat(key.number());
    case Value::Kind::kBool: return key.boolean() ? "true" : "false";
    case Value::Kind::kNone: return "null";
    case Value::Kind::kInt: return std::to_string(key.integer());
    default: Fail(std::string("TypeError: keys must be str, int, float, bool or None, not ") + key.TypeName());
  }
}

void Json(const Value& v, const JsonOptions& o, int level, Writer* w);

void JsonNewline(const JsonOptions& o, int level, Writer* w) {
  w->Add("\n");
  w->Repeat(*o.indent, static_cast<std::size_t>(level));
}

void JsonList(const std::vector<Value>& items, const JsonOptions& o, int level, Writer* w) {
  if (items.empty()) return w->Add("[]");
  w->Add("[");
  const std::string& item_sep = *o.item_separator;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) w->Add(item_sep);
    if (o.indent) JsonNewline(o, level + 1, w);
    Json(items[i], o, level + 1, w);
  }
  if (o.indent) JsonNewline(o, level, w);
  w->Add("]");
}

void JsonDict(const DictData& dict, const JsonOptions& o, int level, Writer* w) {
  if (dict.items.empty()) return w->Add("{}");
  std::vector<const std::pair<Value, Value>*> items;
  for (const auto& item : dict.items) items.push_back(&item);
  if (o.sort_keys) {
    std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) { return Less(a->first, b->first); });
  }
  w->Add("{");
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) w->Add(*o.item_separator);
    if (o.indent) JsonNewline(o, level + 1, w);
    JsonString(JsonKey(items[i]->first), o.ensure_ascii, w);
    w->Add(*o.key_separator);
    Json(items[i]->second, o, level + 1, w);
  }
  if (o.indent) JsonNewline(o, level, w);
  w->Add("}");
}

void Json(const Value& v, const JsonOptions& o, int level, Writer* w) {
  CheckDepth(level);
  switch (v.kind()) {
    case Value::Kind::kNone: return w->Add("null");
    case Value::Kind::kBool: return w->Add(v.boolean() ? "true" : "false");
    case Value::Kind::kInt: return w->Add(std::to_string(v.integer()));
    case Value::Kind::kFloat: return w->Add(JsonFloat(v.number()));
    case Value::Kind::kString: return JsonString(v.string(), o.ensure_ascii, w);
    case Value::Kind::kList:
      if (!v.is_list()) break;
      return JsonList(v.list().items, o, level, w);
    case Value::Kind::kDict: return JsonDict(v.dict(), o, level, w);
    default: break;
  }
  Fail(std::string("TypeError: Object of type ") + v.TypeName() + " is not JSON serializable");
}

}  // namespace

std::string FormatFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[48];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf is [-]D[.DDD]e(+|-)XX
  std::string text = buf;
  std::string sign;
  if (text[0] == '-') sign = "-", text.erase(0, 1);
  const std::size_t e = text.find('e');
  const int exponent = std::atoi(text.c_str() + e + 1);
  std::string digits = text.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) return sign + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  const std::size_t int_len = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= int_len) return sign + digits + std::string(int_len - digits.size(), '0') + ".0";
  return sign + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::string PyStr(const Value& v, std::size_t max_bytes) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.boolean() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.integer());
    case Value::Kind::kFloat: return FormatFloat(v.number());
    case Value::Kind::kString: return v.string();
    default: return PyRepr(v, max_bytes);
  }
}

Value HtmlEscape(const Value& v, std::size_t max_bytes) {
  if (v.is_markup()) return v;
  std::string out;
  for (const char c : PyStr(v, max_bytes)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  if (out.size() > max_bytes) Fail("escape: the text is too long", kReasonLimit, StatusCode::kResourceExhausted);
  return Value::Markup(std::move(out));
}

std::string PyRepr(const Value& v, std::size_t max_bytes) {
  Writer w(max_bytes);
  Repr(v, &w, 0);
  return w.Take();
}

std::string JsonDumps(const Value& v, const JsonOptions& options, std::size_t max_bytes) {
  JsonOptions o = options;
  if (!o.item_separator) o.item_separator = o.indent ? "," : ", ";
  if (!o.key_separator) o.key_separator = ": ";
  Writer w(max_bytes);
  Json(v, o, 0, &w);
  return w.Take();
}

}  // namespace unmask::jinja
