// The expression half of the interpreter.
#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_format.h"
#include "common/jinja/runtime.h"
#include "common/jinja/lexer.h"

namespace unmask::jinja {

Value Runtime::Eval(const Expr& e) {
  Charge(1);
  Depth depth(this);
  Value v = EvalNode(e);
  // Building, comparing or iterating many elements, and copying big strings, cost in proportion
  // (a loop doubling a string or a list, or searching a long one, is bounded).
  std::uint64_t work = TakeComparisonWork();
  if (v.is_string()) work += v.string().size() / 64;
  if (work > 0) Charge(work);
  return v;
}

CallArgs Runtime::EvalArgs(const Expr& e, std::size_t first) {
  CallArgs args;
  for (std::size_t i = first; i < e.args.size(); ++i) args.args.push_back(Eval(*e.args[i]));
  for (const auto& [key, value] : e.kwargs) args.kwargs.emplace_back(key, Eval(*value));
  return args;
}

Value Runtime::EvalNode(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kConst: return e.constant;
    case Expr::Kind::kName: return Lookup(e.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const auto& arg : e.args) items.push_back(Eval(*arg));
      pos_ = e.pos;
      return Value::List(std::move(items), e.kind == Expr::Kind::kTuple);
    }
    case Expr::Kind::kDict: {
      std::vector<std::pair<Value, Value>> items;
      for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) items.emplace_back(Eval(*e.args[i]), Eval(*e.args[i + 1]));
      pos_ = e.pos;
      return Value::Dict(std::move(items));
    }
    case Expr::Kind::kGetattr: {
      const Value obj = Eval(*e.args[0]);
      pos_ = e.pos;
      return GetAttr(obj, e.name);
    }
    case Expr::Kind::kGetitem: return EvalGetitem(e);
    case Expr::Kind::kSlice: FailAt(e.pos, "a slice outside of [...]", kReasonSyntax);
    case Expr::Kind::kCall: return EvalCall(e);
    case Expr::Kind::kFilter: return EvalFilter(e, nullptr);
    case Expr::Kind::kTest: return EvalTest(e);
    case Expr::Kind::kNot: return Value(!Eval(*e.args[0]).Truthy());
    case Expr::Kind::kNeg:
    case Expr::Kind::kPos: {
      const Value v = Eval(*e.args[0]);
      pos_ = e.pos;
      return UnaryOp(v, e.kind == Expr::Kind::kNeg);
    }
    case Expr::Kind::kBinary: {
      const Value a = Eval(*e.args[0]);
      const Value b = Eval(*e.args[1]);
      pos_ = e.pos;
      return BinaryOp(e.name, a, b, options_.max_output_bytes);
    }
    case Expr::Kind::kConcat: return EvalConcat(e);
    case Expr::Kind::kCompare: return EvalCompare(e);
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr: {
      Value a = Eval(*e.args[0]);
      if (a.Truthy() == (e.kind == Expr::Kind::kOr)) return a;
      return Eval(*e.args[1]);
    }
    case Expr::Kind::kCondExpr: {
      if (Eval(*e.args[0]).Truthy()) return Eval(*e.args[1]);
      if (e.args[2]) return Eval(*e.args[2]);
      return Value::Undefined("the inline if-expression at " + e.name +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

Value Runtime::EvalGetitem(const Expr& e) {
  const Value obj = Eval(*e.args[0]);
  const Expr& key = *e.args[1];
  if (key.kind != Expr::Kind::kSlice) {
    const Value k = Eval(key);
    pos_ = e.pos;
    return GetItem(obj, k);
  }
  Value parts[3] = {Value::None(), Value::None(), Value::None()};
  for (int i = 0; i < 3; ++i) {
    if (key.args[i]) parts[i] = Eval(*key.args[i]);
  }
  pos_ = e.pos;
  if (e.args[0]->is_constant && !obj.is_indexable() && !obj.is_string()) {
    return Value::Undefined(ObjectRepr(obj) + " has no element (a slice)");  // folded through getitem
  }
  return GetSlice(obj, parts[0], parts[1], parts[2]);
}

Value Runtime::EvalCall(const Expr& e) {
  const Value callee = Eval(*e.args[0]);
  CallArgs args = EvalArgs(e, 1);
  pos_ = e.pos;
  return Call(callee, std::move(args));
}

Value Runtime::Call(const Value& callee, CallArgs args) {
  if (callee.is_undefined()) Fail(callee.undefined_hint());
  if (!callee.is_function()) Fail(std::string("TypeError: '") + callee.TypeName() + "' object is not callable");
  const std::uint32_t pos = pos_;
  Value result = callee.function().fn(*this, args);
  pos_ = pos;
  return result;
}

Value Runtime::EvalFilter(const Expr& e, const Value* block_input) {
  Value input;
  if (e.args[0]) input = e.args[0]->kind == Expr::Kind::kFilter ? EvalFilter(*e.args[0], block_input) : Eval(*e.args[0]);
  else if (block_input != nullptr) input = *block_input;
  CallArgs args = EvalArgs(e, 1);
  pos_ = e.pos;
  return ApplyFilter(e.name, input, std::move(args));
}

Value Runtime::ApplyFilter(const std::string& name, const Value& input, CallArgs args) {
  const FilterFn filter = FindFilter(name);
  if (filter == nullptr) Fail("no filter named '" + name + "'");
  return filter(*this, input, args);
}

bool Runtime::ApplyTest(const std::string& name, const Value& input, CallArgs args) {
  const TestFn test = FindTest(name);
  if (test == nullptr) Fail("no test named '" + name + "'");
  return test(*this, input, args);
}

Value Runtime::EvalTest(const Expr& e) {
  const Value input = Eval(*e.args[0]);
  CallArgs args = EvalArgs(e, 1);
  pos_ = e.pos;
  return Value(ApplyTest(e.name, input, std::move(args)));
}

Value Runtime::EvalCompare(const Expr& e) {
  Value left = Eval(*e.args[0]);
  for (std::size_t i = 0; i < e.ops.size(); ++i) {
    Value right = Eval(*e.args[i + 1]);
    pos_ = e.pos;
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==") ok = Equals(left, right);
    else if (op == "!=") ok = !Equals(left, right);
    else if (op == "<") ok = Less(left, right);
    else if (op == ">") ok = Less(right, left);
    else if (op == "<=") ok = Less(left, right) || Equals(left, right);
    else if (op == ">=") ok = Less(right, left) || Equals(left, right);
    else if (op == "in") ok = Contains(right, left);
    else ok = !Contains(right, left);
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Runtime::EvalConcat(const Expr& e) {
  std::string out;
  for (const auto& arg : e.args) {
    out += PyStr(Eval(*arg), options_.max_output_bytes);
    if (out.size() > options_.max_output_bytes) {
      FailAt(e.pos, "a string longer than " + std::to_string(options_.max_output_bytes) + " bytes", kReasonLimit,
             StatusCode::kResourceExhausted);
    }
  }
  return Value(std::move(out));
}

}  // namespace unmask::jinja
