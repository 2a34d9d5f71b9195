// Jinja2's parser (jinja2/parser.py, 3.1) for the statements and expressions this interpreter
// runs. Refuses, naming them, the tags a chat template has no use for (extends, block, include,
// import, call blocks, recursive loops). Internal to common/jinja; chat_template.h is the API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/jinja/ast.h"
#include "common/jinja/lexer.h"

namespace unmask::jinja {

// Limits on nesting, so that parsing, evaluating and freeing the tree cannot run out of stack.
inline constexpr int kMaxExprHeight = 200;    // levels of one expression's tree
inline constexpr int kMaxExprNesting = 64;    // parentheses, brackets and unary operators inside each other
inline constexpr int kMaxBlockNesting = 64;   // {% if %} / {% for %} / ... inside each other

// Parses a normalized source (lexer.h's NormalizeSource). Throws TemplateError.
Body ParseTemplate(const std::string& source);

class Parser {
 public:
  Parser(const std::string& source, std::vector<Token> tokens) : source_(source), tokens_(std::move(tokens)) {}
  Body ParseAll();

 private:
  // One block being parsed, for error messages.
  struct OpenBlock {
    std::string name;
    std::uint32_t pos;
  };

  // Token stream (parser.cc).
  const Token& Cur() const { return tokens_[index_]; }
  const Token& Peek(std::size_t n = 1) const;
  Token Next();
  bool IsName(const char* value) const { return Cur().type == Tok::kName && Cur().value == value; }
  bool IsOp(const char* op) const { return Cur().type == Tok::kOp && Cur().value == op; }
  bool SkipName(const char* value);
  bool SkipOp(const char* op);
  Token Expect(Tok type, const char* what);
  void ExpectOp(const char* op);
  [[noreturn]] void FailHere(const std::string& message) const;

  // Statements (parser.cc).
  Body Subparse(const std::vector<std::string>& end_names);
  Body ParseStatements(const std::vector<std::string>& end_names, bool drop_needle);
  [[noreturn]] void FailUnclosed(const std::vector<std::string>& end_names) const;
  void ParseStatement(Body* out);
  StmtPtr ParseFor(std::uint32_t pos);
  StmtPtr ParseIf(std::uint32_t pos);
  StmtPtr ParseSet(std::uint32_t pos);
  StmtPtr ParseMacro(std::uint32_t pos);
  StmtPtr ParseFilterBlock(std::uint32_t pos);
  StmtPtr ParseWith(std::uint32_t pos);
  Target ParseAssignTarget(bool name_only, const char* extra_end, bool with_namespace);

  // Expressions (parse_expr.cc).
  ExprPtr ParseExpression(bool with_condexpr = true);
  ExprPtr ParseTuple(bool with_condexpr = true, const char* extra_end = nullptr, bool explicit_parentheses = false);
  ExprPtr ParseFilter(ExprPtr node, bool start_inline);
  ExprPtr ParseCondExpr();
  ExprPtr ParseOr();
  ExprPtr ParseAnd();
  ExprPtr ParseNot();
  ExprPtr ParseCompare();
  ExprPtr ParseMath1();
  ExprPtr ParseConcat();
  ExprPtr ParseMath2();
  ExprPtr ParsePow();
  ExprPtr ParseUnary(bool with_filter);
  ExprPtr ParsePrimary();
  ExprPtr ParseList();
  ExprPtr ParseDict();
  ExprPtr ParsePostfix(ExprPtr node);
  ExprPtr ParseFilterExpr(ExprPtr node);
  ExprPtr ParseSubscript(ExprPtr node);
  ExprPtr ParseSubscribed();
  ExprPtr ParseCall(ExprPtr node);
  void ParseCallArgs(Expr* call);
  ExprPtr ParseTest(ExprPtr node);
  bool IsTupleEnd(const char* extra_end) const;
  ExprPtr MakeExpr(Expr::Kind kind, std::uint32_t pos, std::vector<ExprPtr> args = {});
  void Seal(Expr* e) const;  // computes e->height; refuses a tree too high

  // Nesting guard for the recursive descent.
  class Nest {
   public:
    Nest(Parser* p, int* depth, int limit, const char* what);
    ~Nest() { --*depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    int* depth_;
  };

  const std::string& source_;
  std::vector<Token> tokens_;
  std::size_t index_ = 0;
  std::vector<OpenBlock> open_;  // blocks being parsed, innermost last
  int expr_depth_ = 0;
  int block_depth_ = 0;
  int loop_depth_ = 0;           // for loops around the statement being parsed (within the macro)
  std::vector<Stmt*> macros_;    // macros being parsed (to see whether they read varargs / kwargs)
};

}  // namespace unmask::jinja
