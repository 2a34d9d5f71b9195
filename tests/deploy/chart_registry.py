"""The registry of check_chart.py's cases: @case adds a function under its name, in the order the
case modules are imported."""

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn
