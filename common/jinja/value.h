// The values a template computes with: Python's, as Jinja2 sees them. Undefined (Jinja's default
// Undefined: prints as "", is falsy, iterates as empty, and fails when computed with), None,
// bool, int (64-bit here; Python's are unbounded), float, str (UTF-8), list and tuple, dict (in
// insertion order), and the runtime objects namespace(), functions (globals, macros, bound
// methods) and a for loop's `loop`. Lists, tuples and dicts are immutable (the sandbox forbids
// changing them) and shared; a namespace is shared and mutable, as in Jinja.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/jinja/error.h"

namespace unmask::jinja {

class Value;
class Runtime;

// What kind of sequence a kList value is. Generators (what select, map, unique, items, reverse
// return) are always true, have no len() and no [i]; dict views (dict.keys() / values() /
// items()) have a len() but no [i]; ranges have both; each prints as Python prints it.
enum class SeqKind : std::uint8_t { kList, kTuple, kGenerator, kDictKeys, kDictValues, kDictItems, kRange };
struct ListData;
struct DictData;
struct NamespaceData;
struct FunctionData;
struct LoopData;

// Lists and dicts nested deeper than this are refused (they would make printing and comparing
// recurse without bound).
inline constexpr int kMaxValueDepth = 200;

// The arguments of a call: positional, then keyword.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

using NativeFn = std::function<Value(Runtime&, CallArgs&)>;

class Value {
 public:
  enum class Kind : std::uint8_t {
    kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kFunction, kLoop,
  };

  Value() = default;  // undefined
  Value(bool b) : rep_(b) {}                        // NOLINT: implicit by design
  Value(std::int64_t i) : rep_(i) {}                // NOLINT
  Value(int i) : rep_(static_cast<std::int64_t>(i)) {}  // NOLINT
  Value(double d) : rep_(d) {}                      // NOLINT
  Value(std::string s) : rep_(std::move(s)) {}      // NOLINT
  Value(const char* s) : rep_(std::string(s)) {}    // NOLINT

  // `hint` is the error raised when the value is used ("'x' is undefined").
  static Value Undefined(std::string hint);
  static Value None();
  // markupsafe's Markup: a str that HTML-escapes the plain strings `+` joins to it. The safe and
  // escape filters return one (autoescape is off: it only shows in +, * and repr()).
  static Value Markup(std::string s);
  static Value List(std::vector<Value> items, bool tuple = false);
  // The other sequences Jinja's filters and dict methods return (see SeqKind).
  static Value Sequence(std::vector<Value> items, SeqKind seq);
  static Value Range(std::int64_t start, std::int64_t stop, std::int64_t step, std::vector<Value> items);
  // A later duplicate key replaces the earlier one's value, in the earlier one's place (as a
  // Python dict literal does).
  static Value Dict(std::vector<std::pair<Value, Value>> items);
  static Value Namespace(std::shared_ptr<NamespaceData> ns);
  static Value Function(std::string name, NativeFn fn);
  static Value Loop(std::shared_ptr<LoopData> loop);
  // null -> None, objects -> dicts in their order, arrays -> lists, integers -> int (unsigned
  // ones past int64 -> float), other numbers -> float.
  static Value FromJson(const nlohmann::ordered_json& json, int depth = 0);

  Kind kind() const { return rep_.index() == kMarkupIndex ? Kind::kString : static_cast<Kind>(rep_.index()); }
  bool is_markup() const { return rep_.index() == kMarkupIndex; }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }  // not bool
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // Python's numbers.Number
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const;   // a list or a tuple (kind() kList also holds generators, dict views, ranges)
  bool is_tuple() const;
  SeqKind seq() const;    // kind() must be kList
  bool is_indexable() const;  // list, tuple or range: has len() and [i]
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_function() const { return kind() == Kind::kFunction; }
  bool is_loop() const { return kind() == Kind::kLoop; }

  bool boolean() const { return std::get<bool>(rep_); }
  std::int64_t integer() const;  // int or bool
  double number() const;         // bool, int or float
  const std::string& string() const {
    return is_markup() ? std::get<MarkupRep>(rep_).s : std::get<std::string>(rep_);
  }
  const ListData& list() const { return *std::get<std::shared_ptr<const ListData>>(rep_); }
  const std::shared_ptr<const ListData>& list_ptr() const { return std::get<std::shared_ptr<const ListData>>(rep_); }
  const DictData& dict() const { return *std::get<std::shared_ptr<const DictData>>(rep_); }
  NamespaceData& ns() const { return *std::get<std::shared_ptr<NamespaceData>>(rep_); }
  const std::shared_ptr<NamespaceData>& ns_ptr() const { return std::get<std::shared_ptr<NamespaceData>>(rep_); }
  const FunctionData& function() const { return *std::get<std::shared_ptr<const FunctionData>>(rep_); }
  LoopData& loop() const { return *std::get<std::shared_ptr<LoopData>>(rep_); }
  const std::string& undefined_hint() const;

  // Lists and dicts: 1 + the deepest element; everything else 0.
  int depth() const;
  // Python's bool(value).
  bool Truthy() const;
  // Python's type name: 'NoneType', 'int', 'str', 'list', 'tuple', 'dict', ...
  const char* TypeName() const;

 private:
  struct UndefinedRep {
    std::shared_ptr<const std::string> hint;
  };
  struct NoneRep {};
  struct MarkupRep {
    std::string s;
  };
  static constexpr std::size_t kMarkupIndex = 11;
  std::variant<UndefinedRep, NoneRep, bool, std::int64_t, double, std::string, std::shared_ptr<const ListData>,
               std::shared_ptr<const DictData>, std::shared_ptr<NamespaceData>, std::shared_ptr<const FunctionData>,
               std::shared_ptr<LoopData>, MarkupRep>
      rep_;
};

struct ListData {
  std::vector<Value> items;
  SeqKind seq = SeqKind::kList;
  // A generator whose computation failed after `items`: the error is raised when it is iterated
  // (Python's generators are lazy: a template that never iterates one never sees the error).
  std::shared_ptr<const TemplateError> deferred_error;
  std::int64_t range[3] = {0, 0, 1};  // start, stop, step of a range
  int depth = 1;
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;
  std::unordered_map<std::string, std::size_t> index;  // HashKey(key) -> position in items
  int depth = 1;
  const Value* Find(const Value& key) const;  // null when absent or unhashable
  const Value* Find(const std::string& key) const;
};

// What keys equal as Python dict keys share (1, 1.0 and True alike; tuples by their items);
// nullopt for an unhashable key (a list or a dict).
std::optional<std::string> HashKey(const Value& key);

struct NamespaceData {
  std::vector<std::pair<std::string, Value>> attrs;
  const Value* Find(const std::string& name) const;
  void Set(const std::string& name, Value value);
};

struct FunctionData {
  std::string name;
  NativeFn fn;
};

// A for loop's `loop` variable at one iteration.
struct LoopData {
  std::shared_ptr<const ListData> items;
  std::size_t index0 = 0;
  std::optional<Value> last_changed;  // loop.changed()'s memory
};

// Python's ==, and <, <=, >, >= (false/true; TypeError for types Python cannot order).
bool Equals(const Value& a, const Value& b, int depth = 0);
bool Less(const Value& a, const Value& b, int depth = 0);

// Elements Equals, Less and Iterate have visited, and List and Dict have built, since the last
// call (on this thread): the interpreter charges them to the template's step budget.
std::uint64_t TakeComparisonWork();

// The items a for loop (or list()) sees: a list's items, a dict's keys, a string's characters;
// empty for Undefined. TypeError for anything else.
std::vector<Value> Iterate(const Value& v);

}  // namespace unmask::jinja
