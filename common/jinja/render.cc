// The statement half of the interpreter: scopes as Jinja2 has them (a for loop's iteration and a
// macro call get their own; if does not), output, assignment, loops, macros.
#include <algorithm>
#include <ctime>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_format.h"
#include "common/jinja/runtime.h"

namespace unmask::jinja {

const Value* Scope::Find(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
    for (const auto& [k, v] : s->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::Set(const std::string& name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(name, std::move(value));
}

void Scope::StartUndefined(const std::vector<std::string>& names) {
  for (const std::string& name : names) Set(name, Value::Undefined("'" + name + "' is undefined"));
}

Runtime::Runtime(const std::string& source, const RenderOptions& options) : source_(source), options_(options) {}

Runtime::~Runtime() {
  // Namespaces and macro closures can refer to themselves (ns.self = ns; a macro in the scope
  // it captured): empty them so that the shared pointers free everything.
  for (auto& ns : namespaces_) ns->attrs.clear();
  for (auto& scope : closures_) scope->vars.clear();
}

std::string Runtime::Render(const Body& body, const std::vector<std::string>& undefined,
                            const nlohmann::ordered_json& context) {
  if (!context.is_object() && !context.is_null()) Fail("the template's context must be a JSON object");
  auto globals = std::make_shared<Scope>(nullptr);
  if (context.is_object()) {
    for (const auto& [key, value] : context.items()) globals->Set(key, Value::FromJson(value));
  }
  scope_ = std::make_shared<Scope>(globals);
  scope_->StartUndefined(undefined);
  std::string out;
  out_ = &out;
  Exec(body);
  return out;
}

void Runtime::Charge(std::uint64_t steps) {
  steps_ += steps;
  if (steps_ > options_.max_steps) {
    Fail("the template ran more than " + std::to_string(options_.max_steps) + " steps", kReasonLimit,
         StatusCode::kResourceExhausted);
  }
}

std::time_t Runtime::Now() const { return options_.clock ? options_.clock() : std::time(nullptr); }

Value Runtime::NewNamespace() {
  namespaces_.push_back(std::make_shared<NamespaceData>());
  return Value::Namespace(namespaces_.back());
}

void Runtime::Emit(const std::string& text) {
  if (out_->size() + text.size() > options_.max_output_bytes) {
    Fail("the output is longer than " + std::to_string(options_.max_output_bytes) + " bytes", kReasonLimit,
         StatusCode::kResourceExhausted);
  }
  out_->append(text);
}

std::string Runtime::Capture(const Body& body) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    Exec(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Runtime::Flow Runtime::ExecInFrame(const Body& body, const std::vector<std::string>& undefined) {
  if (body.empty()) return Flow::kNormal;
  const std::shared_ptr<Scope> outer = scope_;
  scope_ = std::make_shared<Scope>(outer);
  scope_->StartUndefined(undefined);
  Flow flow;
  try {
    flow = Exec(body);
  } catch (...) {
    scope_ = outer;
    throw;
  }
  scope_ = outer;
  return flow;
}

std::string Runtime::CaptureInFrame(const Body& body, const std::vector<std::string>& undefined) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    ExecInFrame(body, undefined);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Value Runtime::Lookup(const std::string& name) const {
  if (const Value* v = scope_->Find(name)) return *v;
  Value global = GlobalFunction(name);
  if (!global.is_undefined()) return global;
  return Value::Undefined("'" + name + "' is undefined");
}

Runtime::Flow Runtime::Exec(const Body& body) {
  for (const auto& stmt : body) {
    const Flow flow = ExecStmt(*stmt);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Runtime::Depth::Depth(Runtime* rt) : rt_(rt) {
  if (++rt_->depth_ > kMaxDepth) {
    --rt_->depth_;
    Fail("the template nests evaluation more than " + std::to_string(kMaxDepth) + " deep", kReasonLimit,
         StatusCode::kResourceExhausted);
  }
}

Runtime::Flow Runtime::ExecStmt(const Stmt& s) {
  Charge(1);
  Depth depth(this);
  pos_ = s.pos;
  switch (s.kind) {
    case Stmt::Kind::kText: Emit(s.text); break;
    case Stmt::Kind::kOutput: {
      const Value v = Eval(*s.expr);
      Emit(PyStr(v, options_.max_output_bytes));
      break;
    }
    case Stmt::Kind::kIf: return Exec(Eval(*s.expr).Truthy() ? s.body : s.else_body);
    case Stmt::Kind::kFor: return ExecFor(s);
    case Stmt::Kind::kSet: {
      Value v = Eval(*s.expr);
      Assign(s.target, std::move(v), scope_.get());
      break;
    }
    case Stmt::Kind::kSetBlock: {
      Value v(CaptureInFrame(s.body, s.body_undefined));
      if (s.expr) v = EvalFilter(*s.expr, &v);
      Assign(s.target, std::move(v), scope_.get());
      break;
    }
    case Stmt::Kind::kMacro: DefineMacro(s); break;
    case Stmt::Kind::kFilterBlock: {
      const Value text(CaptureInFrame(s.body, s.body_undefined));
      Emit(PyStr(EvalFilter(*s.expr, &text), options_.max_output_bytes));
      break;
    }
    case Stmt::Kind::kWith: return ExecWith(s);
    case Stmt::Kind::kBreak: return Flow::kBreak;
    case Stmt::Kind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

namespace {

std::vector<Value> Unpack(const Value& value, std::size_t count) {
  if (value.kind() != Value::Kind::kList && !value.is_string() && !value.is_dict()) {
    Fail(std::string("TypeError: cannot unpack non-iterable ") + value.TypeName() + " object");
  }
  std::vector<Value> items = Iterate(value);
  if (items.size() > count) Fail("ValueError: too many values to unpack (expected " + std::to_string(count) + ")");
  if (items.size() < count) {
    Fail("ValueError: not enough values to unpack (expected " + std::to_string(count) + ", got " +
         std::to_string(items.size()) + ")");
  }
  return items;
}

}  // namespace

void Runtime::Assign(const Target& target, Value value, Scope* scope) {
  if (!target.attr.empty()) {
    const Value ns = Lookup(target.names[0]);
    if (!ns.is_namespace()) FailAt(target.pos, "cannot assign attribute on non-namespace object");
    ns.ns().Set(target.attr, std::move(value));
    return;
  }
  if (!target.tuple) return scope->Set(target.names[0], std::move(value));
  std::vector<Value> items = Unpack(value, target.names.size());
  for (std::size_t i = 0; i < items.size(); ++i) scope->Set(target.names[i], std::move(items[i]));
}

std::vector<Value> Runtime::FilterLoopItems(const Stmt& s, std::vector<Value> items) {
  std::vector<Value> kept;
  const std::shared_ptr<Scope> outer = scope_;
  for (Value& item : items) {
    Charge(1);
    scope_ = std::make_shared<Scope>(outer);
    try {
      Assign(s.target, item, scope_.get());
      if (Eval(*s.filter).Truthy()) kept.push_back(std::move(item));
    } catch (...) {
      scope_ = outer;
      throw;
    }
    scope_ = outer;
  }
  return kept;
}

Runtime::Flow Runtime::ExecFor(const Stmt& s) {
  const Value iterable = Eval(*s.expr);
  pos_ = s.expr->pos;
  auto loop = std::make_shared<LoopData>();
  if (iterable.kind() == Value::Kind::kList && !s.filter) {
    loop->items = iterable.list_ptr();  // shared, not copied
  } else {
    std::vector<Value> items = Iterate(iterable);
    if (s.filter) items = FilterLoopItems(s, std::move(items));
    auto list = std::make_shared<ListData>();
    list->items = std::move(items);
    loop->items = std::move(list);
  }
  const ListData& list = *loop->items;
  if (list.deferred_error) throw *list.deferred_error;
  if (list.items.empty()) return ExecInFrame(s.else_body, s.else_undefined);
  const Value loop_value = Value::Loop(loop);
  const std::shared_ptr<Scope> outer = scope_;
  std::shared_ptr<Scope> iteration;
  // Jinja runs the else branch unless an iteration reached the end of the body: when the loop is
  // empty, and also when every iteration ended in break or continue.
  bool completed = false;
  for (std::size_t i = 0; i < list.items.size(); ++i) {
    Charge(1);
    loop->index0 = i;
    if (iteration && iteration.use_count() == 1) {
      iteration->vars.clear();  // nothing kept the last iteration's scope (no macro captured it): reuse it
    } else {
      iteration = std::make_shared<Scope>(outer);
    }
    scope_ = iteration;
    iteration->StartUndefined(s.body_undefined);
    Flow flow;
    try {
      pos_ = s.target.pos;
      Assign(s.target, list.items[i], scope_.get());
      scope_->Set("loop", loop_value);
      flow = Exec(s.body);
    } catch (...) {
      scope_ = outer;
      throw;
    }
    scope_ = outer;
    if (flow == Flow::kBreak) break;
    completed = completed || flow == Flow::kNormal;
  }
  return completed ? Flow::kNormal : ExecInFrame(s.else_body, s.else_undefined);
}

Runtime::Flow Runtime::ExecWith(const Stmt& s) {
  auto inner = std::make_shared<Scope>(scope_);
  inner->StartUndefined(s.body_undefined);
  for (std::size_t i = 0; i < s.targets.size(); ++i) Assign(s.targets[i], Eval(*s.values[i]), inner.get());
  const std::shared_ptr<Scope> outer = scope_;
  scope_ = inner;
  Flow flow;
  try {
    flow = Exec(s.body);
  } catch (...) {
    scope_ = outer;
    throw;
  }
  scope_ = outer;
  return flow;
}

void Runtime::DefineMacro(const Stmt& s) {
  const Stmt* macro = &s;
  std::shared_ptr<Scope> closure = scope_;
  closures_.push_back(closure);
  Value fn = Value::Function(s.target.names[0], [macro, closure](Runtime& rt, CallArgs& args) {
    return rt.CallMacro(*macro, closure, args);
  });
  scope_->Set(s.target.names[0], std::move(fn));
}

void Runtime::BindMacroArgs(const Stmt& macro, CallArgs& args, Scope* scope) {
  const std::string& name = macro.target.names[0];
  const std::size_t n = macro.params.size();
  if (args.args.size() > n && !macro.uses_varargs) {
    Fail("TypeError: macro '" + name + "' takes not more than " + std::to_string(n) + " argument(s)");
  }
  std::vector<bool> bound(n, false);
  for (std::size_t i = 0; i < n && i < args.args.size(); ++i) scope->Set(macro.params[i], args.args[i]), bound[i] = true;
  std::vector<std::pair<Value, Value>> extra_kwargs;
  for (auto& [key, value] : args.kwargs) {
    const auto it = std::find(macro.params.begin(), macro.params.end(), key);
    if (it == macro.params.end()) {
      if (!macro.uses_kwargs) Fail("TypeError: macro '" + name + "' takes no keyword argument '" + key + "'");
      extra_kwargs.emplace_back(Value(key), value);
      continue;
    }
    const auto i = static_cast<std::size_t>(it - macro.params.begin());
    if (bound[i]) Fail("TypeError: macro '" + name + "' got multiple values for argument '" + key + "'");
    scope->Set(key, value);
    bound[i] = true;
  }
  const std::size_t first_default = n - macro.defaults.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (bound[i]) continue;
    if (i >= first_default) scope->Set(macro.params[i], Eval(*macro.defaults[i - first_default]));
    else scope->Set(macro.params[i], Value::Undefined("'" + macro.params[i] + "' is undefined"));
  }
  std::vector<Value> varargs;
  for (std::size_t i = n; i < args.args.size(); ++i) varargs.push_back(args.args[i]);
  scope->Set("varargs", Value::List(std::move(varargs), true));
  scope->Set("kwargs", Value::Dict(std::move(extra_kwargs)));
}

Value Runtime::CallMacro(const Stmt& macro, const std::shared_ptr<Scope>& closure, CallArgs& args) {
  if (macro_depth_ >= options_.max_macro_depth) {
    Fail("macros call each other more than " + std::to_string(options_.max_macro_depth) + " deep", kReasonLimit,
         StatusCode::kResourceExhausted);
  }
  const std::shared_ptr<Scope> caller_scope = scope_;
  const std::uint32_t caller_pos = pos_;
  scope_ = std::make_shared<Scope>(closure);
  scope_->StartUndefined(macro.body_undefined);
  ++macro_depth_;
  std::string text;
  try {
    BindMacroArgs(macro, args, scope_.get());
    text = Capture(macro.body);
  } catch (TemplateError& e) {
    scope_ = caller_scope;
    --macro_depth_;
    if (e.pos == kNoPos) e.pos = pos_;
    if (e.message.find(" (in macro '") == std::string::npos) {  // the innermost call is enough
      e.message += " (in macro '" + macro.target.names[0] + "' called at " + LineColumn(source_, caller_pos) + ")";
    }
    throw;
  } catch (...) {
    scope_ = caller_scope;
    --macro_depth_;
    throw;
  }
  scope_ = caller_scope;
  --macro_depth_;
  pos_ = caller_pos;
  return Value(std::move(text));  // a Markup only under autoescape, which transformers leaves off
}

}  // namespace unmask::jinja
