// The filters of jinja2/filters.py that work on sequences (filters_seq.cc), for the filter
// table of filters.cc. Internal to common/jinja.
#pragma once

#include <functional>
#include <vector>

#include "common/jinja/value.h"

namespace unmask::jinja {

Value FilterMap(Runtime& rt, const Value& input, CallArgs& args);
Value FilterSelect(Runtime& rt, const Value& input, CallArgs& args);
Value FilterReject(Runtime& rt, const Value& input, CallArgs& args);
Value FilterSelectAttr(Runtime& rt, const Value& input, CallArgs& args);
Value FilterRejectAttr(Runtime& rt, const Value& input, CallArgs& args);
Value FilterSort(Runtime& rt, const Value& input, CallArgs& args);
Value FilterUnique(Runtime& rt, const Value& input, CallArgs& args);
Value FilterMin(Runtime& rt, const Value& input, CallArgs& args);
Value FilterMax(Runtime& rt, const Value& input, CallArgs& args);
Value FilterSum(Runtime& rt, const Value& input, CallArgs& args);
Value FilterDictSort(Runtime& rt, const Value& input, CallArgs& args);
Value FilterJoin(Runtime& rt, const Value& input, CallArgs& args);

// A generator (SeqKind::kGenerator) of what `produce` appends. An error it raises (but a limit)
// is deferred to whoever iterates the generator: Jinja's generators are lazy.
Value Generator(const std::function<void(std::vector<Value>*)>& produce);

// Jinja's make_attrgetter: item["a"]["b"] for attribute "a.b" (digit parts index lists); with
// `default` for what is undefined.
Value GetAttribute(const Value& item, const Value& attribute, const Value* default_value);

}  // namespace unmask::jinja
