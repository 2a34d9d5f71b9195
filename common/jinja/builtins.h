// What templates can call besides macros: filters (filters.cc, filters_seq.cc), tests
// (tests.cc), the global functions and the methods of str, dict and list (methods.cc). Internal
// to common/jinja.
#pragma once

#include <optional>
#include <string>

#include "common/jinja/value.h"

namespace unmask::jinja {

using FilterFn = Value (*)(Runtime& rt, const Value& input, CallArgs& args);
using TestFn = bool (*)(Runtime& rt, const Value& input, CallArgs& args);

// Null when there is no such filter / test.
FilterFn FindFilter(const std::string& name);
TestFn FindTest(const std::string& name);

// The globals: range, dict, namespace, raise_exception, strftime_now. Undefined when unknown.
Value GlobalFunction(const std::string& name);

// obj.name when it names a method of a str, dict or list: the bound method (a function value),
// or an Undefined that fails when called for the sandbox's unsafe (mutating) methods. nullopt
// when `name` is no method of obj's type.
std::optional<Value> GetMethod(const Value& obj, const std::string& name);

// Binds a call's arguments to a Python-style signature: positional first, then keywords by
// name; missing ones are nullopt. Fails on too many or unknown arguments.
std::vector<std::optional<Value>> BindArgs(const CallArgs& args, const std::vector<const char*>& names,
                                           const std::string& callee);

}  // namespace unmask::jinja
