// The syntax tree of a template: expressions and statements, as jinja2/nodes.py has them (the
// subset this interpreter runs). Every node keeps the byte offset of the construct it came from,
// for error messages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/jinja/value.h"

namespace unmask::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind : std::uint8_t {
    kConst,      // constant
    kName,       // name
    kList,       // args: items
    kTuple,      // args: items
    kDict,       // args: key, value, key, value, ...
    kGetattr,    // args[0].name
    kGetitem,    // args[0][args[1]]
    kSlice,      // args: start, stop, step (each may be null); only as kGetitem's key
    kCall,       // args[0](args[1:], kwargs)
    kFilter,     // args[0] | name(args[1:], kwargs); args[0] null in {% filter %} and {% set x | f %}
    kTest,       // args[0] is name(args[1:], kwargs)
    kNot,        // not args[0]
    kNeg,        // -args[0]
    kPos,        // +args[0]
    kBinary,     // args[0] <name> args[1]: + - * / // % **
    kConcat,     // args joined by ~
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
    kAnd,
    kOr,
    kCondExpr,   // args[1] if args[0] else args[2] (args[2] may be null)
  };

  Kind kind = Kind::kConst;
  std::uint32_t pos = 0;
  int height = 1;  // of the subtree; bounded so that evaluating and freeing it cannot recurse too deep
  // No names, calls or filters below: Jinja folds it at compile time (which matters only where
  // folding differs from running: a constant that cannot be sliced slices to Undefined).
  bool is_constant = false;
  Value constant;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// An assignment target: a name, an attribute of a namespace (ns.attr), or a tuple of names.
struct Target {
  std::uint32_t pos = 0;
  std::vector<std::string> names;  // one name, or the tuple's names
  bool tuple = false;
  std::string attr;  // set for ns.attr (names[0] is the namespace)
};

struct Stmt {
  enum class Kind : std::uint8_t {
    kText,       // text
    kOutput,     // {{ expr }}
    kIf,         // if expr: body, else: else_body (an elif is an kIf alone in else_body)
    kFor,        // for target in expr [if filter]: body, else: else_body
    kSet,        // set target = expr
    kSetBlock,   // set target [| filter] %}body{% endset
    kMacro,      // macro name(params) body
    kFilterBlock,  // filter name(...) body
    kWith,       // with targets = values: body
    kBreak,
    kContinue,
  };

  Kind kind = Kind::kText;
  std::uint32_t pos = 0;
  std::string text;
  ExprPtr expr;    // output, if/for condition or iterable, set value, filter (kFilterBlock, kSetBlock)
  ExprPtr filter;  // for's `if` filter
  Target target;
  std::vector<Target> targets;        // kWith
  std::vector<ExprPtr> values;        // kWith
  std::vector<std::string> params;    // kMacro
  std::vector<ExprPtr> defaults;      // kMacro: for the last params
  bool uses_varargs = false, uses_kwargs = false;  // kMacro: whether the body reads them
  bool is_elif = false;  // kIf: an elif (the only statement of its parent's else_body)
  Body body;
  Body else_body;
  // Jinja's scoping (scopes.cc): the names the frame of `body` (a loop iteration, a macro call,
  // a with, set or filter block) / of a for's `else_body` starts with undefined.
  std::vector<std::string> body_undefined;
  std::vector<std::string> else_undefined;
};

}  // namespace unmask::jinja
