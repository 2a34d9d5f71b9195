// Jinja2's tests (jinja2/tests.py): `value is name(args)`.
#include <algorithm>
#include <array>
#include <iterator>
#include <utility>
#include <cstring>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_format.h"
#include "common/jinja/py_string.h"
#include "common/jinja/runtime.h"

namespace unmask::jinja {

namespace {

const Value& Arg(const CallArgs& args, const char* test) {
  if (args.args.empty()) Fail(std::string("TypeError: the '") + test + "' test takes an argument");
  return args.args[0];
}

bool Defined(Runtime&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool Undefined(Runtime&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool None(Runtime&, const Value& v, CallArgs&) { return v.is_none(); }
bool Boolean(Runtime&, const Value& v, CallArgs&) { return v.is_bool(); }
bool False(Runtime&, const Value& v, CallArgs&) { return v.is_bool() && !v.boolean(); }
bool True(Runtime&, const Value& v, CallArgs&) { return v.is_bool() && v.boolean(); }
bool Integer(Runtime&, const Value& v, CallArgs&) { return v.is_int(); }
bool Float(Runtime&, const Value& v, CallArgs&) { return v.is_float(); }
bool Number(Runtime&, const Value& v, CallArgs&) { return v.is_number(); }
bool String(Runtime&, const Value& v, CallArgs&) { return v.is_string(); }
bool Mapping(Runtime&, const Value& v, CallArgs&) { return v.is_dict(); }
bool Escaped(Runtime&, const Value&, CallArgs&) { return false; }

bool Iterable(Runtime&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.kind() == Value::Kind::kList || v.is_dict() || v.is_loop();
}

bool Sequence(Runtime&, const Value& v, CallArgs&) { return v.is_undefined() || v.is_string() || v.is_indexable() || v.is_dict(); }

bool Callable(Runtime&, const Value& v, CallArgs&) { return v.is_function() || v.is_undefined(); }

bool SameAs(Runtime&, const Value& v, CallArgs& args) {
  const Value& other = Arg(args, "sameas");
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::kNone:
    case Value::Kind::kUndefined: return true;
    case Value::Kind::kBool: return v.boolean() == other.boolean();
    case Value::Kind::kInt: return v.integer() == other.integer() && v.integer() >= -5 && v.integer() <= 256;
    case Value::Kind::kList: return v.list_ptr() == other.list_ptr();
    case Value::Kind::kNamespace: return v.ns_ptr() == other.ns_ptr();
    default: return false;
  }
}

bool Modulo(const Value& v, const Value& divisor) {
  return Equals(BinaryOp("%", v, divisor, 1 << 20), Value(0));
}

bool Even(Runtime&, const Value& v, CallArgs&) { return Modulo(v, Value(2)); }
bool Odd(Runtime&, const Value& v, CallArgs&) { return Equals(BinaryOp("%", v, Value(2), 1 << 20), Value(1)); }
bool DivisibleBy(Runtime&, const Value& v, CallArgs& args) { return Modulo(v, Arg(args, "divisibleby")); }

bool Lower(Runtime& rt, const Value& v, CallArgs&) {
  const std::string s = PyStr(v, rt.max_bytes());
  return py::Lower(s) == s && py::Upper(s) != s;
}

bool Upper(Runtime& rt, const Value& v, CallArgs&) {
  const std::string s = PyStr(v, rt.max_bytes());
  return py::Upper(s) == s && py::Lower(s) != s;
}

bool Eq(Runtime&, const Value& v, CallArgs& args) { return Equals(v, Arg(args, "==")); }
bool Ne(Runtime&, const Value& v, CallArgs& args) { return !Equals(v, Arg(args, "!=")); }
bool Lt(Runtime&, const Value& v, CallArgs& args) { return Less(v, Arg(args, "<")); }
bool Gt(Runtime&, const Value& v, CallArgs& args) { return Less(Arg(args, ">"), v); }
bool Le(Runtime&, const Value& v, CallArgs& args) { return Less(v, Arg(args, "<=")) || Equals(v, Arg(args, "<=")); }
bool Ge(Runtime&, const Value& v, CallArgs& args) { return Less(Arg(args, ">="), v) || Equals(v, Arg(args, ">=")); }
bool In(Runtime&, const Value& v, CallArgs& args) { return Contains(Arg(args, "in"), v); }
bool IsFilter(Runtime&, const Value& v, CallArgs&) { return v.is_string() && FindFilter(v.string()) != nullptr; }
bool IsTest(Runtime&, const Value& v, CallArgs&) { return v.is_string() && FindTest(v.string()) != nullptr; }

struct NamedTest {
  const char* name;
  TestFn fn;
  std::size_t arity;  // arguments besides the value
};

constexpr NamedTest kTests[] = {
    {"defined", Defined, 0}, {"undefined", Undefined, 0}, {"none", None, 0}, {"boolean", Boolean, 0},
    {"false", False, 0}, {"true", True, 0}, {"integer", Integer, 0}, {"float", Float, 0}, {"number", Number, 0},
    {"string", String, 0}, {"mapping", Mapping, 0}, {"iterable", Iterable, 0}, {"sequence", Sequence, 0},
    {"callable", Callable, 0}, {"sameas", SameAs, 1}, {"escaped", Escaped, 0}, {"even", Even, 0}, {"odd", Odd, 0},
    {"divisibleby", DivisibleBy, 1}, {"lower", Lower, 0}, {"upper", Upper, 0}, {"eq", Eq, 1}, {"equalto", Eq, 1},
    {"==", Eq, 1}, {"ne", Ne, 1}, {"!=", Ne, 1}, {"lt", Lt, 1}, {"lessthan", Lt, 1}, {"<", Lt, 1}, {"le", Le, 1},
    {"<=", Le, 1}, {"gt", Gt, 1}, {"greaterthan", Gt, 1}, {">", Gt, 1}, {"ge", Ge, 1}, {">=", Ge, 1}, {"in", In, 1},
    {"filter", IsFilter, 0}, {"test", IsTest, 0},
};

template <std::size_t I>
bool Checked(Runtime& rt, const Value& v, CallArgs& args) {
  const NamedTest& t = kTests[I];
  if (args.args.size() != t.arity || !args.kwargs.empty()) {
    Fail(std::string("TypeError: the '") + t.name + "' test takes " + std::to_string(t.arity) + " argument(s), " +
         std::to_string(args.args.size() + args.kwargs.size()) + " given");
  }
  return t.fn(rt, v, args);
}

template <std::size_t... I>
constexpr std::array<TestFn, sizeof...(I)> CheckedTests(std::index_sequence<I...>) {
  return {&Checked<I>...};
}

constexpr auto kCheckedTests = CheckedTests(std::make_index_sequence<std::size(kTests)>());

}  // namespace

TestFn FindTest(const std::string& name) {
  for (std::size_t i = 0; i < std::size(kTests); ++i) {
    if (name == kTests[i].name) return kCheckedTests[i];
  }
  return nullptr;
}

}  // namespace unmask::jinja
