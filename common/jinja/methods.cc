// The global functions (range, dict, namespace, raise_exception, strftime_now) and the methods
// of str, dict, list and loop that templates call.
#include <algorithm>
#include <ctime>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/py_format.h"
#include "common/jinja/py_string.h"
#include "common/jinja/runtime.h"

namespace unmask::jinja {

std::vector<std::optional<Value>> BindArgs(const CallArgs& args, const std::vector<const char*>& names,
                                           const std::string& callee) {
  std::vector<std::optional<Value>> bound(names.size());
  if (args.args.size() > names.size()) {
    Fail("TypeError: " + callee + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
         std::to_string(args.args.size()) + " given)");
  }
  for (std::size_t i = 0; i < args.args.size(); ++i) bound[i] = args.args[i];
  for (const auto& kw : args.kwargs) {
    const std::string& key = kw.first;
    const Value& value = kw.second;
    const auto it = std::find_if(names.begin(), names.end(), [&key](const char* n) { return key == n; });
    if (it == names.end()) Fail("TypeError: " + callee + "() got an unexpected keyword argument '" + key + "'");
    auto& slot = bound[static_cast<std::size_t>(it - names.begin())];
    if (slot) Fail("TypeError: " + callee + "() got multiple values for argument '" + key + "'");
    slot = value;
  }
  return bound;
}

namespace {

const std::string& StrArg(const std::optional<Value>& v, const char* what) {
  if (!v || !v->is_string()) Fail(std::string("TypeError: ") + what + " must be str, not " + (v ? v->TypeName() : "nothing"));
  return v->string();
}

std::int64_t IntArg(const std::optional<Value>& v, std::int64_t if_none, const char* what) {
  if (!v || v->is_none()) return if_none;
  if (!v->is_integral()) Fail(std::string("TypeError: ") + what + " must be an integer, not " + v->TypeName());
  return v->integer();
}

Value StringList(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (std::string& p : parts) items.emplace_back(std::move(p));
  return Value::List(std::move(items));
}

// Global functions.

Value Range(Runtime&, CallArgs& args) {
  if (!args.kwargs.empty()) Fail("TypeError: range() takes no keyword arguments");
  if (args.args.empty() || args.args.size() > 3) Fail("TypeError: range expected 1 to 3 arguments");
  std::int64_t v[3] = {0, 0, 1};
  for (std::size_t i = 0; i < args.args.size(); ++i) {
    if (!args.args[i].is_integral()) Fail(std::string("TypeError: '") + args.args[i].TypeName() + "' object cannot be interpreted as an integer");
  }
  if (args.args.size() == 1) v[1] = args.args[0].integer();
  else for (std::size_t i = 0; i < args.args.size(); ++i) v[i] = args.args[i].integer();
  if (v[2] == 0) Fail("ValueError: range() arg 3 must not be zero");
  const long double count = v[2] > 0 ? (static_cast<long double>(v[1]) - v[0] + v[2] - 1) / v[2]
                                      : (static_cast<long double>(v[0]) - v[1] - v[2] - 1) / -v[2];
  if (count > 100000) {
    Fail("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).", kReasonLimit,
         StatusCode::kResourceExhausted);
  }
  std::vector<Value> items;
  items.reserve(static_cast<std::size_t>(std::max<long double>(count, 0)));
  for (std::int64_t i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2]) items.emplace_back(i);
  return Value::Range(v[0], v[1], v[2], std::move(items));
}

// dict(mapping or pairs, **kwargs), as Python's dict() and Jinja's namespace() take them.
std::vector<std::pair<Value, Value>> DictItems(const CallArgs& args, const char* callee) {
  std::vector<std::pair<Value, Value>> items;
  if (args.args.size() > 1) Fail(std::string("TypeError: ") + callee + " expected at most 1 positional argument");
  if (args.args.size() == 1) {
    const Value& init = args.args[0];
    if (init.is_dict()) {
      items = init.dict().items;
    } else {
      for (const Value& pair : Iterate(init)) {
        if (!pair.is_list() || pair.list().items.size() != 2) Fail(std::string("ValueError: ") + callee + ": each item must be a pair");
        items.emplace_back(pair.list().items[0], pair.list().items[1]);
      }
    }
  }
  for (const auto& [key, value] : args.kwargs) items.emplace_back(Value(key), value);
  return items;
}

Value Dict(Runtime&, CallArgs& args) { return Value::Dict(DictItems(args, "dict()")); }

Value Namespace(Runtime& rt, CallArgs& args) {
  Value ns = rt.NewNamespace();
  for (auto& [key, value] : DictItems(args, "namespace()")) {
    if (!key.is_string()) Fail("TypeError: namespace() keywords must be strings");
    ns.ns().Set(key.string(), value);
  }
  return ns;
}

Value RaiseException(Runtime& rt, CallArgs& args) {
  const auto bound = BindArgs(args, {"message"}, "raise_exception");
  Fail(bound[0] ? PyStr(*bound[0], rt.max_bytes()) : std::string("raise_exception() called"), kReasonRaised);
}

Value StrftimeNow(Runtime& rt, CallArgs& args) {
  const auto bound = BindArgs(args, {"format"}, "strftime_now");
  const std::string& format = StrArg(bound[0], "strftime format");
  if (format.empty()) return Value(std::string());
  const std::time_t now = rt.Now();
  std::tm tm{};
  localtime_r(&now, &tm);
  for (std::size_t size = 256; size <= (std::size_t{1} << 16) && size < 64 * format.size() + 256 * 64; size *= 4) {
    std::string buffer(size, '\0');
    const std::size_t n = std::strftime(buffer.data(), buffer.size(), format.c_str(), &tm);
    if (n > 0) return Value(buffer.substr(0, n));
  }
  return Value(std::string());
}

Value Unsupported(const std::string& what) {
  return Value::Function(what, [what](Runtime&, CallArgs&) -> Value {
    Fail(what + " is not supported by this template interpreter", kReasonUnsupported);
  });
}

// Methods of str.

Value StrStrip(const std::string& s, const std::string& name, CallArgs& args) {
  const auto bound = BindArgs(args, {"chars"}, "str." + name);
  const std::string* chars = bound[0] && !bound[0]->is_none() ? &StrArg(bound[0], "strip chars") : nullptr;
  return Value(py::Strip(s, chars, name != "rstrip", name != "lstrip"));  // (Markup-ness is restored by the caller)
}

Value StrSplit(const std::string& s, const std::string& name, CallArgs& args) {
  const auto bound = BindArgs(args, {"sep", "maxsplit"}, "str." + name);
  const std::string* sep = bound[0] && !bound[0]->is_none() ? &StrArg(bound[0], "separator") : nullptr;
  const std::int64_t maxsplit = IntArg(bound[1], -1, "maxsplit");
  return StringList(name == "split" ? py::Split(s, sep, maxsplit) : py::RSplit(s, sep, maxsplit));
}

Value StrAffix(const std::string& s, bool starts, CallArgs& args) {
  const auto bound = BindArgs(args, {"prefix", "start", "end"}, starts ? "str.startswith" : "str.endswith");
  std::string sub = s;
  if (bound[1] || bound[2]) {
    const auto offsets = py::CharOffsets(s);
    const auto n = static_cast<std::int64_t>(offsets.size()) - 1;
    const auto clamp = [&](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + n : i, 0, n); };
    const std::int64_t b = clamp(IntArg(bound[1], 0, "start")), e = clamp(IntArg(bound[2], n, "end"));
    sub = b <= e ? s.substr(offsets[b], offsets[e] - offsets[b]) : std::string();
  }
  std::vector<Value> candidates;
  if (bound[0] && bound[0]->is_tuple()) candidates = bound[0]->list().items;
  else candidates.push_back(bound[0] ? *bound[0] : Value());
  for (const Value& c : candidates) {
    const std::string affix = StrArg(c, starts ? "startswith's prefix" : "endswith's suffix");  // (c converts to a temporary)
    if (starts ? py::StartsWith(sub, affix) : py::EndsWith(sub, affix)) return Value(true);
  }
  return Value(false);
}

Value StrJoin(Runtime& rt, const std::string& sep, CallArgs& args) {
  const auto bound = BindArgs(args, {"iterable"}, "str.join");
  std::string out;
  std::size_t i = 0;
  for (const Value& item : Iterate(bound[0] ? *bound[0] : Value())) {
    if (!item.is_string()) Fail("TypeError: sequence item " + std::to_string(i) + ": expected str instance, " + item.TypeName() + " found");
    if (i++ > 0) out += sep;
    out += item.string();
    if (out.size() > rt.max_bytes()) Fail("a string longer than the limit", kReasonLimit, StatusCode::kResourceExhausted);
  }
  return Value(std::move(out));
}

template <typename Pred>
Value StrIs(const std::string& s, Pred pred) {
  if (s.empty()) return Value(false);
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    if (!pred(py::DecodeAt(s, i, &len))) return Value(false);
  }
  return Value(true);
}

Value StrCase(const std::string& s, bool upper) {
  bool cased = false;
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
    const char32_t cp = py::DecodeAt(s, i, &len);
    if (!py::IsCased(cp)) continue;
    if ((upper ? py::SimpleUpper(cp) : py::SimpleLower(cp)) != cp) return Value(false);
    cased = true;
  }
  return Value(cased);
}

Value CallStrMethod(Runtime& rt, const std::string& s, const std::string& name, CallArgs& args) {
  const auto none = [&](const char* method) { BindArgs(args, {}, std::string("str.") + method); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") return StrStrip(s, name, args);
  if (name == "split" || name == "rsplit") return StrSplit(s, name, args);
  if (name == "startswith" || name == "endswith") return StrAffix(s, name == "startswith", args);
  if (name == "join") return StrJoin(rt, s, args);
  if (name == "upper") return none("upper"), Value(py::Upper(s));
  if (name == "lower") return none("lower"), Value(py::Lower(s));
  if (name == "title") return none("title"), Value(py::Title(s));
  if (name == "capitalize") return none("capitalize"), Value(py::Capitalize(s));
  if (name == "splitlines") return none("splitlines"), StringList(py::SplitLines(s));
  if (name == "isdigit") return none("isdigit"), StrIs(s, py::IsDigit);
  if (name == "isalpha") return none("isalpha"), StrIs(s, py::IsAlpha);
  if (name == "isalnum") return none("isalnum"), StrIs(s, [](char32_t c) { return py::IsAlpha(c) || py::IsDigit(c); });
  if (name == "isspace") return none("isspace"), StrIs(s, py::IsSpace);
  if (name == "islower" || name == "isupper") return none(name.c_str()), StrCase(s, name == "isupper");
  const bool fix = name == "removeprefix" || name == "removesuffix";
  const auto bound = BindArgs(args, {"a", "b", "c"}, "str." + name);
  if (fix) {
    const std::string& affix = StrArg(bound[0], name.c_str());
    if (name == "removeprefix") return Value(py::StartsWith(s, affix) ? s.substr(affix.size()) : s);
    return Value(py::EndsWith(s, affix) ? s.substr(0, s.size() - affix.size()) : s);
  }
  if (name == "replace") {
    return Value(py::Replace(s, StrArg(bound[0], "replace's old"), StrArg(bound[1], "replace's new"),
                             IntArg(bound[2], -1, "count"), rt.max_bytes()));
  }
  if (name == "find" || name == "rfind") return Value(py::Find(s, StrArg(bound[0], "find's sub"), name == "rfind"));
  if (name == "count") return Value(py::Count(s, StrArg(bound[0], "count's sub")));
  Fail("str." + name + "() is not supported by this template interpreter", kReasonUnsupported);
}

bool IsStrMethod(const std::string& name) {
  static const char* const kImplemented[] = {
      "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "join", "upper", "lower", "title",
      "capitalize", "splitlines", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "removeprefix",
      "removesuffix", "replace", "find", "rfind", "count"};
  return std::find_if(std::begin(kImplemented), std::end(kImplemented), [&](const char* m) { return name == m; }) !=
         std::end(kImplemented);
}

bool IsOtherStrAttribute(const std::string& name) {
  static const char* const kOthers[] = {
      "casefold", "center", "encode", "expandtabs", "format", "format_map", "index", "isascii", "isdecimal",
      "isidentifier", "isnumeric", "isprintable", "istitle", "ljust", "maketrans", "partition", "rindex", "rjust",
      "rpartition", "swapcase", "translate", "zfill"};
  return std::find_if(std::begin(kOthers), std::end(kOthers), [&](const char* m) { return name == m; }) != std::end(kOthers);
}

// Methods of dict, list and loop.

Value CallDictMethod(const Value& obj, const std::string& name, CallArgs& args) {
  const DictData& d = obj.dict();
  if (name == "get") {
    const auto bound = BindArgs(args, {"key", "default"}, "dict.get");
    const Value* v = bound[0] ? d.Find(*bound[0]) : nullptr;
    return v != nullptr ? *v : (bound[1] ? *bound[1] : Value::None());
  }
  BindArgs(args, {}, "dict." + name);
  std::vector<Value> out;
  for (const auto& [key, value] : d.items) {
    if (name == "keys") out.push_back(key);
    else if (name == "values") out.push_back(value);
    else out.push_back(Value::List({key, value}, true));
  }
  const SeqKind view = name == "keys" ? SeqKind::kDictKeys : name == "values" ? SeqKind::kDictValues : SeqKind::kDictItems;
  return Value::Sequence(std::move(out), view);
}

Value CallListMethod(const Value& obj, const std::string& name, CallArgs& args) {
  const auto bound = BindArgs(args, {"value"}, "list." + name);
  const auto& items = obj.list().items;
  std::int64_t count = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!bound[0] || !Equals(items[i], *bound[0])) continue;
    if (name == "index") return Value(static_cast<std::int64_t>(i));
    ++count;
  }
  if (name == "index") Fail("ValueError: the value is not in the list");
  return Value(count);
}

Value CallLoopMethod(const Value& obj, const std::string& name, CallArgs& args) {
  LoopData& loop = obj.loop();
  if (!args.kwargs.empty()) Fail("TypeError: loop." + name + "() takes no keyword arguments");
  if (name == "cycle") {
    if (args.args.empty()) Fail("TypeError: no items for cycling given");
    return args.args[loop.index0 % args.args.size()];
  }
  Value current = Value::List(args.args);
  const bool changed = !loop.last_changed || !Equals(*loop.last_changed, current);
  loop.last_changed = std::move(current);
  return Value(changed);
}

Value Bind(const Value& obj, const std::string& name,
           Value (*call)(Runtime&, const Value&, const std::string&, CallArgs&)) {
  return Value::Function(name, [obj, name, call](Runtime& rt, CallArgs& args) { return call(rt, obj, name, args); });
}

Value UnsafeAttribute(const Value& obj, const std::string& name) {
  return Value::Undefined("access to attribute '" + name + "' of '" + obj.TypeName() + "' object is unsafe.");
}

}  // namespace

Value GlobalFunction(const std::string& name) {
  static const std::pair<const char*, Value (*)(Runtime&, CallArgs&)> kGlobals[] = {
      {"range", Range}, {"dict", Dict}, {"namespace", Namespace}, {"raise_exception", RaiseException},
      {"strftime_now", StrftimeNow}};
  for (const auto& [global, fn] : kGlobals) {
    if (name == global) return Value::Function(global, fn);
  }
  if (name == "lipsum" || name == "cycler" || name == "joiner") return Unsupported(name + "()");
  return Value();
}

std::optional<Value> GetMethod(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    if (IsStrMethod(name)) {
      return Bind(obj, name, [](Runtime& rt, const Value& o, const std::string& n, CallArgs& a) {
        Value result = CallStrMethod(rt, o.string(), n, a);
        // Markup's own strip, case and replace methods return a Markup.
        static const char* const kKeep[] = {"strip", "lstrip", "rstrip", "upper", "lower", "title", "capitalize"};
        const bool keep = std::any_of(std::begin(kKeep), std::end(kKeep), [&](const char* m) { return n == m; });
        if (o.is_markup() && keep && result.is_string()) return Value::Markup(result.string());
        return result;
      });
    }
    if (IsOtherStrAttribute(name)) return Unsupported("str." + name + "()");
    return std::nullopt;
  }
  if (obj.is_dict()) {
    if (name == "get" || name == "keys" || name == "values" || name == "items") {
      return Bind(obj, name, [](Runtime&, const Value& o, const std::string& n, CallArgs& a) { return CallDictMethod(o, n, a); });
    }
    if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear") {
      return UnsafeAttribute(obj, name);
    }
    if (name == "copy" || name == "fromkeys") return Unsupported("dict." + name + "()");
    return std::nullopt;
  }
  if (obj.is_list()) {
    if (name == "index" || name == "count") {
      return Bind(obj, name, [](Runtime&, const Value& o, const std::string& n, CallArgs& a) { return CallListMethod(o, n, a); });
    }
    static const char* const kUnsafe[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};
    for (const char* m : kUnsafe) {
      if (name == m && !obj.is_tuple()) return UnsafeAttribute(obj, name);
    }
    return std::nullopt;
  }
  if (obj.is_loop() && (name == "cycle" || name == "changed")) {
    return Bind(obj, name, [](Runtime&, const Value& o, const std::string& n, CallArgs& a) { return CallLoopMethod(o, n, a); });
  }
  return std::nullopt;
}

}  // namespace unmask::jinja
