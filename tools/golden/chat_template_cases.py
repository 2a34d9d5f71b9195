"""The cases of make_chat_template_golden.py: conversations for the published chat templates,
the special tokens each checkpoint's tokenizer_config.json sets, and one-feature templates."""

# The special tokens apply_chat_template passes (tokenizer.special_tokens_map: the ones set).
SPECIAL_TOKENS = {
    "llada-8b-instruct": {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                          "cls_token": "[CLS]",
                          "additional_special_tokens": ["<role>", "</role>", "<|arithmetic_start|>",
                                                        "<|arithmetic_end|>", "<|number_start|>", "<|number_end|>"]},
    "llama-3-8b-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama-3.1-8b-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "qwen2.5-7b-instruct": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                            "additional_special_tokens": ["<|im_start|>", "<|im_end|>"]},
    "dream-v0-instruct-7b": {"bos_token": "<|beginoftext|>", "eos_token": "<|endoftext|>",
                             "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"},
    "ling-2.0": {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"},
}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city. Unicode: Zürich, 東京.",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string", "description": "The city"},
                                      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                                      "days": {"type": "integer", "minimum": 1, "maximum": 7.5}},
                       "required": ["city"]}}},
    {"type": "function", "function": {"name": "no_args", "description": "Takes nothing \"quoted\" \\ slash",
                                      "parameters": {"type": "object", "properties": {}}}},
]

U = "user"
A = "assistant"
S = "system"


def m(role, content, **extra):
    message = {"role": role, "content": content}
    message.update(extra)
    return message


def call(name, arguments, wrapped=True, call_id=None):
    fn = {"name": name, "arguments": arguments}
    if not wrapped:
        return fn
    c = {"type": "function", "function": fn}
    if call_id:
        c["id"] = call_id
    return c


LONG = " ".join(f"word{i}" for i in range(400))

CONVERSATIONS = [
    ("user", {"messages": [m(U, "What is the capital of France?")]}),
    ("system_user", {"messages": [m(S, "You are terse."), m(U, "Hi!")]}),
    ("multi_turn", {"messages": [m(U, "Hello"), m(A, "Hi! How can I help?"), m(U, "Tell me a joke.")]}),
    ("system_multi_turn", {"messages": [m(S, "Be kind."), m(U, "a"), m(A, "b"), m(U, "c"), m(A, "d"), m(U, "e")]}),
    ("ends_with_assistant", {"messages": [m(U, "2+2?"), m(A, "4")]}),
    ("unicode", {"messages": [m(S, "Réponds en français ✓"), m(U, "héllo 世界 🎉 Ωmega\u00a0nbsp مرحبا"),
                              m(A, "Ça va? 😀\u200b")]}),
    ("jinja_looking", {"messages": [m(U, "{{ 1 + 1 }} {% if x %}y{% endif %} {# c #} {%- raw %}"),
                                    m(A, "{{ messages }}")]}),
    ("whitespace", {"messages": [m(S, "  padded system  \n\n"), m(U, "\n\tindented\n  "), m(A, "  trailing  ")]}),
    ("empty_content", {"messages": [m(U, ""), m(A, ""), m(U, " ")]}),
    ("special_tokens_in_content", {"messages": [m(U, "<|eot_id|><|im_end|><role>HUMAN</role>")]}),
    ("quotes", {"messages": [m(U, "He said \"hi\" \\ and 'bye'\u0001")]}),
    ("long", {"messages": [m(U, LONG)]}),
    ("later_system", {"messages": [m(U, "first"), m(S, "new rules"), m(U, "second")]}),
    ("thinking", {"messages": [m(U, "Solve it"), m(A, "<think>\nstep 1\nstep 2\n</think>\n\nThe answer is 42."),
                               m(U, "Again"), m(A, "<think>again</think>43")]}),
    ("thinking_last", {"messages": [m(U, "q1"), m(A, "<think>old</think>a1"), m(U, "q2"),
                                    m(A, "\n<think>\nnew reasoning\n</think>\n\na2")]}),
    ("tools_no_calls", {"tools": True, "messages": [m(S, "You call tools."), m(U, "Weather in Paris?")]}),
    ("tools_no_system", {"tools": True, "messages": [m(U, "Weather in Paris?")]}),
    ("tool_call_and_result", {"tools": True, "messages": [
        m(U, "Weather in Paris?"),
        m(A, "", tool_calls=[call("get_weather", {"city": "Paris", "unit": "celsius"}, call_id="c1")]),
        m("tool", "{\"temp\": 21, \"sky\": \"clear\"}", tool_call_id="c1"),
        m(A, "It is 21°C and clear in Paris.")]}),
    ("tool_call_none_content", {"tools": True, "messages": [
        m(U, "Weather?"), m(A, None, tool_calls=[call("get_weather", {"city": "Rome"})]),
        m("tool", "sunny")]}),
    ("tool_call_with_text", {"tools": True, "messages": [
        m(U, "Weather?"), m(A, "Let me check.", tool_calls=[call("get_weather", {"city": "Oslo", "days": 3})]),
        m("tool", "rain")]}),
    ("parallel_tool_calls", {"tools": True, "messages": [
        m(U, "Paris and Rome?"),
        m(A, "", tool_calls=[call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Rome"})]),
        m("tool", "sunny"), m("tool", "cloudy"), m(U, "Thanks")]}),
    ("tool_call_unwrapped_string_args", {"tools": True, "messages": [
        m(U, "Go"), m(A, "", tool_calls=[call("no_args", "{}", wrapped=False)]), m("tool", "done")]}),
    ("tool_result_mapping", {"tools": True, "messages": [
        m(U, "Go"), m(A, "", tool_calls=[call("no_args", {})]), m("tool", {"ok": True, "items": [1, 2.5, None]})]}),
    ("tool_response_as_user", {"tools": True, "messages": [
        m(U, "real question"), m(A, "", tool_calls=[call("no_args", {})]),
        m(U, "<tool_response>\nresult\n</tool_response>"), m(A, "<think>r</think>done")]}),
    ("tools_system_only", {"tools": True, "messages": [m(S, "only system")]}),
]

# One-feature templates, optionally with a context: (template, context).
D = {"d": {"a": {"b": [1, {"c": "deep"}]}, "items": 5, "text": "Hello"}}
MSGS = {"messages": [m(S, "sys"), m(U, "u1"), m(A, "a1"), m(U, "u2")]}

FEATURES = [
    # whitespace control, trim_blocks, lstrip_blocks
    ("a\n{% if true %}\nb\n{% endif %}\nc",),
    ("  {% if true %}x{% endif %}  \n y",),
    ("{%- if true -%}  x  {%- endif -%}  z",),
    ("a  {{- 'b' -}}  c\n\n  {{ 'd' -}}\n e",),
    ("{% if true +%}\nx\n  {%+ endif %}|",),
    ("  {# comment #}\nx  {#- c -#}  y {# c +#}\nz",),
    ("\t\t{% for i in [1, 2] %}\n\t{{ i }}\n\t\t{% endfor %}\nend",),
    ("\u3000 {% if true %}wide space{% endif %}",),
    ("line\n    {% set x = 1 %}\n    {{ x }}\n    {%- set y = 2 %}\n{{ y }}",),
    ("a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\r\n",),
    ("x\n",),
    ("x\n\n",),
    ("{{ 'x' }}\n",),
    ("{% raw %}{{ not }} {% if %}{% endraw %}",),
    ("a\n{% raw %}\n{{x}}\n{% endraw %}\nb",),
    ("a\n  {%- raw -%}  X  {%- endraw -%}  \nb",),
    ("  {% raw %}R{% endraw %}\n  {% if true %}\nT\n  {% endif %}\nE",),
    ("{# {% if %} {{ x }} #}ok{#- multi\nline -#}  !",),
    ("{% generation %}g{{ 1 }}{% endgeneration %}|",),
    # literals and printing
    ("{{ 1 }} {{ -1 }} {{ 1.5 }} {{ 1e3 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 1_000 }} {{ 2.50 }} {{ 1e-7 }} {{ 1e16 }}",),
    ("{{ true }} {{ True }} {{ false }} {{ none }} {{ None }} {{ 'a' 'b' }} {{ \"dq\" }}",),
    (r"{{ 'tab\there\nnl \u00e9 \x41 \101 \\ \q \U0001F600' }}",),
    ("{{ [1, 'a', [true, none], {'k': 1.0, 2: 'two'}] }} {{ (1,) }} {{ () }} {{ (1, 2) }} {{ [] }} {{ {} }}",),
    ("{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n', 'é', '\\u200b', '\\x7f', '\\\\'] }}",),
    ("{{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ 2 / 1 }} {{ 123456789.0 }} {{ 1e22 }} {{ -0.0 }} {{ 1e-4 }} {{ 1.5e-5 }}",),
    # operators
    ("{{ 7 + 3 }} {{ 7 - 10 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }}",),
    ("{{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 + 2.5 }} {{ true + 1 }} {{ 7 // -2 }} {{ 7 % -3 }}",),
    ("{{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ not true or true }} {{ (1 + 2) ~ 'x' }}",),
    ("{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 'x' ~ 1 ~ none ~ true ~ 1.0 }} {{ [1] + [2] }} {{ [0] * 3 }}",),
    ("{{ 'ab' * 0 }}|{{ 'ab' * -2 }}|{{ '%s and %s' % ('a', 1) }}|{{ '%d%%' % 50 }}",),
    ("{{ 1 < 2 }} {{ 2 <= 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 1 != '1' }} {{ [1, 2] == [1, 2] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 4 }}",),
    ("{{ {'a': 1} == {'a': 1} }} {{ (1, 2) == [1, 2] }} {{ true == 1 }} {{ none == none }} {{ [1, 2] < [1, 3] }} {{ 'B' < 'a' }}",),
    ("{{ 'a' in 'cat' }} {{ 'z' not in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' in nope }} {{ 1 in (1, 2) }}",),
    ("{{ 0 or 'x' }} {{ 'a' and 'b' }} [{{ '' and 'b' }}] {{ none or [] }} {{ not '' }} {{ not 0 and 1 }}",),
    ("{{ 'y' if true else 'n' }} {{ 'y' if false else 'n' }} [{{ 'y' if false }}] {{ 1 if 0 else 2 if 1 else 3 }}",),
    # attributes, items, slices
    ("{{ d.a.b[1].c }} {{ d['a']['b'][0] }} {{ d.a.b.0 }} [{{ d.missing }}] {{ d['items'] }} {{ d.a.b[-1].c }} [{{ d.a.b[5] }}]", D),
    ("{{ d.text[0] }} {{ d.text[-1] }} {{ d.text[1:3] }} {{ d.text[::-1] }} {{ d.text[::2] }} {{ d.text[-3:] }} [{{ d.text[9] }}]", D),
    ("{{ [1, 2, 3, 4][::2] }} {{ [1, 2, 3][-2:] }} {{ 'héllo'[1] }} {{ (1, 2, 3)[1:] }} {{ [1, 2, 3][5:] }} {{ 'abc'[:-1] }}",),
    ("[{{ nope }}] {{ nope is defined }} {{ nope is undefined }} {{ nope|default('dflt') }} {{ nope|length }} [{% for x in nope %}x{% endfor %}]",),
    ("[{{ nope ~ 'x' }}] {{ not nope }} {{ nope == nope }} {{ nope|string }}| {{ nope|trim }}| {{ nope|list }} {{ nope|join(',') }}|",),
    ("{{ none is none }} {{ none|string }} [{{ none.attr }}] [{{ none['k'] }}] [{{ 5.attr }}] [{{ 'abc'.nope }}] {{ 'abc'.nope is defined }}",),
    # if / for / loop
    ("{% for i in [1, 2, 3, 4] %}{% if i == 1 %}one{% elif i == 2 %}two{% elif i == 3 %}three{% else %}many{% endif %} {% endfor %}",),
    ("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
     "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.depth }}|{% endfor %}",),
    ("{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}never{% endfor %}",),
    ("{% for x in range(10) if x is odd %}{{ x }}{{ ',' if not loop.last }}{% endfor %}|{% for x in [1] if false %}{% else %}none{% endfor %}",),
    ("{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}",),
    ("{% for a, b in [[1, 2], (3, 4), 'xy'] %}{{ a }}{{ b }} {% endfor %}{% for c in 'héllo' %}{{ c }}.{% endfor %}",),
    ("{% for i in [1, 2] %}{% set outer = loop %}{% for j in 'ab' %}{{ outer.index }}{{ loop.index }}{{ j }} {% endfor %}{% endfor %}",),
    ("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",),
    ("{% for i in [1, 1, 2, 3, 3] %}{{ loop.changed(i) }}{{ loop.cycle('a', 'b', 'c') }} {% endfor %}",),
    ("{% for i in [3, 4] %}{{ i }}{% endfor %}[{{ i }}] {% set i = 9 %}{% for i in [5] %}{{ i }}{% endfor %}{{ i }}",),
    # scopes, set, namespace
    ("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{{ x }}{% endfor %}{{ x }}",),
    ("{% for m in [1, 2, 3] %}{% if loop.first %}{% set y = 1 %}{% endif %}[{{ y }}]{% endfor %}",),
    ("{% if true %}{% set z = 'set in if' %}{% endif %}{{ z }}",),
    ("{% set ns = namespace(count=0, found=false) %}{% for m in [1, 2, 3] %}{% set ns.count = ns.count + m %}"
     "{% if m == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.found }} {{ ns }}",),
    ("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }} {{ ns.c is defined }} {% set ns.c = [1] %}{{ ns.c }}",),
    ("{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set c, d = 'xy' %}{{ c }}{{ d }} {% set t = 1, %}{{ t }}",),
    ("{% set x %}  inner {{ 1 + 1 }}\n{% endset %}[{{ x }}]{% set y | upper %}abc{% endset %}{{ y }}",),
    ("{% set messages = messages[1:] %}{{ messages|length }}{% for m in messages %}{{ m.role }}{% endfor %}", MSGS),
    # macros
    ("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}"
     "{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet(name='Cy') }} {{ greet() }}",),
    ("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}|{{ m(a=0) }}",),
    ("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",),
    ("{% set x = 'outer' %}{% macro show() %}{{ x }}{% endmacro %}{% set x = 'changed' %}{{ show() }}",),
    ("{% macro m() %}\n  body\n{% endmacro %}[{{ m() }}]{{ m() | length }}",),
    # other statements
    ("{% filter upper %}hello {{ 'world' }}{% endfilter %} {% filter replace('a', 'o')|title %}banana{% endfilter %}",),
    ("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}",),
    ("{% print 'x' ~ 1 %}",),
    # filters
    ("[{{ '  a b  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ 5|trim }}][{{ none|trim }}][{{ '\u3000\u00a0x\u2003'|trim }}]",),
    ("{{ {'b': 1, 'a': [1, 2.5, none, true, 'é\"\\n\\u0001'], 'e': {}, 'l': []}|tojson }}",),
    ("{{ {'b': 1, 'a': [1, {'c': []}, {}]}|tojson(indent=2) }}|{{ [1, [2]]|tojson(indent='\\t') }}|{{ {'a': 1}|tojson(indent=0) }}",),
    ("{{ 'é😀\\x7f'|tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} {{ [1, {'a': 2}]|tojson(separators=(',', ':')) }}",),
    ("{{ 1e16|tojson }} {{ 0.1|tojson }} {{ 1.0|tojson }} {{ -5|tojson }} {{ 'x'|tojson }} {{ (1, 2)|tojson }} {{ {1: 'int key'}|tojson }}",),
    ("{{ 'héllo'|length }} {{ [1, 2]|count }} {{ {'a': 1}|length }} {{ ''|length }}",),
    ("{{ 1|string }} {{ 'aBc'|upper }} {{ 'aBc'|lower }} {{ 'hello WORLD'|capitalize }} {{ 'hello-world foo(bar) [x]y'|title }} {{ \"it's\"|title }}",),
    ("{{ nope|default('d') }} [{{ ''|default('e') }}] {{ ''|default('e', true) }} {{ none|default('n') }} {{ 0|d('z', boolean=true) }}",),
    ("{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ []|first }}] {{ {'k': 1, 'j': 2}|first }}",),
    ("{{ ['a', 'b']|join }} {{ [1, 2, 3]|join(', ') }} {{ [{'n': 'x'}, {'n': 'y'}]|join('/', attribute='n') }} {{ 'abc'|join('-') }}",),
    ("{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'a.b'|replace('.', '') }} {{ 'ab'|replace('', '-') }}",),
    ("{{ {'a': 1, 'b': 2}|items|list }} {{ 'abc'|list }} {{ {'k': 1}|list }} {{ (1, 2)|list }}",),
    ("{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ -3.9|int }} {{ '0x1f'|int(base=16) }} {{ ' 12 '|int }} {{ '1_000'|int }}",),
    ("{{ '3.5'|float }} {{ 'x'|float }} {{ 2|float }} {{ '1e3'|float }} {{ none|int }} {{ true|int }}",),
    ("{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}|"
     "{{ messages|rejectattr('role', 'eq', 'user')|list|length }}|{{ messages|map(attribute='missing', default='?')|list }}", MSGS),
    ("{{ [1, 2, 3, 4]|select('even')|list }} {{ [1, 2, 3]|reject('odd')|list }} {{ ['a', 'b']|map('upper')|list }}"
     " {{ [{'a': 0}, {'a': 1}]|selectattr('a')|list }} {{ [0, 1, '', 'x']|select|list }} {{ [3, 7]|map('string')|join }}",),
    ("{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }}"
     " {{ [{'n': 2}, {'n': 1}]|sort(attribute='n') }}",),
    ("{{ [1, 2, 1, 3]|unique|list }} {{ ['a', 'A', 'b']|unique|list }} {{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }}"
     " {{ [4, 2, 8]|min }} {{ [4, 2, 8]|max }} {{ ['b', 'A']|max }} {{ [1, 2, 3]|sum }} {{ [{'v': 1}, {'v': 2}]|sum(attribute='v') }}",),
    ("{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 3.14159|round(2) }} {{ 2.7|round(method='floor') }} {{ 2.1|round(method='ceil') }} {{ 3|round }}",),
    ("[{{ 'a\\nb\\n\\nc'|indent(2) }}][{{ 'a\\nb'|indent(2, true) }}][{{ 'a\\n\\nb'|indent('> ', blank=true) }}]",),
    ("[{{ 'ab'|center(7) }}] {{ 'one two  three'|wordcount }} {{ '<a href=\"x\">&\\'</a>'|escape }} {{ '%s-%s'|format(1, 'b') }}",),
    ("{{ {'b': 2, 'a': 1, 'C': 0}|dictsort }} {{ {'b': 2, 'a': 1}|dictsort(by='value', reverse=true) }} {{ [1]|safe }} {{ d|attr('text') }}", D),
    # tests
    ("{{ 1 is number }} {{ 1.0 is float }} {{ 1 is integer }} {{ true is integer }} {{ true is boolean }} {{ 'a' is string }}"
     " {{ {} is mapping }} {{ [] is sequence }} {{ 'a' is iterable }} {{ 1 is iterable }} {{ nope is iterable }} {{ none is sequence }}",),
    ("{{ none is none }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }}"
     " {{ 9 is divisibleby(4) }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'A1' is lower }}",),
    ("{{ 1 is eq 1 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is ge 2 }} {{ 1 is in [1] }} {{ x is not defined }} {{ 'trim' is filter }}"
     " {{ 'odd' is test }} {{ range is callable }} {{ 1 is sameas 1 }} {{ none is sameas none }} {{ 'x' is not none }}",),
    # methods
    ("{{ '  a  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|"
     "{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a-b-c'.rsplit('-', 1) }}|{{ '  a b  c '.split(none, 1) }}",),
    ("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'abc'.startswith('b', 1) }} {{ 'aBc'.upper() }} {{ 'aBc'.lower() }}"
     " {{ 'ab'.replace('b', 'c') }} {{ \"hello wORLD it's 1st\".title() }} {{ 'hELLO'.capitalize() }}",),
    ("{{ 'abcb'.find('b') }} {{ 'abcb'.rfind('b') }} {{ 'abcb'.count('b') }} {{ '-'.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }}"
     " {{ '42'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ 'ab'.islower() }} {{ 'xab'.removeprefix('x') }}",),
    ("{% set d = {'a': 1, 'b': 2} %}{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }}",),
    ("{{ 'straße'.upper() }} {{ 'ÀÉÎ'.lower() }} {{ 'ΑΒΓ'.lower() }} {{ 'привет'.upper() }} {{ 'émile zola'.title() }} {{ 'ÿ'.upper() }}",),
    ("{{ [1, 2, 1].count(1) }} {{ [1, 2].index(2) }} {{ messages[0].get('role') }} {{ messages[-1]['content'].upper() }}", MSGS),
    # globals
    ("{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(10, 0, -3)|list }} {{ dict(a=1, b='x') }} {{ dict({'k': 1}, z=2) }}",),
    ("{{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %d %b %j') }}",),
    # Jinja's scoping: a frame's name first assigned there starts undefined in it
    ("{% for m in messages %}[{{ s }}]{% endfor %}{% set s = 'root' %}{{ s }}", {**MSGS, "s": "ctx"}),
    ("[{{ s }}]{% set s = 'root' %}{{ s }}|{% if true %}{% set t = 1 %}{% endif %}{% for m in [1] %}{{ t }}{% endfor %}", {"s": "ctx", "t": "ctx"}),
    ("{% for x in 'ab' %}{% for y in [1] %}[{{ s }}]{% endfor %}{% set s = x %}{% endfor %}|{% for x in 'ab' %}[{{ s }}]{% set s = x %}{% endfor %}",
     {"s": "ctx"}),
    ("{% set x %}{% set inner = 1 %}{{ inner }}{% endset %}{{ x }}[{{ inner }}] {% macro m() %}{% set y = 2 %}{{ y }}{% endmacro %}{{ m() }}[{{ y }}]",),
    ("{% for x in [1, 2] %}{% break %}{% else %}else after break{% endfor %}|{% for x in [1] %}{% continue %}{% else %}else after continue{% endfor %}",),
    # generators, Markup, % formatting
    ("{{ (messages|selectattr('role', 'eq', 'nobody')) is not none }} {% if messages|selectattr('role', 'eq', 'nobody') %}truthy{% endif %}"
     " {{ messages|selectattr('role', 'eq', 'user')|list|length }} {{ messages|map(attribute='role')|first }}", MSGS),
    ("{{ [1, 2]|reverse|list }} {{ {'a': 1}.items() }} {{ {'a': 1}.keys() }} {{ range(3) }} {{ range(1, 9, 2) }} {{ range(2)|list }} {{ {'a': 1}.values()|length }}",),
    ("{{ '<b>'|safe + '<i>' }} {{ '<i>' + '<b>'|safe }} {{ ['x'|safe] }} {{ '<b>'|e }} {{ ('<b>'|safe * 2) }} {{ '<b>'|safe ~ '<i>' }} {{ ' <b> '|safe|trim + '&' }}",),
    ("{{ '%s|%r|%d' % ('a', 'b', 3) }} {{ 'plain' % {} }} {{ 'plain' % [] }} {{ '%s' % [1] }} {{ '%s' % nope }}|{{ 'x' % nope }}",),
    ("{{ 2 ** 0.5 }} {{ 10 ** -2 }} {{ [1, 2] | first }} {{ 'ab' is sequence }} {{ range(2) is sequence }} {{ {'a': 1}.keys() is sequence }}",),
    # errors
    ("{{ 2.5 ** 1000.0 }}",),
    ("{{ '%s' % (1, 2) }}",),
    ("{{ [1, 2][::0] }}",),
    ("{{ 5[1:] }}",),
    ("{{ d[1:] }}", D),  # (a literal dict would be folded at compile time, through getitem: no error)
    ("{{ (x|map(attribute='a')|list) }}", {"x": [{"a": {"b": 1}}, 5]}),
    ("{{ nope|int }}",),
    ("{{ 'a' is upper 'b' }}",),
    ("{{ raise_exception('custom failure: ' ~ 42) }}",),
    ("{% if messages|length > 1 %}{{ raise_exception('Conversation roles must alternate user/assistant') }}{% endif %}", MSGS),
    ("{{ x|nosuchfilter }}",),
    ("{{ x is nosuchtest }}",),
    ("{% if true %}unclosed",),
    ("{% for x in y %}unclosed",),
    ("{{ 1 + }}",),
    ("{{ 'a' + 1 }}",),
    ("{{ nope.attr }}",),
    ("{{ nope + 1 }}",),
    ("{{ nope() }}",),
    ("{% for x in 5 %}{% endfor %}",),
    ("{{ 1 / 0 }}",),
    ("{% endfor %}",),
    ("{{ range(1000000)|length }}",),
    ("{{ [1].append(2) }}",),
    ("{% set x = 1 %}{% set x.y = 2 %}",),
    ("{% for a, b in [[1, 2, 3]] %}{% endfor %}",),
    ("{% break %}",),
    ("{{ x|tojson }}",),
    ("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}",),
    ("{{ 'abc }}",),
    ("{# unclosed comment",),
    ("{{ (1 }}",),
    ("{% include 'other.jinja' %}",),
    ("{{ 1 < 'a' }}",),
]
