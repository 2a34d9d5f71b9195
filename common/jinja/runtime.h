// The interpreter: runs a parsed template (render.cc: statements, scopes, macros; eval.cc:
// expressions). Filters, tests and methods receive it to reach the limits, the clock, and
// Jinja's attribute and item lookup. Internal to common/jinja.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/jinja/ast.h"
#include "common/jinja/chat_template.h"
#include "common/jinja/value.h"

namespace unmask::jinja {

// Variables of one scope: the context, the template's top level, a loop iteration, a macro call.
struct Scope {
  explicit Scope(std::shared_ptr<Scope> parent_scope) : parent(std::move(parent_scope)) {}
  const Value* Find(const std::string& name) const;
  void Set(const std::string& name, Value value);
  // Jinja's frame entry: these names start undefined here, hiding outer values.
  void StartUndefined(const std::vector<std::string>& names);

  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;
};

class Runtime {
 public:
  Runtime(const std::string& source, const RenderOptions& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // `undefined`: the names the template's frame starts undefined (scopes.h).
  std::string Render(const Body& body, const std::vector<std::string>& undefined, const nlohmann::ordered_json& context);

  // For filters, tests, methods and globals.
  void Charge(std::uint64_t steps);
  std::size_t max_bytes() const { return options_.max_output_bytes; }
  std::time_t Now() const;
  std::uint32_t pos() const { return pos_; }
  const std::uint32_t* pos_ptr() const { return &pos_; }
  Value NewNamespace();
  Value Call(const Value& callee, CallArgs args);
  Value ApplyFilter(const std::string& name, const Value& input, CallArgs args);
  bool ApplyTest(const std::string& name, const Value& input, CallArgs args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  // Statements and expressions being run inside each other (macro calls included): bounds the
  // interpreter's stack (about 0.5 MB in an optimized build; sanitizers need several times more).
  static constexpr int kMaxDepth = 500;
  class Depth {
   public:
    explicit Depth(Runtime* rt);
    ~Depth() { --rt_->depth_; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;

   private:
    Runtime* rt_;
  };

  // render.cc
  Flow Exec(const Body& body);
  Flow ExecStmt(const Stmt& s);
  Flow ExecFor(const Stmt& s);
  Flow ExecWith(const Stmt& s);
  std::vector<Value> FilterLoopItems(const Stmt& s, std::vector<Value> items);
  void Assign(const Target& target, Value value, Scope* scope);
  std::string Capture(const Body& body);
  // Runs `body` in a frame of its own (a set or filter block's, a for's else) and returns its text.
  std::string CaptureInFrame(const Body& body, const std::vector<std::string>& undefined);
  Flow ExecInFrame(const Body& body, const std::vector<std::string>& undefined);
  void Emit(const std::string& text);
  void DefineMacro(const Stmt& s);
  Value CallMacro(const Stmt& macro, const std::shared_ptr<Scope>& closure, CallArgs& args);
  void BindMacroArgs(const Stmt& macro, CallArgs& args, Scope* scope);
  Value Lookup(const std::string& name) const;

  // eval.cc
  Value Eval(const Expr& e);
  Value EvalNode(const Expr& e);
  Value EvalGetitem(const Expr& e);
  Value EvalCall(const Expr& e);
  Value EvalFilter(const Expr& e, const Value* block_input);
  Value EvalTest(const Expr& e);
  Value EvalCompare(const Expr& e);
  Value EvalConcat(const Expr& e);
  CallArgs EvalArgs(const Expr& e, std::size_t first);

  const std::string& source_;
  RenderOptions options_;
  std::string* out_ = nullptr;
  std::shared_ptr<Scope> scope_;
  std::uint64_t steps_ = 0;
  std::uint32_t pos_ = 0xffffffffu;  // kNoPos until a statement runs
  int macro_depth_ = 0;
  int depth_ = 0;
  std::vector<std::shared_ptr<NamespaceData>> namespaces_;  // cleared at the end: breaks reference cycles
  std::vector<std::shared_ptr<Scope>> closures_;            // scopes macros captured, likewise
};

}  // namespace unmask::jinja
