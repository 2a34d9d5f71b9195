#include "common/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/jinja/error.h"
#include "common/jinja/py_string.h"

namespace unmask::jinja {

namespace {

thread_local std::uint64_t comparison_work = 0;

void CheckDepth(int depth) {
  if (depth > kMaxValueDepth) {
    Fail("values are nested more than " + std::to_string(kMaxValueDepth) + " deep", kReasonLimit,
         StatusCode::kResourceExhausted);
  }
}

}  // namespace

Value Value::Undefined(std::string hint) {
  Value v;
  v.rep_ = UndefinedRep{std::make_shared<const std::string>(std::move(hint))};
  return v;
}

Value Value::None() {
  Value v;
  v.rep_ = NoneRep{};
  return v;
}

Value Value::Markup(std::string s) {
  Value v;
  v.rep_ = MarkupRep{std::move(s)};
  return v;
}

Value Value::List(std::vector<Value> items, bool tuple) {
  comparison_work += items.size();  // building costs, as much as visiting
  auto data = std::make_shared<ListData>();
  for (const Value& item : items) data->depth = std::max(data->depth, item.depth() + 1);
  CheckDepth(data->depth);
  data->items = std::move(items);
  data->seq = tuple ? SeqKind::kTuple : SeqKind::kList;
  Value v;
  v.rep_ = std::shared_ptr<const ListData>(std::move(data));
  return v;
}

Value Value::Sequence(std::vector<Value> items, SeqKind seq) {
  Value v = List(std::move(items));
  const_cast<ListData&>(v.list()).seq = seq;
  return v;
}

Value Value::Range(std::int64_t start, std::int64_t stop, std::int64_t step, std::vector<Value> items) {
  Value v = Sequence(std::move(items), SeqKind::kRange);
  auto& data = const_cast<ListData&>(v.list());
  data.range[0] = start, data.range[1] = stop, data.range[2] = step;
  return v;
}

Value Value::Dict(std::vector<std::pair<Value, Value>> items) {
  comparison_work += items.size();
  auto data = std::make_shared<DictData>();
  data->items.reserve(items.size());
  for (auto& [key, value] : items) {
    std::optional<std::string> hash = HashKey(key);
    if (!hash) Fail(std::string("TypeError: unhashable type: '") + key.TypeName() + "'");
    data->depth = std::max({data->depth, value.depth() + 1, key.depth() + 1});
    const auto [it, inserted] = data->index.emplace(std::move(*hash), data->items.size());
    if (!inserted) {
      data->items[it->second].second = std::move(value);
      continue;
    }
    data->items.emplace_back(std::move(key), std::move(value));
  }
  CheckDepth(data->depth);
  Value v;
  v.rep_ = std::shared_ptr<const DictData>(std::move(data));
  return v;
}

Value Value::Namespace(std::shared_ptr<NamespaceData> ns) {
  Value v;
  v.rep_ = std::move(ns);
  return v;
}

Value Value::Function(std::string name, NativeFn fn) {
  Value v;
  v.rep_ = std::make_shared<const FunctionData>(FunctionData{std::move(name), std::move(fn)});
  return v;
}

Value Value::Loop(std::shared_ptr<LoopData> loop) {
  Value v;
  v.rep_ = std::move(loop);
  return v;
}

Value Value::FromJson(const nlohmann::ordered_json& json, int depth) {
  using J = nlohmann::ordered_json;
  switch (json.type()) {
    case J::value_t::null: return None();
    case J::value_t::boolean: return Value(json.get<bool>());
    case J::value_t::number_integer: return Value(json.get<std::int64_t>());
    case J::value_t::number_unsigned: {
      const auto u = json.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return Value(static_cast<std::int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case J::value_t::number_float: return Value(json.get<double>());
    case J::value_t::string: return Value(json.get<std::string>());
    case J::value_t::array: {
      CheckDepth(depth + 1);
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(FromJson(item, depth + 1));
      return List(std::move(items));
    }
    case J::value_t::object: {
      CheckDepth(depth + 1);
      std::vector<std::pair<Value, Value>> items;
      items.reserve(json.size());
      for (const auto& [key, item] : json.items()) items.emplace_back(Value(key), FromJson(item, depth + 1));
      return Dict(std::move(items));
    }
    default: Fail("the context holds a value JSON cannot give a template (binary data)");
  }
}

bool Value::is_list() const { return kind() == Kind::kList && (list().seq == SeqKind::kList || list().seq == SeqKind::kTuple); }
bool Value::is_tuple() const { return kind() == Kind::kList && list().seq == SeqKind::kTuple; }
SeqKind Value::seq() const { return list().seq; }
bool Value::is_indexable() const { return is_list() || (kind() == Kind::kList && list().seq == SeqKind::kRange); }

std::int64_t Value::integer() const { return is_bool() ? (boolean() ? 1 : 0) : std::get<std::int64_t>(rep_); }

double Value::number() const {
  if (is_float()) return std::get<double>(rep_);
  return static_cast<double>(integer());
}

const std::string& Value::undefined_hint() const {
  static const std::string kNoHint = "a value is undefined";
  const auto& hint = std::get<UndefinedRep>(rep_).hint;
  return hint && !hint->empty() ? *hint : kNoHint;
}

int Value::depth() const {
  if (kind() == Kind::kList) return list().depth;
  if (is_dict()) return dict().depth;
  return 0;
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return boolean();
    case Kind::kInt: return integer() != 0;
    case Kind::kFloat: return number() != 0.0;
    case Kind::kString: return !string().empty();
    case Kind::kList: return list().seq == SeqKind::kGenerator || !list().items.empty();
    case Kind::kDict: return !dict().items.empty();
    default: return true;
  }
}

const char* Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: {
      static const char* const kNames[] = {"list", "tuple", "generator", "dict_keys", "dict_values", "dict_items", "range"};
      return kNames[static_cast<int>(list().seq)];
    }
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kFunction: return "function";
    case Kind::kLoop: return "LoopContext";
  }
  return "object";
}

std::optional<std::string> HashKey(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::kUndefined: return std::string("u");
    case Value::Kind::kNone: return std::string("n");
    case Value::Kind::kBool:
    case Value::Kind::kInt: return "i" + std::to_string(key.integer());
    case Value::Kind::kFloat: {
      const double d = key.number();
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.2e18) return "i" + std::to_string(static_cast<std::int64_t>(d));
      char buf[32];
      std::snprintf(buf, sizeof buf, "f%a", d);
      return std::string(buf);
    }
    case Value::Kind::kString: return "s" + std::to_string(key.string().size()) + ":" + key.string();
    case Value::Kind::kList: {
      if (key.seq() == SeqKind::kGenerator) return "p" + std::to_string(reinterpret_cast<std::uintptr_t>(key.list_ptr().get()));
      if (!key.is_tuple() && key.seq() != SeqKind::kRange) return std::nullopt;
      std::string out = "t" + std::to_string(key.list().items.size()) + "(";
      for (const Value& item : key.list().items) {
        std::optional<std::string> h = HashKey(item);
        if (!h) return std::nullopt;
        out += *h;
      }
      return out + ")";
    }
    case Value::Kind::kDict: return std::nullopt;
    default: {  // namespaces, functions, loops: by identity
      const void* id = key.is_namespace()  ? static_cast<const void*>(key.ns_ptr().get())
                       : key.is_function() ? static_cast<const void*>(&key.function())
                                           : static_cast<const void*>(&key.loop());
      char buf[32];
      std::snprintf(buf, sizeof buf, "p%p", id);
      return std::string(buf);
    }
  }
}

const Value* DictData::Find(const std::string& key) const {
  const auto it = index.find("s" + std::to_string(key.size()) + ":" + key);
  return it == index.end() ? nullptr : &items[it->second].second;
}

const Value* DictData::Find(const Value& key) const {
  std::optional<std::string> hash = HashKey(key);
  if (!hash) return nullptr;
  const auto it = index.find(*hash);
  return it == index.end() ? nullptr : &items[it->second].second;
}

const Value* NamespaceData::Find(const std::string& name) const {
  for (const auto& [k, v] : attrs) {
    if (k == name) return &v;
  }
  return nullptr;
}

void NamespaceData::Set(const std::string& name, Value value) {
  for (auto& [k, v] : attrs) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  attrs.emplace_back(name, std::move(value));
}

std::uint64_t TakeComparisonWork() {
  const std::uint64_t work = comparison_work;
  comparison_work = 0;
  return work;
}

bool Equals(const Value& a, const Value& b, int depth) {
  ++comparison_work;
  if (depth > kMaxValueDepth) Fail("values are nested too deep to compare", kReasonLimit, StatusCode::kResourceExhausted);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.number() == b.number();
    return a.integer() == b.integer();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.string() == b.string();
    case Value::Kind::kList: {
      if (a.list_ptr() == b.list_ptr()) return true;  // Python compares items by identity first
      const ListData& x = a.list();
      const ListData& y = b.list();
      if (x.seq != y.seq || x.seq == SeqKind::kGenerator || x.items.size() != y.items.size()) return false;
      for (std::size_t i = 0; i < x.items.size(); ++i) {
        if (!Equals(x.items[i], y.items[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const DictData& x = a.dict();
      const DictData& y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [key, value] : x.items) {
        const Value* other = y.Find(key);
        if (other == nullptr || !Equals(value, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace: return a.ns_ptr() == b.ns_ptr();
    default: return false;  // functions and loops: only the very same object, which we cannot see here
  }
}

bool Less(const Value& a, const Value& b, int depth) {
  ++comparison_work;
  if (depth > kMaxValueDepth) Fail("values are nested too deep to compare", kReasonLimit, StatusCode::kResourceExhausted);
  if (a.is_undefined() || b.is_undefined()) {
    Fail(a.is_undefined() ? a.undefined_hint() : b.undefined_hint());
  }
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.number() < b.number();
    return a.integer() < b.integer();
  }
  if (a.is_string() && b.is_string()) return a.string() < b.string();  // UTF-8 byte order is code point order
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!Equals(x[i], y[i], depth + 1)) return Less(x[i], y[i], depth + 1);
    }
    return x.size() < y.size();
  }
  Fail(std::string("TypeError: '<' not supported between instances of '") + a.TypeName() + "' and '" + b.TypeName() + "'");
}

std::vector<Value> Iterate(const Value& v) {
  if (v.kind() == Value::Kind::kList) comparison_work += v.list().items.size();
  if (v.is_dict()) comparison_work += v.dict().items.size();
  if (v.is_string()) comparison_work += v.string().size();
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList:
      if (v.list().deferred_error) throw *v.list().deferred_error;
      return v.list().items;  // generators too (Python's would be used up)
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().items.size());
      for (const auto& [key, value] : v.dict().items) keys.push_back(key);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (std::string& c : py::Chars(v.string())) chars.emplace_back(std::move(c));
      return chars;
    }
    default: Fail(std::string("TypeError: '") + v.TypeName() + "' object is not iterable");
  }
}

}  // namespace unmask::jinja
