// Jinja2's filters (jinja2/filters.py) on strings and single values, transformers' tojson, and
// the filter table. The sequence filters are in filters_seq.cc.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/filters.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_format.h"
#include "common/jinja/py_string.h"
#include "common/jinja/runtime.h"

namespace unmask::jinja {

namespace {

std::string Str(Runtime& rt, const Value& v) { return PyStr(v, rt.max_bytes()); }

bool Flag(const std::optional<Value>& v) { return v && v->Truthy(); }

// A filter's string result, a Markup when its input was one (soft_str keeps Markup).
Value Like(const Value& input, std::string s) { return input.is_markup() ? Value::Markup(std::move(s)) : Value(std::move(s)); }

Value Trim(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"chars"}, "trim");
  std::string chars;
  if (bound[0] && !bound[0]->is_none()) chars = Str(rt, *bound[0]);
  return Like(input, py::Strip(Str(rt, input), bound[0] && !bound[0]->is_none() ? &chars : nullptr, true, true));
}

Value Upper(Runtime& rt, const Value& input, CallArgs& args) { return BindArgs(args, {}, "upper"), Like(input, py::Upper(Str(rt, input))); }
Value Lower(Runtime& rt, const Value& input, CallArgs& args) { return BindArgs(args, {}, "lower"), Like(input, py::Lower(Str(rt, input))); }
Value Capitalize(Runtime& rt, const Value& input, CallArgs& args) {
  return BindArgs(args, {}, "capitalize"), Like(input, py::Capitalize(Str(rt, input)));
}

// Jinja's title: each run of characters between "-", whitespace, "(", "{", "[" and "<" gets
// its first character upper-cased and the rest lower-cased.
Value Title(Runtime& rt, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "title");
  const std::string s = Str(rt, input);
  std::string out;
  bool word_start = true;
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    const char32_t cp = py::DecodeAt(s, i, &len);
    const bool separator = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || py::IsSpace(cp);
    const std::string c = s.substr(i, len);
    out += separator ? c : word_start ? py::Upper(c) : py::Lower(c);
    word_start = separator;
  }
  return Value(std::move(out));
}

Value String(Runtime& rt, const Value& input, CallArgs& args) { return BindArgs(args, {}, "string"), Like(input, Str(rt, input)); }
Value Safe(Runtime& rt, const Value& input, CallArgs& args) { return BindArgs(args, {}, "safe"), Value::Markup(Str(rt, input)); }

Value Length(Runtime&, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "length");
  switch (input.kind()) {
    case Value::Kind::kUndefined: return Value(0);
    case Value::Kind::kString: return Value(static_cast<std::int64_t>(py::CharCount(input.string())));
    case Value::Kind::kList:
      if (input.seq() == SeqKind::kGenerator) Fail("TypeError: object of type 'generator' has no len()");
      return Value(static_cast<std::int64_t>(input.list().items.size()));
    case Value::Kind::kDict: return Value(static_cast<std::int64_t>(input.dict().items.size()));
    case Value::Kind::kLoop: return Value(static_cast<std::int64_t>(input.loop().items->items.size()));
    default: Fail(std::string("TypeError: object of type '") + input.TypeName() + "' has no len()");
  }
}

Value Default(Runtime&, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"default_value", "boolean"}, "default");
  if (input.is_undefined() || (Flag(bound[1]) && !input.Truthy())) return bound[0] ? *bound[0] : Value(std::string());
  return input;
}

Value First(Runtime&, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "first");
  if (input.kind() == Value::Kind::kList && !input.list().items.empty()) return input.list().items.front();
  const std::vector<Value> items = Iterate(input);
  return items.empty() ? Value::Undefined("No first item, sequence was empty.") : items.front();
}

Value Last(Runtime&, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "last");
  if (input.kind() == Value::Kind::kList && input.seq() == SeqKind::kGenerator) Fail("TypeError: 'generator' object is not reversible");
  const std::vector<Value> items = Iterate(input);
  return items.empty() ? Value::Undefined("No last item, sequence was empty.") : items.back();
}

Value List(Runtime&, const Value& input, CallArgs& args) { return BindArgs(args, {}, "list"), Value::List(Iterate(input)); }

Value Items(Runtime&, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "items");
  return Generator([&](std::vector<Value>* out) {
    if (input.is_undefined()) return;
    if (!input.is_dict()) Fail("TypeError: Can only get item pairs from a mapping.");
    for (const auto& [key, value] : input.dict().items) out->push_back(Value::List({key, value}, true));
  });
}

Value Replace(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"old", "new", "count"}, "replace");
  if (!bound[0] || !bound[1]) Fail("TypeError: replace() needs the old and the new string");
  const std::int64_t count = bound[2] && !bound[2]->is_none() ? bound[2]->integer() : -1;
  return Value(py::Replace(Str(rt, input), Str(rt, *bound[0]), Str(rt, *bound[1]), count, rt.max_bytes()));
}

// Python's int(text, base) for what Jinja's int filter accepts; nullopt when it would not parse.
std::optional<std::int64_t> ParseInt(std::string text, int base) {
  text = py::Strip(text, nullptr, true, true);
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) negative = text[0] == '-', text.erase(0, 1);
  const char prefix = text.size() > 1 && text[0] == '0' ? static_cast<char>(text[1] | 0x20) : 0;
  if ((base == 16 && prefix == 'x') || (base == 8 && prefix == 'o') || (base == 2 && prefix == 'b')) text.erase(0, 2);
  if (text.empty() || text.front() == '_' || text.back() == '_' || text.find("__") != std::string::npos) return std::nullopt;
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, base);
  if (*end != '\0' || errno == ERANGE || text[0] == '-' || text[0] == '+' || py::IsSpace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  return negative ? -v : v;
}

std::optional<double> ParseFloat(const std::string& raw) {
  std::string text = py::Strip(raw, nullptr, true, true);
  if (text.empty() || text.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

Value Int(Runtime&, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"default", "base"}, "int");
  const Value fallback = bound[0] ? *bound[0] : Value(0);
  const int base = bound[1] ? static_cast<int>(bound[1]->integer()) : 10;
  if (input.is_undefined()) Fail(input.undefined_hint());  // int(Undefined) raises
  if (input.is_integral()) return Value(input.integer());
  std::optional<double> d;
  if (input.is_string()) {
    if (auto i = ParseInt(input.string(), base)) return Value(*i);
    d = ParseFloat(input.string());
  } else if (input.is_float()) {
    d = input.number();
  }
  if (!d || std::isnan(*d)) return fallback;
  if (std::isinf(*d) || std::fabs(*d) >= 9.2e18) Fail("OverflowError: cannot convert float infinity or a huge float to integer");
  return Value(static_cast<std::int64_t>(std::trunc(*d)));
}

Value Float(Runtime&, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"default"}, "float");
  if (input.is_undefined()) Fail(input.undefined_hint());  // float(Undefined) raises
  if (input.is_number()) return Value(input.number());
  if (input.is_string()) {
    if (auto d = ParseFloat(input.string())) return Value(*d);
  }
  return bound[0] ? *bound[0] : Value(0.0);
}

Value Abs(Runtime&, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "abs");
  if (!input.is_number()) Fail(std::string("TypeError: bad operand type for abs(): '") + input.TypeName() + "'");
  if (input.is_float()) return Value(std::fabs(input.number()));
  return UnaryOp(Value(input.integer()), input.integer() < 0);
}

Value Round(Runtime&, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"precision", "method"}, "round");
  const std::int64_t precision = bound[0] ? bound[0]->integer() : 0;
  const std::string method = bound[1] && bound[1]->is_string() ? bound[1]->string() : "common";
  if (method != "common" && method != "ceil" && method != "floor") Fail("FilterArgumentError: method must be common, ceil or floor");
  if (!input.is_number()) Fail(std::string("TypeError: type ") + input.TypeName() + " doesn't define __round__ method");
  if (method == "common" && input.is_integral() && precision >= 0) return Value(input.integer());
  const double x = input.number();
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value(std::ceil(x * scale) / scale);
  if (method == "floor") return Value(std::floor(x * scale) / scale);
  if (precision < 0 || precision > 300 || !std::isfinite(x)) return Value(std::nearbyint(x * scale) / scale);
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), x);  // exact, ties to even as Python's round
  return Value(std::strtod(buf, nullptr));
}

Value Reverse(Runtime&, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "reverse");
  if (input.is_string()) {
    std::vector<std::string> chars = py::Chars(input.string());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
    return Value(std::move(out));
  }
  if (input.kind() == Value::Kind::kList && input.seq() == SeqKind::kGenerator) Fail("TypeError: 'generator' object is not reversible");
  std::vector<Value> items = Iterate(input);
  std::reverse(items.begin(), items.end());
  return Value::Sequence(std::move(items), SeqKind::kGenerator);  // Python's reversed() iterator
}

Value Escape(Runtime& rt, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "escape");
  return HtmlEscape(input, rt.max_bytes());
}

Value Center(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"width"}, "center");
  const std::string s = Str(rt, input);
  const std::int64_t width = bound[0] ? bound[0]->integer() : 80;
  const auto len = static_cast<std::int64_t>(py::CharCount(s));
  if (width <= len) return Like(input, s);
  if (static_cast<std::uint64_t>(width) > rt.max_bytes()) Fail("center: too wide", kReasonLimit, StatusCode::kResourceExhausted);
  const std::int64_t margin = width - len;
  const std::int64_t left = margin / 2 + (margin & width & 1);
  return Like(input, std::string(static_cast<std::size_t>(left), ' ') + s + std::string(static_cast<std::size_t>(margin - left), ' '));
}

Value Indent(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"width", "first", "blank"}, "indent");
  std::string indention;
  if (bound[0] && bound[0]->is_string()) {
    indention = bound[0]->string();
  } else {
    const std::int64_t width = bound[0] ? bound[0]->integer() : 4;
    if (width > 1024) Fail("indent: too wide", kReasonLimit, StatusCode::kResourceExhausted);
    indention.assign(static_cast<std::size_t>(std::max<std::int64_t>(width, 0)), ' ');
  }
  if (input.is_undefined()) Fail(input.undefined_hint());
  if (!input.is_string()) Fail(std::string("TypeError: unsupported operand type(s) for +=: '") + input.TypeName() + "' and 'str'");
  const std::vector<std::string> lines = py::SplitLines(input.string() + "\n");
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (Flag(bound[2]) || !lines[i].empty())) out += indention;
    out += lines[i];
    if (out.size() > rt.max_bytes()) Fail("indent: the text is too long", kReasonLimit, StatusCode::kResourceExhausted);
  }
  if (Flag(bound[1])) out = indention + out;
  return Value(std::move(out));
}

Value WordCount(Runtime& rt, const Value& input, CallArgs& args) {
  BindArgs(args, {}, "wordcount");
  const std::string s = Str(rt, input);
  std::int64_t words = 0;
  bool in_word = false;
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    const char32_t cp = py::DecodeAt(s, i, &len);
    const bool word = py::IsAlpha(cp) || py::IsDigit(cp) || cp == '_';
    if (word && !in_word) ++words;
    in_word = word;
  }
  return Value(words);
}

Value Format(Runtime& rt, const Value& input, CallArgs& args) {
  if (!args.kwargs.empty()) Fail("the format filter with keyword arguments is not supported", kReasonUnsupported);
  return BinaryOp("%", Value(Str(rt, input)), Value::List(args.args, true), rt.max_bytes());
}

Value Attr(Runtime& rt, const Value& input, CallArgs& args) {
  // getattr(obj, name) only: unlike obj.name, a dict's keys are not attributes.
  const auto bound = BindArgs(args, {"name"}, "attr");
  const std::string name = bound[0] ? Str(rt, *bound[0]) : std::string();
  if (input.is_dict()) {
    if (std::optional<Value> method = GetMethod(input, name)) return *method;
    return Value::Undefined(ObjectRepr(input) + " has no attribute '" + name + "'");
  }
  return GetAttr(input, name);
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False).
Value ToJson(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
  JsonOptions options;
  options.ensure_ascii = Flag(bound[0]);
  options.sort_keys = Flag(bound[3]);
  if (bound[1] && !bound[1]->is_none()) {
    if (bound[1]->is_string()) {
      options.indent = bound[1]->string();
    } else if (bound[1]->is_integral()) {
      const std::int64_t n = bound[1]->integer();
      if (n > 1024) Fail("tojson: indent too wide", kReasonLimit, StatusCode::kResourceExhausted);
      options.indent = std::string(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)), ' ');
    } else {
      Fail(std::string("TypeError: tojson's indent must be an int or a str, not ") + bound[1]->TypeName());
    }
  }
  if (bound[2] && !bound[2]->is_none()) {
    const Value& seps = *bound[2];
    if (!seps.is_list() || seps.list().items.size() != 2 || !seps.list().items[0].is_string() ||
        !seps.list().items[1].is_string()) {
      Fail("TypeError: tojson's separators must be a pair of strings");
    }
    options.item_separator = seps.list().items[0].string();
    options.key_separator = seps.list().items[1].string();
  }
  std::string out = JsonDumps(input, options, rt.max_bytes());
  rt.Charge(out.size() / 64);
  return Value(std::move(out));
}

struct NamedFilter {
  const char* name;
  FilterFn fn;
};

constexpr NamedFilter kFilters[] = {
    {"abs", Abs}, {"attr", Attr}, {"capitalize", Capitalize}, {"center", Center}, {"count", Length},
    {"d", Default}, {"default", Default}, {"dictsort", FilterDictSort}, {"e", Escape}, {"escape", Escape},
    {"first", First}, {"float", Float}, {"format", Format}, {"indent", Indent}, {"int", Int}, {"items", Items},
    {"join", FilterJoin}, {"last", Last}, {"length", Length}, {"list", List}, {"lower", Lower}, {"map", FilterMap},
    {"max", FilterMax}, {"min", FilterMin}, {"reject", FilterReject}, {"rejectattr", FilterRejectAttr},
    {"replace", Replace}, {"reverse", Reverse}, {"round", Round}, {"safe", Safe}, {"select", FilterSelect},
    {"selectattr", FilterSelectAttr}, {"sort", FilterSort}, {"string", String}, {"sum", FilterSum},
    {"title", Title}, {"tojson", ToJson}, {"trim", Trim}, {"unique", FilterUnique}, {"upper", Upper},
    {"wordcount", WordCount},
};

}  // namespace

FilterFn FindFilter(const std::string& name) {
  for (const NamedFilter& f : kFilters) {
    if (name == f.name) return f.fn;
  }
  return nullptr;
}

}  // namespace unmask::jinja
