#include "common/jinja/operators.h"

#include <cmath>
#include <limits>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/py_format.h"
#include "common/jinja/py_string.h"

namespace unmask::jinja {

namespace {

[[noreturn]] void Unsupported(const std::string& op, const Value& a, const Value& b) {
  Fail("TypeError: unsupported operand type(s) for " + op + ": '" + a.TypeName() + "' and '" + b.TypeName() + "'");
}

[[noreturn]] void Overflow() { Fail("integer overflow (this interpreter's integers are 64-bit)"); }

void CheckSize(std::size_t bytes, std::size_t max_bytes) {
  if (bytes > max_bytes) {
    Fail("a string or list longer than the " + std::to_string(max_bytes) + "-byte limit", kReasonLimit,
         StatusCode::kResourceExhausted);
  }
}

// Python's float // and %.
std::pair<double, double> FloatDivMod(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  return {floordiv, mod};
}

Value Repeat(const Value& seq, std::int64_t times, std::size_t max_bytes) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    const std::string& s = seq.string();
    if (s.empty()) return seq;
    if (static_cast<std::uint64_t>(times) > max_bytes / s.size()) CheckSize(max_bytes + 1, max_bytes);
    std::string out;
    out.reserve(s.size() * static_cast<std::size_t>(times));
    for (std::int64_t i = 0; i < times; ++i) out += s;
    return seq.is_markup() ? Value::Markup(std::move(out)) : Value(std::move(out));
  }
  const auto& items = seq.list().items;
  if (items.empty()) return seq;
  if (static_cast<std::uint64_t>(times) > max_bytes / 8 / items.size()) CheckSize(max_bytes + 1, max_bytes);  // 8 bytes an item
  std::vector<Value> out;
  for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::List(std::move(out), seq.is_tuple());
}

Value IntPow(std::int64_t base, std::int64_t exp) {
  if (exp < 0) {
    if (base == 0) Fail("ZeroDivisionError: 0.0 cannot be raised to a negative power");
    return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  std::int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) Overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) Overflow();
  }
  return Value(result);
}

Value Arithmetic(char op, const Value& a, const Value& b) {
  if (a.is_float() || b.is_float()) {
    const double x = a.number(), y = b.number();
    switch (op) {
      case '+': return Value(x + y);
      case '-': return Value(x - y);
      case '*': return Value(x * y);
      case 'f':
      case '%':
        if (y == 0) Fail(op == 'f' ? "ZeroDivisionError: float floor division by zero" : "ZeroDivisionError: float modulo");
        return Value(op == 'f' ? FloatDivMod(x, y).first : FloatDivMod(x, y).second);
      default: break;
    }
  }
  const std::int64_t x = a.integer(), y = b.integer();
  std::int64_t r = 0;
  switch (op) {
    case '+': if (__builtin_add_overflow(x, y, &r)) Overflow(); return Value(r);
    case '-': if (__builtin_sub_overflow(x, y, &r)) Overflow(); return Value(r);
    case '*': if (__builtin_mul_overflow(x, y, &r)) Overflow(); return Value(r);
    default: break;
  }
  if (y == 0) Fail("ZeroDivisionError: integer division or modulo by zero");
  if (x == std::numeric_limits<std::int64_t>::min() && y == -1) Overflow();
  std::int64_t q = x / y, m = x % y;
  if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
  return Value(op == 'f' ? q : m);
}

// "%s" % value and its kin (%s %r %d %i %%), as Python's str % does: a tuple gives the
// arguments one by one and must be used up; another subscriptable value (list, dict, Undefined)
// may go unused; anything else is the one argument.
Value Format(const Value& format_value, const Value& arg, std::size_t max_bytes) {
  const std::string& format = format_value.string();
  const bool markup = format_value.is_markup();  // Markup % args escapes the args
  const bool tuple = arg.is_tuple();
  const bool mapping = !tuple && ((arg.is_list() || (arg.kind() == Value::Kind::kList && arg.seq() == SeqKind::kRange)) ||
                                  arg.is_dict() || arg.is_undefined());
  std::vector<Value> args = tuple ? arg.list().items : std::vector<Value>{arg};
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    const char c = i + 1 < format.size() ? format[++i] : '\0';
    if (c == '%') {
      out += '%';
      continue;
    }
    if (c != 's' && c != 'r' && c != 'd' && c != 'i') Fail(std::string("string formatting with '%") + c + "' is not supported", kReasonUnsupported);
    if (next >= args.size()) Fail("TypeError: not enough arguments for format string");
    const Value& v = markup && c != 'd' && c != 'i' ? HtmlEscape(args[next], max_bytes) : args[next];
    ++next;
    if (c == 's') out += PyStr(v, max_bytes);
    else if (c == 'r') out += PyRepr(v, max_bytes);
    else if (v.is_undefined()) Fail(v.undefined_hint());
    else if (v.is_number()) out += std::to_string(v.is_float() ? static_cast<std::int64_t>(v.number()) : v.integer());
    else Fail(std::string("TypeError: %") + c + " format: a real number is required, not " + v.TypeName());
    CheckSize(out.size(), max_bytes);
  }
  if (next < args.size() && !mapping) Fail("TypeError: not all arguments converted during string formatting");
  return markup ? Value::Markup(std::move(out)) : Value(std::move(out));
}

}  // namespace

Value BinaryOp(const std::string& op, const Value& a, const Value& b, std::size_t max_bytes) {
  if (op == "%" && a.is_string()) return Format(a, b, max_bytes);  // str.__mod__ takes even Undefined
  if (a.is_undefined()) Fail(a.undefined_hint());
  if (b.is_undefined()) Fail(b.undefined_hint());
  const bool numbers = a.is_number() && b.is_number();
  if (op == "+") {
    if (numbers) return Arithmetic('+', a, b);
    if (a.is_string() && b.is_string()) {
      CheckSize(a.string().size() + b.string().size(), max_bytes);
      if (a.is_markup() || b.is_markup()) {  // Markup + str escapes the str
        return Value::Markup(HtmlEscape(a, max_bytes).string() + HtmlEscape(b, max_bytes).string());
      }
      return Value(a.string() + b.string());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      CheckSize((a.list().items.size() + b.list().items.size()) * 8, max_bytes);  // 8 bytes an item
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return Value::List(std::move(items), a.is_tuple());
    }
    if (a.is_string() || (a.is_list() && !a.is_tuple())) {
      Fail(std::string("TypeError: can only concatenate ") + a.TypeName() + " (not \"" + b.TypeName() + "\") to " + a.TypeName());
    }
    Unsupported(op, a, b);
  }
  if (op == "*") {
    if (numbers) return Arithmetic('*', a, b);
    if ((a.is_string() || a.is_list()) && b.is_integral()) return Repeat(a, b.integer(), max_bytes);
    if ((b.is_string() || b.is_list()) && a.is_integral()) return Repeat(b, a.integer(), max_bytes);
    Unsupported(op, a, b);
  }
  if (!numbers) Unsupported(op, a, b);
  if (op == "-") return Arithmetic('-', a, b);
  if (op == "/") {
    if (b.number() == 0) Fail("ZeroDivisionError: division by zero");
    return Value(a.number() / b.number());
  }
  if (op == "//") return Arithmetic('f', a, b);
  if (op == "%") return Arithmetic('%', a, b);
  if (op == "**") {
    if (!a.is_float() && !b.is_float()) return IntPow(a.integer(), b.integer());
    if (a.number() == 0 && b.number() < 0) Fail("ZeroDivisionError: 0.0 cannot be raised to a negative power");
    if (a.number() < 0 && std::trunc(b.number()) != b.number()) Fail("a negative number to a fractional power (a complex number) is not supported", kReasonUnsupported);
    const double r = std::pow(a.number(), b.number());
    if (std::isinf(r) && std::isfinite(a.number()) && std::isfinite(b.number())) {
      Fail("OverflowError: (34, 'Numerical result out of range')");
    }
    return Value(r);
  }
  Fail("unknown operator '" + op + "'");
}

Value UnaryOp(const Value& v, bool negative) {
  if (v.is_undefined()) Fail(v.undefined_hint());
  if (!v.is_number()) Fail(std::string("TypeError: bad operand type for unary ") + (negative ? "-" : "+") + ": '" + v.TypeName() + "'");
  if (v.is_float()) return Value(negative ? -v.number() : v.number());
  if (negative && v.integer() == std::numeric_limits<std::int64_t>::min()) Overflow();
  return Value(negative ? -v.integer() : v.integer());
}

bool Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string()) Fail(std::string("TypeError: 'in <string>' requires string as left operand, not ") + item.TypeName());
      return container.string().find(item.string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : Iterate(container)) {
        if (Equals(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      if ((item.is_list() && !item.is_tuple()) || item.is_dict()) Fail(std::string("TypeError: unhashable type: '") + item.TypeName() + "'");
      return container.dict().Find(item) != nullptr;
    default: Fail(std::string("TypeError: argument of type '") + container.TypeName() + "' is not iterable");
  }
}

std::string ObjectRepr(const Value& obj) {
  if (obj.is_none()) return "None";
  return std::string("'") + obj.TypeName() + " object'";
}

namespace {

Value NoAttribute(const Value& obj, const std::string& name) {
  return Value::Undefined(ObjectRepr(obj) + " has no attribute '" + name + "'");
}

Value LoopAttribute(const Value& obj, const std::string& name) {
  const LoopData& loop = obj.loop();
  const auto length = static_cast<std::int64_t>(loop.items->items.size());
  const auto i = static_cast<std::int64_t>(loop.index0);
  if (name == "index0") return Value(i);
  if (name == "index") return Value(i + 1);
  if (name == "revindex") return Value(length - i);
  if (name == "revindex0") return Value(length - i - 1);
  if (name == "first") return Value(i == 0);
  if (name == "last") return Value(i == length - 1);
  if (name == "length") return Value(length);
  if (name == "depth") return Value(1);
  if (name == "depth0") return Value(0);
  if (name == "previtem") return i > 0 ? loop.items->items[i - 1] : Value::Undefined("there is no previous item");
  if (name == "nextitem") return i + 1 < length ? loop.items->items[i + 1] : Value::Undefined("there is no next item");
  if (std::optional<Value> method = GetMethod(obj, name)) return *method;
  return NoAttribute(obj, name);
}

}  // namespace

Value GetAttr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined: Fail(obj.undefined_hint());
    case Value::Kind::kDict: {
      if (std::optional<Value> method = GetMethod(obj, name)) return *method;
      if (const Value* v = obj.dict().Find(name)) return *v;
      return NoAttribute(obj, name);
    }
    case Value::Kind::kNamespace: {
      if (const Value* v = obj.ns().Find(name)) return *v;
      return NoAttribute(obj, name);
    }
    case Value::Kind::kLoop: return LoopAttribute(obj, name);
    default: {
      if (std::optional<Value> method = GetMethod(obj, name)) return *method;
      return NoAttribute(obj, name);
    }
  }
}

Value GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) Fail(obj.undefined_hint());
  if ((obj.is_indexable() || obj.is_string()) && key.is_integral()) {
    std::int64_t i = key.integer();
    if (obj.is_indexable()) {
      const auto n = static_cast<std::int64_t>(obj.list().items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.list().items[static_cast<std::size_t>(i)];
    } else {
      const std::vector<std::size_t> offsets = py::CharOffsets(obj.string());
      const auto n = static_cast<std::int64_t>(offsets.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(obj.string().substr(offsets[i], offsets[i + 1] - offsets[i]));
    }
  } else if (obj.is_dict()) {
    const bool hashable = !((key.is_list() && !key.is_tuple()) || key.is_dict());
    if (hashable) {
      if (const Value* v = obj.dict().Find(key)) return *v;
    }
  }
  if (key.is_string()) {
    if (!obj.is_dict()) return GetAttr(obj, key.string());
    if (std::optional<Value> method = GetMethod(obj, key.string())) return *method;
    return NoAttribute(obj, key.string());
  }
  return Value::Undefined(ObjectRepr(obj) + " has no element " + PyRepr(key, 1 << 16));
}

Value GetSlice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) Fail(obj.undefined_hint());
  const auto index = [](const Value& v) -> std::optional<std::int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_integral()) Fail("TypeError: slice indices must be integers or None");
    return v.integer();
  };
  if (obj.is_indexable()) {  // a slice of a range is a list here (Python's is a range)
    const auto& items = obj.list().items;
    std::vector<Value> out;
    for (std::int64_t i : py::SliceIndices(static_cast<std::int64_t>(items.size()), index(start), index(stop), index(step))) {
      out.push_back(items[static_cast<std::size_t>(i)]);
    }
    return Value::List(std::move(out), obj.is_tuple());
  }
  if (obj.is_string()) {
    const std::string& s = obj.string();
    const std::vector<std::size_t> offsets = py::CharOffsets(s);
    std::string out;
    for (std::int64_t i : py::SliceIndices(static_cast<std::int64_t>(offsets.size()) - 1, index(start), index(stop), index(step))) {
      out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
    }
    return Value(std::move(out));
  }
  // Jinja subscripts slices directly (not through the sandbox's getitem): errors propagate.
  if (obj.is_dict()) Fail("TypeError: unhashable type: 'slice'");
  Fail(std::string("TypeError: '") + obj.TypeName() + "' object is not subscriptable");
}

}  // namespace unmask::jinja
