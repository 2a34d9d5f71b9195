// The expression half of the parser (jinja2/parser.py's parse_expression and below).
#include <algorithm>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/parser.h"

namespace unmask::jinja {

void Parser::Seal(Expr* e) const {
  int height = 0;
  for (const auto& arg : e->args) {
    if (arg) height = std::max(height, arg->height);
  }
  for (const auto& kw : e->kwargs) height = std::max(height, kw.second->height);
  e->height = height + 1;
  using K = Expr::Kind;
  const K k = e->kind;
  e->is_constant = k != K::kName && k != K::kCall && k != K::kFilter && k != K::kTest;
  for (const auto& arg : e->args) e->is_constant = e->is_constant && (arg == nullptr || arg->is_constant);
  if (e->height > kMaxExprHeight) {
    FailAt(e->pos, "expression too long (a tree more than " + std::to_string(kMaxExprHeight) + " levels high)",
           kReasonLimit, StatusCode::kResourceExhausted);
  }
}

ExprPtr Parser::MakeExpr(Expr::Kind kind, std::uint32_t pos, std::vector<ExprPtr> args) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  e->args = std::move(args);
  Seal(e.get());
  return e;
}

bool Parser::IsTupleEnd(const char* extra_end) const {
  if (Cur().type == Tok::kVarEnd || Cur().type == Tok::kBlockEnd || IsOp(")")) return true;
  return extra_end != nullptr && IsName(extra_end);
}

ExprPtr Parser::ParseExpression(bool with_condexpr) { return with_condexpr ? ParseCondExpr() : ParseOr(); }

ExprPtr Parser::ParseTuple(bool with_condexpr, const char* extra_end, bool explicit_parentheses) {
  const std::uint32_t pos = Cur().pos;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) ExpectOp(",");
    if (IsTupleEnd(extra_end)) break;
    items.push_back(ParseExpression(with_condexpr));
    if (!IsOp(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parentheses) FailHere("expected an expression, got " + DescribeToken(Cur()));
  }
  return MakeExpr(Expr::Kind::kTuple, pos, std::move(items));
}

ExprPtr Parser::ParseCondExpr() {
  Nest nest(this, &expr_depth_, kMaxExprNesting, "expressions");
  ExprPtr expr = ParseOr();
  while (IsName("if")) {
    const std::uint32_t pos = Next().pos;
    std::vector<ExprPtr> args;
    args.push_back(ParseOr());  // the condition
    args.push_back(std::move(expr));
    args.push_back(SkipName("else") ? ParseCondExpr() : nullptr);
    expr = MakeExpr(Expr::Kind::kCondExpr, pos, std::move(args));
    expr->name = LineColumn(source_, pos);  // for the error of a missing else
  }
  return expr;
}

ExprPtr Parser::ParseOr() {
  ExprPtr left = ParseAnd();
  while (IsName("or")) {
    const std::uint32_t pos = Next().pos;
    std::vector<ExprPtr> args;
    args.push_back(std::move(left));
    args.push_back(ParseAnd());
    left = MakeExpr(Expr::Kind::kOr, pos, std::move(args));
  }
  return left;
}

ExprPtr Parser::ParseAnd() {
  ExprPtr left = ParseNot();
  while (IsName("and")) {
    const std::uint32_t pos = Next().pos;
    std::vector<ExprPtr> args;
    args.push_back(std::move(left));
    args.push_back(ParseNot());
    left = MakeExpr(Expr::Kind::kAnd, pos, std::move(args));
  }
  return left;
}

ExprPtr Parser::ParseNot() {
  if (!IsName("not")) return ParseCompare();
  Nest nest(this, &expr_depth_, kMaxExprNesting, "expressions");
  const std::uint32_t pos = Next().pos;
  std::vector<ExprPtr> args;
  args.push_back(ParseNot());
  return MakeExpr(Expr::Kind::kNot, pos, std::move(args));
}

ExprPtr Parser::ParseCompare() {
  ExprPtr first = ParseMath1();
  const std::uint32_t pos = Cur().pos;  // the first operator
  std::vector<ExprPtr> args;
  std::vector<std::string> ops;
  while (true) {
    static const char* const kOps[] = {"==", "!=", "<", ">", "<=", ">="};
    const bool is_op = Cur().type == Tok::kOp &&
                       std::any_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return Cur().value == op; });
    if (is_op) {
      ops.push_back(Next().value);
    } else if (SkipName("in")) {
      ops.emplace_back("in");
    } else if (IsName("not") && Peek().type == Tok::kName && Peek().value == "in") {
      Next();
      Next();
      ops.emplace_back("notin");
    } else {
      break;
    }
    args.push_back(ParseMath1());
  }
  if (ops.empty()) return first;
  args.insert(args.begin(), std::move(first));
  ExprPtr e = MakeExpr(Expr::Kind::kCompare, pos, std::move(args));
  e->ops = std::move(ops);
  return e;
}

namespace {

ExprPtr Binary(Parser* p, ExprPtr left, ExprPtr right, const Token& op,
               ExprPtr (Parser::*make)(Expr::Kind, std::uint32_t, std::vector<ExprPtr>)) {
  std::vector<ExprPtr> args;
  args.push_back(std::move(left));
  args.push_back(std::move(right));
  ExprPtr e = (p->*make)(Expr::Kind::kBinary, op.pos, std::move(args));
  e->name = op.value;
  return e;
}

}  // namespace

ExprPtr Parser::ParseMath1() {
  ExprPtr left = ParseConcat();
  while (IsOp("+") || IsOp("-")) {
    const Token op = Next();
    left = Binary(this, std::move(left), ParseConcat(), op, &Parser::MakeExpr);
  }
  return left;
}

ExprPtr Parser::ParseConcat() {
  const std::uint32_t pos = Cur().pos;
  std::vector<ExprPtr> args;
  args.push_back(ParseMath2());
  while (SkipOp("~")) args.push_back(ParseMath2());
  if (args.size() == 1) return std::move(args[0]);
  return MakeExpr(Expr::Kind::kConcat, pos, std::move(args));
}

ExprPtr Parser::ParseMath2() {
  ExprPtr left = ParsePow();
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const Token op = Next();
    left = Binary(this, std::move(left), ParsePow(), op, &Parser::MakeExpr);
  }
  return left;
}

ExprPtr Parser::ParsePow() {
  ExprPtr left = ParseUnary(true);
  while (IsOp("**")) {
    const Token op = Next();
    left = Binary(this, std::move(left), ParseUnary(true), op, &Parser::MakeExpr);
  }
  return left;
}

ExprPtr Parser::ParseUnary(bool with_filter) {
  Nest nest(this, &expr_depth_, kMaxExprNesting, "expressions");
  const std::uint32_t pos = Cur().pos;
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    const bool neg = Next().value == "-";
    std::vector<ExprPtr> args;
    args.push_back(ParseUnary(false));
    node = MakeExpr(neg ? Expr::Kind::kNeg : Expr::Kind::kPos, pos, std::move(args));
  } else {
    node = ParsePrimary();
  }
  node = ParsePostfix(std::move(node));
  if (with_filter) node = ParseFilterExpr(std::move(node));
  return node;
}

ExprPtr Parser::ParsePrimary() {
  const Token& token = Cur();
  ExprPtr node = MakeExpr(Expr::Kind::kConst, token.pos);
  if (token.type == Tok::kName) {
    const std::string& v = token.value;
    if (v == "true" || v == "True" || v == "false" || v == "False") node->constant = Value(v == "true" || v == "True");
    else if (v == "none" || v == "None") node->constant = Value::None();
    else node->kind = Expr::Kind::kName, node->name = v, node->is_constant = false;
    for (Stmt* macro : macros_) {  // a macro takes extra arguments only when its body reads them
      if (v == "varargs") macro->uses_varargs = true;
      if (v == "kwargs") macro->uses_kwargs = true;
    }
    Next();
  } else if (token.type == Tok::kString) {
    std::string text;
    while (Cur().type == Tok::kString) text += Next().value;
    node->constant = Value(std::move(text));
  } else if (token.type == Tok::kInt) {
    node->constant = Value(Next().int_value);
  } else if (token.type == Tok::kFloat) {
    node->constant = Value(Next().float_value);
  } else if (IsOp("(")) {
    Next();
    node = ParseTuple(true, nullptr, true);
    ExpectOp(")");
  } else if (IsOp("[")) {
    node = ParseList();
  } else if (IsOp("{")) {
    node = ParseDict();
  } else {
    FailHere("unexpected " + DescribeToken(token));
  }
  return node;
}

ExprPtr Parser::ParseList() {
  const std::uint32_t pos = Next().pos;
  std::vector<ExprPtr> items;
  while (!IsOp("]")) {
    if (!items.empty()) ExpectOp(",");
    if (IsOp("]")) break;
    items.push_back(ParseExpression());
  }
  ExpectOp("]");
  return MakeExpr(Expr::Kind::kList, pos, std::move(items));
}

ExprPtr Parser::ParseDict() {
  const std::uint32_t pos = Next().pos;
  std::vector<ExprPtr> items;
  while (!IsOp("}")) {
    if (!items.empty()) ExpectOp(",");
    if (IsOp("}")) break;
    items.push_back(ParseExpression());
    ExpectOp(":");
    items.push_back(ParseExpression());
  }
  ExpectOp("}");
  return MakeExpr(Expr::Kind::kDict, pos, std::move(items));
}

ExprPtr Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".") || IsOp("[")) node = ParseSubscript(std::move(node));
    else if (IsOp("(")) node = ParseCall(std::move(node));
    else return node;
  }
}

ExprPtr Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) node = ParseFilter(std::move(node), false);
    else if (IsName("is")) node = ParseTest(std::move(node));
    else if (IsOp("(")) node = ParseCall(std::move(node));
    else return node;
  }
}

ExprPtr Parser::ParseSubscript(ExprPtr node) {
  const Token token = Next();
  const std::uint32_t pos = node->pos;  // errors show the whole expression, from its start
  std::vector<ExprPtr> args;
  args.push_back(std::move(node));
  if (token.value == ".") {
    const Token attr = Next();
    if (attr.type == Tok::kName) {
      ExprPtr e = MakeExpr(Expr::Kind::kGetattr, pos, std::move(args));
      e->name = attr.value;
      return e;
    }
    if (attr.type != Tok::kInt) FailAt(attr.pos, "expected name or number after '.'", kReasonSyntax);
    ExprPtr key = MakeExpr(Expr::Kind::kConst, attr.pos);
    key->constant = Value(attr.int_value);
    args.push_back(std::move(key));
    return MakeExpr(Expr::Kind::kGetitem, pos, std::move(args));
  }
  std::vector<ExprPtr> keys;
  while (!IsOp("]")) {
    if (!keys.empty()) ExpectOp(",");
    keys.push_back(ParseSubscribed());
  }
  ExpectOp("]");
  if (keys.size() == 1) args.push_back(std::move(keys[0]));
  else args.push_back(MakeExpr(Expr::Kind::kTuple, token.pos, std::move(keys)));
  return MakeExpr(Expr::Kind::kGetitem, pos, std::move(args));
}

ExprPtr Parser::ParseSubscribed() {
  const std::uint32_t pos = Cur().pos;
  std::vector<ExprPtr> parts;
  if (SkipOp(":")) {
    parts.push_back(nullptr);
  } else {
    ExprPtr node = ParseExpression();
    if (!SkipOp(":")) return node;
    parts.push_back(std::move(node));
  }
  const auto at_end = [&] { return IsOp("]") || IsOp(","); };
  if (IsOp(":") || at_end()) parts.push_back(nullptr);
  else parts.push_back(ParseExpression());
  if (SkipOp(":") && !at_end()) parts.push_back(ParseExpression());
  else parts.push_back(nullptr);
  return MakeExpr(Expr::Kind::kSlice, pos, std::move(parts));
}

void Parser::ParseCallArgs(Expr* call) {
  ExpectOp("(");
  bool require_comma = false;
  while (!IsOp(")")) {
    if (require_comma) {
      ExpectOp(",");
      if (IsOp(")")) break;
    }
    if (IsOp("*") || IsOp("**")) FailAt(Cur().pos, "*args and **kwargs in calls are not supported", kReasonUnsupported);
    if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().value == "=") {
      std::string key = Next().value;
      Next();
      call->kwargs.emplace_back(std::move(key), ParseExpression());
    } else {
      if (!call->kwargs.empty()) FailHere("a positional argument follows a keyword argument");
      call->args.push_back(ParseExpression());
    }
    require_comma = true;
  }
  ExpectOp(")");
  Seal(call);
}

ExprPtr Parser::ParseCall(ExprPtr node) {
  std::vector<ExprPtr> args;
  args.push_back(std::move(node));
  const std::uint32_t pos = args[0]->pos;  // the callee's name
  ExprPtr call = MakeExpr(Expr::Kind::kCall, pos, std::move(args));
  ParseCallArgs(call.get());
  return call;
}

ExprPtr Parser::ParseFilter(ExprPtr node, bool start_inline) {
  while (IsOp("|") || start_inline) {
    if (!start_inline) Next();
    start_inline = false;
    const Token name = Expect(Tok::kName, "a filter name");
    std::string full = name.value;
    while (IsOp(".")) {
      Next();
      full += "." + Expect(Tok::kName, "a name").value;
    }
    if (FindFilter(full) == nullptr) FailAt(name.pos, "no filter named '" + full + "'", kReasonSyntax);
    std::vector<ExprPtr> args;
    args.push_back(std::move(node));
    ExprPtr filter = MakeExpr(Expr::Kind::kFilter, name.pos, std::move(args));
    filter->name = full;
    if (IsOp("(")) ParseCallArgs(filter.get());
    node = std::move(filter);
  }
  return node;
}

ExprPtr Parser::ParseTest(ExprPtr node) {
  Next();  // is
  const bool negated = SkipName("not");
  const Token name = Expect(Tok::kName, "a test name");
  std::string full = name.value;
  while (IsOp(".")) {
    Next();
    full += "." + Expect(Tok::kName, "a name").value;
  }
  if (FindTest(full) == nullptr) FailAt(name.pos, "no test named '" + full + "'", kReasonSyntax);
  std::vector<ExprPtr> args;
  args.push_back(std::move(node));
  ExprPtr test = MakeExpr(Expr::Kind::kTest, name.pos, std::move(args));
  test->name = full;
  const Tok t = Cur().type;
  if (IsOp("(")) {
    ParseCallArgs(test.get());
  } else if ((t == Tok::kName || t == Tok::kString || t == Tok::kInt || t == Tok::kFloat || IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) FailHere("you cannot chain multiple tests with is");
    test->args.push_back(ParsePostfix(ParsePrimary()));
    Seal(test.get());
  }
  if (!negated) return test;
  std::vector<ExprPtr> args2;
  args2.push_back(std::move(test));
  return MakeExpr(Expr::Kind::kNot, name.pos, std::move(args2));
}

}  // namespace unmask::jinja
