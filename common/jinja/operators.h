// Python's operators on values, and Jinja's attribute and item lookup (the sandbox's getattr /
// getitem). Internal to common/jinja.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/jinja/value.h"

namespace unmask::jinja {

// a <op> b for + - * / // % **; strings built are at most max_bytes long.
Value BinaryOp(const std::string& op, const Value& a, const Value& b, std::size_t max_bytes);
// -v (negative) or +v.
Value UnaryOp(const Value& v, bool negative);
// `item in container`.
bool Contains(const Value& container, const Value& item);

// obj.name: a dict's key unless a method has that name, an object's attribute; Undefined
// (with the message Jinja would give) when there is none. Fails when obj is Undefined.
Value GetAttr(const Value& obj, const std::string& name);
// obj[key], falling back to the attribute for string keys; Undefined when there is none.
Value GetItem(const Value& obj, const Value& key);
// obj[start:stop:step] for a list, tuple, range or str; TypeError for anything else.
Value GetSlice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// "'dict object'", "'str object'", "None", ...: how Jinja's Undefined names the object.
std::string ObjectRepr(const Value& obj);

}  // namespace unmask::jinja
