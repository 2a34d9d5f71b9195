#include "common/jinja/scopes.h"

#include <functional>
#include <map>
#include <set>

namespace unmask::jinja {

namespace {

// How a frame's variable starts (idtracking's VAR_LOAD_*): from the context (resolve), as the
// enclosing frame's variable (alias), or undefined; parameters are bound on entry.
enum class Load { kResolve, kAlias, kUndefined, kParameter };

struct Frame {
  const Frame* parent = nullptr;
  std::map<std::string, Load> refs;
  std::set<std::string> stores;

  bool Has(const std::string& name) const {
    for (const Frame* f = this; f != nullptr; f = f->parent) {
      if (f->refs.count(name) != 0) return true;
    }
    return false;
  }
  void LoadName(const std::string& name) {
    if (!Has(name)) refs[name] = Load::kResolve;
  }
  void StoreName(const std::string& name) {
    stores.insert(name);
    if (refs.count(name) != 0) return;
    refs[name] = parent != nullptr && parent->Has(name) ? Load::kAlias : Load::kUndefined;
  }
  void Parameter(const std::string& name) {
    stores.insert(name);
    refs[name] = Load::kParameter;
  }
  // Merges the frames of an if's branches (body, elifs, else): a name not assigned in all of them
  // (and not before) reads through.
  void BranchUpdate(const std::vector<Frame>& branches) {
    std::map<std::string, std::size_t> counts;
    for (const Frame& b : branches) {
      for (const std::string& name : b.stores) {
        if (stores.count(name) == 0) ++counts[name];
      }
    }
    for (const Frame& b : branches) {
      for (const auto& [name, load] : b.refs) refs.insert({name, load});
      stores.insert(b.stores.begin(), b.stores.end());
    }
    for (const auto& [name, count] : counts) {
      if (count == branches.size()) continue;
      refs[name] = parent != nullptr && parent->Has(name) ? Load::kAlias : Load::kResolve;
    }
  }
  std::vector<std::string> Undefined() const {
    std::vector<std::string> out;
    for (const auto& [name, load] : refs) {
      if (load == Load::kUndefined) out.push_back(name);
    }
    return out;
  }
};

// A frame nested in the one being visited, analyzed once its parent is complete.
struct Child {
  Stmt* stmt;
  bool else_branch;
};

class Visitor {
 public:
  Visitor(Frame* frame, std::vector<Child>* children) : f_(frame), children_(children) {}

  void Expr(const jinja::Expr* e) {
    if (e == nullptr) return;
    if (e->kind == Expr::Kind::kName) f_->LoadName(e->name);
    for (const auto& arg : e->args) Expr(arg.get());
    for (const auto& kw : e->kwargs) Expr(kw.second.get());
  }

  void Target(const jinja::Target& t) {
    if (!t.attr.empty()) return f_->LoadName(t.names[0]);  // ns.attr reads ns
    for (const std::string& name : t.names) f_->StoreName(name);
  }

  void Body(const jinja::Body& body) {
    for (const auto& s : body) Statement(*s);
  }

  void Statement(Stmt& s) {
    switch (s.kind) {
      case Stmt::Kind::kOutput: return Expr(s.expr.get());
      case Stmt::Kind::kIf: return If(s);
      case Stmt::Kind::kFor:
        Expr(s.expr.get());
        children_->push_back({&s, false});
        if (!s.else_body.empty()) children_->push_back({&s, true});
        return;
      case Stmt::Kind::kSet: Expr(s.expr.get()); return Target(s.target);
      case Stmt::Kind::kSetBlock: Target(s.target); return children_->push_back({&s, false});
      case Stmt::Kind::kMacro: f_->StoreName(s.target.names[0]); return children_->push_back({&s, false});
      case Stmt::Kind::kFilterBlock: Expr(s.expr.get()); return children_->push_back({&s, false});
      case Stmt::Kind::kWith:
        for (const auto& v : s.values) Expr(v.get());
        return children_->push_back({&s, false});
      default: return;
    }
  }

 private:
  Frame Branch(const std::function<void(Visitor&)>& visit) {
    Frame copy = *f_;
    Visitor v(&copy, children_);
    visit(v);
    return copy;
  }

  // Jinja's If has body, elif_ (each an If) and else_: three branches.
  void If(Stmt& s) {
    Expr(s.expr.get());
    std::vector<Stmt*> elifs;
    jinja::Body* final_else = &s.else_body;
    while (final_else->size() == 1 && (*final_else)[0]->is_elif) {
      elifs.push_back((*final_else)[0].get());
      final_else = &elifs.back()->else_body;
    }
    std::vector<Frame> branches;
    branches.push_back(Branch([&](Visitor& v) { v.Body(s.body); }));
    branches.push_back(Branch([&](Visitor& v) {
      for (Stmt* elif : elifs) {  // each an If with neither elif nor else of its own
        v.Expr(elif->expr.get());
        std::vector<Frame> inner;
        inner.push_back(v.Branch([&](Visitor& w) { w.Body(elif->body); }));
        inner.push_back(*v.f_);
        inner.push_back(*v.f_);
        v.f_->BranchUpdate(inner);
      }
    }));
    branches.push_back(Branch([&](Visitor& v) { v.Body(*final_else); }));
    f_->BranchUpdate(branches);
  }

  Frame* f_;
  std::vector<Child>* children_;
};

// Analyzes a frame, then the frames nested in it.
std::vector<std::string> Analyze(const Frame* parent, const std::vector<std::string>& parameters,
                                 const std::function<void(Visitor&)>& visit) {
  Frame frame;
  frame.parent = parent;
  for (const std::string& p : parameters) frame.Parameter(p);
  std::vector<Child> children;
  Visitor visitor(&frame, &children);
  visit(visitor);
  for (const Child& c : children) {
    Stmt& s = *c.stmt;
    std::vector<std::string> params;
    if (s.kind == Stmt::Kind::kFor && !c.else_branch) {
      params = s.target.names;
      params.push_back("loop");
    } else if (s.kind == Stmt::Kind::kMacro) {
      params = s.params;
      params.insert(params.end(), {"varargs", "kwargs"});
    }
    std::vector<std::string>& out = c.else_branch ? s.else_undefined : s.body_undefined;
    out = Analyze(&frame, params, [&](Visitor& v) {
      if (s.kind == Stmt::Kind::kMacro) {
        for (const auto& d : s.defaults) v.Expr(d.get());
      }
      if (s.kind == Stmt::Kind::kWith) {
        for (const auto& t : s.targets) v.Target(t);
      }
      v.Body(c.else_branch ? s.else_body : s.body);
    });
  }
  return frame.Undefined();
}

}  // namespace

std::vector<std::string> AnalyzeScopes(Body& root) {
  return Analyze(nullptr, {}, [&](Visitor& v) { v.Body(root); });
}

}  // namespace unmask::jinja
