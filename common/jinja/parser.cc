#include "common/jinja/parser.h"

#include <algorithm>

#include "common/jinja/error.h"

namespace unmask::jinja {

namespace {

std::string JoinQuoted(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

// Tags Jinja has that a chat template cannot use here.
const char* UnsupportedTag(const std::string& name) {
  static const char* const kTags[] = {"extends", "block", "include", "import", "from", "call", "autoescape", "do"};
  for (const char* tag : kTags) {
    if (name == tag) return tag;
  }
  return nullptr;
}

}  // namespace

Body ParseTemplate(const std::string& source) { return Parser(source, Lex(source)).ParseAll(); }

Parser::Nest::Nest(Parser* p, int* depth, int limit, const char* what) : depth_(depth) {
  if (++*depth_ > limit) {
    --*depth_;
    p->FailHere(std::string(what) + " nested more than " + std::to_string(limit) + " deep");
  }
}

const Token& Parser::Peek(std::size_t n) const { return tokens_[std::min(index_ + n, tokens_.size() - 1)]; }

Token Parser::Next() {
  Token t = tokens_[index_];
  if (index_ + 1 < tokens_.size()) ++index_;
  return t;
}

bool Parser::SkipName(const char* value) {
  if (!IsName(value)) return false;
  Next();
  return true;
}

bool Parser::SkipOp(const char* op) {
  if (!IsOp(op)) return false;
  Next();
  return true;
}

void Parser::FailHere(const std::string& message) const { FailAt(Cur().pos, message, kReasonSyntax); }

Token Parser::Expect(Tok type, const char* what) {
  if (Cur().type != type) FailHere(std::string("expected ") + what + ", got " + DescribeToken(Cur()));
  return Next();
}

void Parser::ExpectOp(const char* op) {
  if (!IsOp(op)) FailHere(std::string("expected '") + op + "', got " + DescribeToken(Cur()));
  Next();
}

Body Parser::ParseAll() {
  Body body = Subparse({});
  if (Cur().type != Tok::kEof) FailHere("unexpected " + DescribeToken(Cur()));
  return body;
}

void Parser::FailUnclosed(const std::vector<std::string>& end_names) const {
  std::string message = "unexpected end of template";
  if (!open_.empty()) {
    message += ": the '" + open_.back().name + "' block at " + LineColumn(source_, open_.back().pos) + " was never closed (expected " +
               JoinQuoted(end_names) + ")";
  }
  FailAt(Cur().pos, message, kReasonSyntax);
}

Body Parser::Subparse(const std::vector<std::string>& end_names) {
  Body body;
  while (Cur().type != Tok::kEof) {
    const Token& token = Cur();
    if (token.type == Tok::kData) {
      auto stmt = std::make_unique<Stmt>();
      stmt->kind = Stmt::Kind::kText;
      stmt->pos = token.pos;
      stmt->text = token.value;
      body.push_back(std::move(stmt));
      Next();
    } else if (token.type == Tok::kVarBegin) {
      Next();
      auto stmt = std::make_unique<Stmt>();
      stmt->kind = Stmt::Kind::kOutput;
      stmt->pos = Cur().pos;
      stmt->expr = ParseTuple();
      Expect(Tok::kVarEnd, "end of print statement ('}}')");
      body.push_back(std::move(stmt));
    } else if (token.type == Tok::kBlockBegin) {
      Next();
      if (Cur().type == Tok::kName &&
          std::find(end_names.begin(), end_names.end(), Cur().value) != end_names.end()) {
        return body;
      }
      ParseStatement(&body);
      Expect(Tok::kBlockEnd, "end of statement block ('%}')");
    } else {
      FailHere("unexpected " + DescribeToken(token));
    }
  }
  if (!end_names.empty()) FailUnclosed(end_names);
  return body;
}

Body Parser::ParseStatements(const std::vector<std::string>& end_names, bool drop_needle) {
  SkipOp(":");
  Expect(Tok::kBlockEnd, "end of statement block ('%}')");
  Body body = Subparse(end_names);
  if (drop_needle) Next();
  return body;
}

void Parser::ParseStatement(Body* out) {
  Nest nest(this, &block_depth_, kMaxBlockNesting, "blocks");
  if (Cur().type != Tok::kName) FailHere("tag name expected, got " + DescribeToken(Cur()));
  const Token tag = Cur();
  const std::string& name = tag.value;
  if (name == "for") return out->push_back(ParseFor(tag.pos));
  if (name == "if") return out->push_back(ParseIf(tag.pos));
  if (name == "set") return out->push_back(ParseSet(tag.pos));
  if (name == "macro") return out->push_back(ParseMacro(tag.pos));
  if (name == "filter") return out->push_back(ParseFilterBlock(tag.pos));
  if (name == "with") return out->push_back(ParseWith(tag.pos));
  if (name == "print") {
    Next();
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::kOutput;
    stmt->pos = tag.pos;
    stmt->expr = ParseTuple();
    return out->push_back(std::move(stmt));
  }
  if (name == "break" || name == "continue") {
    if (loop_depth_ == 0) FailHere("'" + name + "' outside loop");
    Next();
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
    stmt->pos = tag.pos;
    return out->push_back(std::move(stmt));
  }
  if (name == "generation") {  // transformers' AssistantTracker: renders its body as it is
    Next();
    open_.push_back({"generation", tag.pos});
    Body body = ParseStatements({"endgeneration"}, true);
    open_.pop_back();
    for (auto& stmt : body) out->push_back(std::move(stmt));
    return;
  }
  if (const char* unsupported = UnsupportedTag(name)) {
    FailAt(tag.pos, std::string("the '") + unsupported + "' tag is not supported (a chat template renders alone)",
           kReasonUnsupported);
  }
  std::string message = "unknown tag '" + name + "'";
  if (!open_.empty()) message += " (the innermost open block is '" + open_.back().name + "' at " + LineColumn(source_, open_.back().pos) + ")";
  FailAt(tag.pos, message, kReasonSyntax);
}

Target Parser::ParseAssignTarget(bool name_only, const char* extra_end, bool with_namespace) {
  Target target;
  target.pos = Cur().pos;
  if (with_namespace && Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().value == "." &&
      Peek(2).type == Tok::kName) {
    target.names.push_back(Next().value);
    Next();
    target.attr = Next().value;
    return target;
  }
  const bool parenthesized = !name_only && SkipOp("(");
  while (true) {
    if (Cur().type != Tok::kName) FailHere("can't assign to " + DescribeToken(Cur()) + " (expected a name)");
    const std::string& name = Cur().value;
    if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" || name == "None") {
      FailHere("can't assign to the constant '" + name + "'");
    }
    target.names.push_back(Next().value);
    if (name_only || !SkipOp(",")) break;
    target.tuple = true;
    if (IsTupleEnd(extra_end) || IsOp(")") || IsOp("=")) break;
  }
  if (parenthesized) {
    ExpectOp(")");
    target.tuple = target.tuple || target.names.size() > 1;
  }
  return target;
}

StmtPtr Parser::ParseFor(std::uint32_t pos) {
  Next();
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = Stmt::Kind::kFor;
  stmt->pos = pos;
  stmt->target = ParseAssignTarget(false, "in", false);
  if (!SkipName("in")) FailHere("expected 'in', got " + DescribeToken(Cur()));
  stmt->expr = ParseTuple(false, "recursive");
  if (SkipName("if")) stmt->filter = ParseExpression();
  if (IsName("recursive")) FailAt(Cur().pos, "recursive for loops are not supported", kReasonUnsupported);
  open_.push_back({"for", pos});
  ++loop_depth_;
  stmt->body = ParseStatements({"endfor", "else"}, false);
  --loop_depth_;
  if (Next().value == "else") stmt->else_body = ParseStatements({"endfor"}, true);
  open_.pop_back();
  return stmt;
}

StmtPtr Parser::ParseIf(std::uint32_t pos) {
  Next();
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = Stmt::Kind::kIf;
  stmt->pos = pos;
  stmt->expr = ParseTuple(false);
  open_.push_back({"if", pos});
  stmt->body = ParseStatements({"elif", "else", "endif"}, false);
  if (IsName("elif")) {  // an elif is an if in the else branch; it consumes the endif
    Nest nest(this, &block_depth_, kMaxBlockNesting, "elif branches");
    stmt->else_body.push_back(ParseIf(Cur().pos));
    stmt->else_body.back()->is_elif = true;
  } else if (Next().value == "else") {
    stmt->else_body = ParseStatements({"endif"}, true);
  }
  open_.pop_back();
  return stmt;
}

StmtPtr Parser::ParseSet(std::uint32_t pos) {
  Next();
  auto stmt = std::make_unique<Stmt>();
  stmt->pos = pos;
  stmt->target = ParseAssignTarget(false, nullptr, true);
  if (SkipOp("=")) {
    stmt->kind = Stmt::Kind::kSet;
    stmt->expr = ParseTuple();
    return stmt;
  }
  stmt->kind = Stmt::Kind::kSetBlock;
  if (IsOp("|")) stmt->expr = ParseFilter(nullptr, false);
  open_.push_back({"set", pos});
  stmt->body = ParseStatements({"endset"}, true);
  open_.pop_back();
  return stmt;
}

StmtPtr Parser::ParseMacro(std::uint32_t pos) {
  Next();
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = Stmt::Kind::kMacro;
  stmt->pos = pos;
  stmt->target = ParseAssignTarget(true, nullptr, false);
  ExpectOp("(");
  while (!IsOp(")")) {
    if (!stmt->params.empty()) ExpectOp(",");
    if (IsOp(")")) break;
    stmt->params.push_back(ParseAssignTarget(true, nullptr, false).names[0]);
    if (SkipOp("=")) {
      stmt->defaults.push_back(ParseExpression());
    } else if (!stmt->defaults.empty()) {
      FailHere("non-default argument follows default argument");
    }
  }
  ExpectOp(")");
  open_.push_back({"macro", pos});
  macros_.push_back(stmt.get());
  const int loops = loop_depth_;
  loop_depth_ = 0;  // a macro's body is not inside the loops around its definition
  stmt->body = ParseStatements({"endmacro"}, true);
  loop_depth_ = loops;
  macros_.pop_back();
  open_.pop_back();
  return stmt;
}

StmtPtr Parser::ParseFilterBlock(std::uint32_t pos) {
  Next();
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = Stmt::Kind::kFilterBlock;
  stmt->pos = pos;
  stmt->expr = ParseFilter(nullptr, true);
  open_.push_back({"filter", pos});
  stmt->body = ParseStatements({"endfilter"}, true);
  open_.pop_back();
  return stmt;
}

StmtPtr Parser::ParseWith(std::uint32_t pos) {
  Next();
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = Stmt::Kind::kWith;
  stmt->pos = pos;
  while (Cur().type != Tok::kBlockEnd) {
    if (!stmt->targets.empty()) ExpectOp(",");
    stmt->targets.push_back(ParseAssignTarget(false, nullptr, false));
    ExpectOp("=");
    stmt->values.push_back(ParseExpression());
  }
  open_.push_back({"with", pos});
  stmt->body = ParseStatements({"endwith"}, true);
  open_.pop_back();
  return stmt;
}

}  // namespace unmask::jinja
