#!/usr/bin/env python3
"""Writes tests/data/chat_templates/golden.json: what Jinja2 renders for the published chat
templates of tests/data/chat_templates/*.jinja on many conversations, and for small templates
that exercise the language one feature at a time. tests/jinja/ renders every case with
common/jinja and compares byte for byte.

The environment is the one transformers' apply_chat_template renders with
(transformers/utils/chat_template_utils.py, _compile_jinja_template, 4.4x), rebuilt here because
transformers is not installed:

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[AssistantTracker, jinja2.ext.loopcontrols])
  filters["tojson"]         = json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  globals["raise_exception"] = raises jinja2.exceptions.TemplateError(message)
  globals["strftime_now"]    = datetime.now().strftime(format)   (here: a fixed clock, FIXED_NOW in UTC)

AssistantTracker is transformers' {% generation %} ... {% endgeneration %} tag; it renders its
body unchanged. The context of a chat case is what apply_chat_template passes:
messages, tools (None when none), documents (None), add_generation_prompt and the special tokens
of the checkpoint's tokenizer_config.json (those that are set).

  python3 tools/golden/make_chat_template_golden.py     (Jinja2 3.1.x; run from anywhere)
"""
import json
import os
import sys
from datetime import datetime, timezone

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_template_cases import CONVERSATIONS, FEATURES, SPECIAL_TOKENS, TOOLS  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.path.join(ROOT, "tests", "data", "chat_templates")
FIXED_NOW = 1700000000  # 2023-11-14 22:13:20 UTC; the C++ test gives strftime_now the same clock


class AssistantTracker(Extension):
    """transformers' {% generation %} tag, without the index tracking: renders the body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.fromtimestamp(FIXED_NOW, tz=timezone.utc).strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_environment()


def render(template_text, context):
    """{"expected": text} or {"error": message, "error_type": class name}."""
    try:
        return {"expected": ENV.from_string(template_text).render(**context)}
    except Exception as e:  # noqa: BLE001: any failure is a golden error case
        return {"error": str(e), "error_type": type(e).__name__}


def chat_context(template, messages, add_generation_prompt, tools):
    context = {"messages": messages, "tools": tools, "documents": None, "add_generation_prompt": add_generation_prompt}
    context.update(SPECIAL_TOKENS[template])
    return context


def chat_cases(templates):
    cases = []
    for template in sorted(templates):
        for name, conversation in CONVERSATIONS:
            uses_tools = conversation.get("tools", False)
            if uses_tools and template not in ("qwen2.5-7b-instruct", "dream-v0-instruct-7b", "llama-3.1-8b-instruct",
                                               "ling-2.0"):
                continue
            for agp in (True, False):
                context = chat_context(template, conversation["messages"], agp, TOOLS if uses_tools else None)
                case = {"name": f"{template}/{name}/agp={int(agp)}", "template": template, "context": context}
                case.update(render(templates[template], context))
                cases.append(case)
    return cases


def feature_cases():
    cases = []
    for i, feature in enumerate(FEATURES):
        text, context = feature[0], feature[1] if len(feature) > 1 else {}
        case = {"name": f"feature {i}", "template_text": text, "context": context}
        case.update(render(text, context))
        cases.append(case)
    return cases


def main():
    assert jinja2.__version__.startswith("3.1"), f"made with Jinja2 3.1, this is {jinja2.__version__}"
    templates = {}
    for file in sorted(os.listdir(DATA)):
        if file.endswith(".jinja"):
            with open(os.path.join(DATA, file), encoding="utf-8", newline="") as f:
                templates[file[: -len(".jinja")]] = f.read()
    golden = {
        "jinja2_version": jinja2.__version__,
        "fixed_now": FIXED_NOW,
        "templates": {name: name + ".jinja" for name in templates},
        "chat": chat_cases(templates),
        "features": feature_cases(),
    }
    out = os.path.join(DATA, "golden.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum("error" in c for c in golden["chat"] + golden["features"])
    print(f"{out}: {len(golden['chat'])} chat cases, {len(golden['features'])} feature cases ({errors} errors)")


if __name__ == "__main__":
    main()
