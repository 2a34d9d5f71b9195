// Jinja2's compile-time scoping (jinja2/idtracking.py). Every frame (the template, a loop's
// body, a macro's, a with / set / filter block's, a for's else) keeps its own variables; a name
// the frame assigns whose first use in it is that assignment starts the frame *undefined*: it
// hides the context's value and an enclosing frame's. ("{% for m in x %}{{ s }}{% endfor %}{% set
// s = 1 %}" prints nothing for s even when the context has one.) A name first read, or assigned
// only in some branches of an if, reads through to the enclosing frames and the context. This
// pass finds, for each frame, the names it starts undefined. Internal to common/jinja.
#pragma once

#include <string>
#include <vector>

#include "common/jinja/ast.h"

namespace unmask::jinja {

// Fills every statement's body_undefined / else_undefined; returns the template frame's list.
std::vector<std::string> AnalyzeScopes(Body& root);

}  // namespace unmask::jinja
