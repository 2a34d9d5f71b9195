// Jinja2's sequence filters: map, select / reject (and their attr forms), sort, unique, min,
// max, sum, dictsort, join. Where Jinja returns a generator these return a list.
#include <algorithm>
#include <unordered_set>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/filters.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_format.h"
#include "common/jinja/py_string.h"
#include "common/jinja/runtime.h"

namespace unmask::jinja {

Value GetAttribute(const Value& item, const Value& attribute, const Value* default_value) {
  std::vector<Value> parts;
  if (attribute.is_string()) {
    const std::string dot = ".";
    for (std::string& part : py::Split(attribute.string(), &dot, -1)) {
      const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits && part.size() < 18) parts.emplace_back(static_cast<std::int64_t>(std::stoll(part)));
      else parts.emplace_back(std::move(part));
    }
  } else if (!attribute.is_none()) {
    parts.push_back(attribute);
  }
  Value v = item;
  for (const Value& part : parts) {
    v = GetItem(v, part);
    if (default_value != nullptr && v.is_undefined()) v = *default_value;
  }
  return v;
}

Value Generator(const std::function<void(std::vector<Value>*)>& produce) {
  std::vector<Value> items;
  std::shared_ptr<const TemplateError> deferred;
  try {
    produce(&items);
  } catch (const TemplateError& e) {
    if (e.reason != kReasonRender) throw;  // limits are not deferred
    deferred = std::make_shared<const TemplateError>(e);
  }
  Value v = Value::Sequence(std::move(items), SeqKind::kGenerator);
  const_cast<ListData&>(v.list()).deferred_error = std::move(deferred);
  return v;
}

namespace {

// The items of a filter's input: nothing for a falsy input (as `if value:` in Jinja).
std::vector<Value> Items(const Value& input) { return input.Truthy() ? Iterate(input) : std::vector<Value>{}; }

Value Lowered(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py::Lower(v.string()));
  return v;
}

// The key a sort-like filter compares: the attribute, lowercased unless case_sensitive.
Value SortKey(const Value& item, const std::optional<Value>& attribute, bool case_sensitive) {
  const Value v = attribute && !attribute->is_none() ? GetAttribute(item, *attribute, nullptr) : item;
  return Lowered(v, case_sensitive);
}

void SelectItems(Runtime& rt, const Value& input, CallArgs& args, bool select, bool attr, std::vector<Value>* out) {
  std::size_t next = 0;
  Value attribute;
  if (attr) {
    if (args.args.empty()) Fail("missing parameter for attribute name");
    attribute = args.args[next++];
  }
  const bool has_test = next < args.args.size();
  const std::string test = has_test ? PyStr(args.args[next], rt.max_bytes()) : std::string();
  if (has_test && FindTest(test) == nullptr) Fail("no test named '" + test + "'");
  CallArgs test_args;
  if (has_test) test_args.args.assign(args.args.begin() + static_cast<std::ptrdiff_t>(next) + 1, args.args.end());
  test_args.kwargs = args.kwargs;
  for (const Value& item : Items(input)) {
    rt.Charge(1);
    const Value subject = attr ? GetAttribute(item, attribute, nullptr) : item;
    const bool ok = has_test ? rt.ApplyTest(test, subject, test_args) : subject.Truthy();
    if (ok == select) out->push_back(item);
  }
}

Value SelectOrReject(Runtime& rt, const Value& input, CallArgs& args, bool select, bool attr) {
  return Generator([&](std::vector<Value>* out) { SelectItems(rt, input, args, select, attr, out); });
}

Value MinOrMax(Runtime&, const Value& input, CallArgs& args, bool max) {
  const auto bound = BindArgs(args, {"case_sensitive", "attribute"}, max ? "max" : "min");
  const bool case_sensitive = bound[0] && bound[0]->Truthy();
  const std::vector<Value> items = Iterate(input);
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  std::size_t best = 0;
  Value best_key = SortKey(items[0], bound[1], case_sensitive);
  for (std::size_t i = 1; i < items.size(); ++i) {
    Value key = SortKey(items[i], bound[1], case_sensitive);
    if (max ? Less(best_key, key) : Less(key, best_key)) best = i, best_key = std::move(key);
  }
  return items[best];
}

void MapItems(Runtime& rt, const Value& input, CallArgs& args, std::vector<Value>* out) {
  if (args.args.empty()) {
    std::optional<Value> attribute, default_value;
    for (const auto& [key, value] : args.kwargs) {
      if (key == "attribute") attribute = value;
      else if (key == "default") default_value = value;
      else Fail("map(): unexpected keyword argument '" + key + "'");
    }
    if (!attribute) Fail("map() needs a filter name or attribute=");
    const Value* dflt = default_value && !default_value->is_none() ? &*default_value : nullptr;
    for (const Value& item : Items(input)) out->push_back(GetAttribute(item, *attribute, dflt));
    return;
  }
  const std::string filter = PyStr(args.args[0], rt.max_bytes());
  CallArgs filter_args;
  filter_args.args.assign(args.args.begin() + 1, args.args.end());
  filter_args.kwargs = args.kwargs;
  for (const Value& item : Items(input)) {
    rt.Charge(1);
    out->push_back(rt.ApplyFilter(filter, item, filter_args));
  }
}

}  // namespace

Value FilterMap(Runtime& rt, const Value& input, CallArgs& args) {
  return Generator([&](std::vector<Value>* out) { MapItems(rt, input, args, out); });
}

Value FilterSelect(Runtime& rt, const Value& input, CallArgs& args) { return SelectOrReject(rt, input, args, true, false); }
Value FilterReject(Runtime& rt, const Value& input, CallArgs& args) { return SelectOrReject(rt, input, args, false, false); }
Value FilterSelectAttr(Runtime& rt, const Value& input, CallArgs& args) { return SelectOrReject(rt, input, args, true, true); }
Value FilterRejectAttr(Runtime& rt, const Value& input, CallArgs& args) { return SelectOrReject(rt, input, args, false, true); }

Value FilterSort(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"reverse", "case_sensitive", "attribute"}, "sort");
  const bool reverse = bound[0] && bound[0]->Truthy();
  const bool case_sensitive = bound[1] && bound[1]->Truthy();
  std::vector<std::pair<Value, Value>> keyed;  // key, item
  for (const Value& item : Iterate(input)) keyed.emplace_back(SortKey(item, bound[2], case_sensitive), item);
  rt.Charge(keyed.size());
  // Jinja's sort keys are one-item lists, and lists compare their items with == first.
  const auto less = [](const Value& x, const Value& y) { return !Equals(x, y) && Less(x, y); };
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? less(b.first, a.first) : less(a.first, b.first);
  });
  std::vector<Value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::List(std::move(out));
}

Value FilterUnique(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"case_sensitive", "attribute"}, "unique");
  const bool case_sensitive = bound[0] && bound[0]->Truthy();
  return Generator([&](std::vector<Value>* out) {
    std::unordered_set<std::string> seen;
    for (const Value& item : Iterate(input)) {
      const std::optional<std::string> key = HashKey(SortKey(item, bound[1], case_sensitive));
      if (!key) Fail(std::string("TypeError: unhashable type: '") + item.TypeName() + "'");
      if (seen.insert(*key).second) out->push_back(item);
    }
    rt.Charge(out->size());
  });
}

Value FilterMin(Runtime& rt, const Value& input, CallArgs& args) { return MinOrMax(rt, input, args, false); }
Value FilterMax(Runtime& rt, const Value& input, CallArgs& args) { return MinOrMax(rt, input, args, true); }

Value FilterSum(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"attribute", "start"}, "sum");
  Value total = bound[1] ? *bound[1] : Value(0);
  for (const Value& item : Iterate(input)) {
    const Value v = bound[0] && !bound[0]->is_none() ? GetAttribute(item, *bound[0], nullptr) : item;
    total = BinaryOp("+", total, v, rt.max_bytes());
  }
  return total;
}

Value FilterDictSort(Runtime&, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"case_sensitive", "by", "reverse"}, "dictsort");
  if (!input.is_dict()) Fail("dictsort: can only sort a mapping");
  const bool case_sensitive = bound[0] && bound[0]->Truthy();
  const bool by_value = bound[1] && bound[1]->is_string() && bound[1]->string() == "value";
  if (bound[1] && !by_value && !(bound[1]->is_string() && bound[1]->string() == "key")) {
    Fail("dictsort: you can only sort by either \"key\" or \"value\"");
  }
  const bool reverse = bound[2] && bound[2]->Truthy();
  std::vector<std::pair<Value, Value>> items = input.dict().items;
  std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b) {
    const Value ka = Lowered(by_value ? a.second : a.first, case_sensitive);
    const Value kb = Lowered(by_value ? b.second : b.first, case_sensitive);
    return reverse ? Less(kb, ka) : Less(ka, kb);
  });
  std::vector<Value> out;
  for (auto& [key, value] : items) out.push_back(Value::List({key, value}, true));
  return Value::List(std::move(out));
}

Value FilterJoin(Runtime& rt, const Value& input, CallArgs& args) {
  const auto bound = BindArgs(args, {"d", "attribute"}, "join");
  const std::string sep = bound[0] ? PyStr(*bound[0], rt.max_bytes()) : std::string();
  std::string out;
  bool first = true;
  for (const Value& item : Iterate(input)) {
    if (!first) out += sep;
    first = false;
    const Value v = bound[1] && !bound[1]->is_none() ? GetAttribute(item, *bound[1], nullptr) : item;
    out += PyStr(v, rt.max_bytes());
    if (out.size() > rt.max_bytes()) Fail("join: a string longer than the limit", kReasonLimit, StatusCode::kResourceExhausted);
  }
  rt.Charge(out.size() / 64);
  return Value(std::move(out));
}

}  // namespace unmask::jinja
