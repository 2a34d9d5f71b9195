#!/usr/bin/env python3
"""What flags the unmask binaries accept (read from their CLI11 --help) and the check of one argv.

Used by check_flags.py. Python 3 stdlib only.
"""
import difflib
import os
import re
import shlex
import subprocess

SERVICES = ("unmask-loader", "unmask-executor", "unmask-scheduler")
CLI = "unmask"
BINARIES = SERVICES + (CLI, "unmask-engine")

# An option line of CLI11's help: "  -h,--help   ...", "  --listen TEXT=0.0.0.0:50052 ...",
# "  --model-root TEXT ... REQUIRED", "  --max-batch,--max-concurrent-jobs INT=8".
OPTION_LINE = re.compile(r"^  (-{1,2}[A-Za-z0-9][\w.-]*(?:,-{1,2}[A-Za-z0-9][\w.-]*)*)(.*)$")
TYPE_WORD = re.compile(r"^ [A-Z][A-Z0-9_]*\b")
SUBCOMMAND_LINE = re.compile(r"^  ([a-z][\w-]*)(?:\s|$)")


class Option:
    def __init__(self, names, takes_value, repeatable):
        self.names = names  # every spelling, with dashes: ["--max-batch", "--max-concurrent-jobs"]
        self.takes_value = takes_value
        self.repeatable = repeatable


class Spec:
    """The options (and subcommands) of one CLI11 app, parsed from its --help."""

    def __init__(self, help_text):
        self.options = {}  # spelling -> Option
        self.subcommands = []
        section = None
        for line in help_text.splitlines():
            if re.match(r"^\S.*:$", line):
                section = line[:-1].strip().lower()
                continue
            if section == "subcommands":
                m = SUBCOMMAND_LINE.match(line)
                if m:
                    self.subcommands.append(m.group(1))
                continue
            if section == "positionals":
                continue
            m = OPTION_LINE.match(line)
            if not m:
                continue
            rest = m.group(2)
            takes_value = bool(TYPE_WORD.match(rest))  # a flag's description is padded, not one space away
            repeatable = takes_value and bool(re.match(r"^ \S+ \.\.\.", rest))
            opt = Option(m.group(1).split(","), takes_value, repeatable)
            for n in opt.names:
                self.options[n] = opt
        if not self.options:
            raise ValueError("no options found in the help text:\n" + help_text)

    def long_names(self):
        return sorted(n for n in self.options if n.startswith("--"))


def run_help(path, *sub):
    p = subprocess.run([path] + list(sub) + ["--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30, env={k: v for k, v in os.environ.items() if not k.startswith("UNMASK_")})
    if p.returncode != 0:
        raise RuntimeError("%s %s --help exited %d:\n%s" % (path, " ".join(sub), p.returncode, p.stdout))
    return p.stdout


def load_specs(paths):
    """paths: binary name -> built file. Returns name -> (top Spec, {subcommand: Spec}); a nested
    subcommand (`unmask keys hash`) is the key "keys hash"."""
    specs = {}
    for name, path in paths.items():
        if not os.access(path, os.X_OK):
            raise RuntimeError("%s is not built at %s (build the %s target)" % (name, path, name))
        top = Spec(run_help(path))
        subs = {s: Spec(run_help(path, s)) for s in top.subcommands}
        for s, spec in list(subs.items()):
            for nested in spec.subcommands:
                subs["%s %s" % (s, nested)] = Spec(run_help(path, s, nested))
        specs[name] = (top, subs)
    return specs


def _unknown(flag, spec, binary):
    near = difflib.get_close_matches(flag, spec.long_names(), n=2)
    return "%s does not accept %s%s" % (binary, flag, " (did you mean %s?)" % " or ".join(near) if near else "")


def check_argv(argv, specs):
    """Problems with argv (argv[0] names one of specs' binaries): unknown flags, flags of the CLI given
    on the wrong side of its subcommand, unknown subcommands, a value missing, a one-value option
    given twice. Returns a list of strings, each naming the flag."""
    binary = os.path.basename(argv[0])
    top, subs = specs[binary]
    app, app_name = top, binary
    problems = []
    seen = {}  # Option -> spellings given
    i = 1
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--":
            break
        if a.startswith("--") or re.match(r"^-[A-Za-z]", a):
            name, eq, _ = a.partition("=")
            if not a.startswith("--"):
                name, eq = a[:2], ("=" if len(a) > 2 else "")  # -xVALUE
            opt = app.options.get(name)
            if opt is None:
                if app is not top and name in top.options:
                    problems.append("%s is an option of %s itself: it must come before the subcommand %s "
                                    "(CLI11 does not pass it through)" % (name, binary, app_name.split()[-1]))
                else:
                    problems.append(_unknown(name, app, app_name))
                continue
            if opt.takes_value and not eq:
                if i >= len(argv) or argv[i].startswith("--"):
                    problems.append("%s of %s needs a value" % (name, app_name))
                    continue
                i += 1
                # A repeatable option takes every following word up to the next option or subcommand.
                while opt.repeatable and i < len(argv) and not argv[i].startswith("-") \
                        and not (app is top and argv[i] in subs):
                    i += 1
            seen.setdefault(opt, []).append(name)
            continue
        if app is top and top.subcommands:
            if a not in subs:
                problems.append("%s has no subcommand %r (it has %s)" % (binary, a, ", ".join(top.subcommands)))
                break
            app, app_name = subs[a], "%s %s" % (binary, a)
            continue
        if app is not top and app.subcommands:
            # A subcommand of a subcommand (`unmask keys hash`).
            nested = "%s %s" % (app_name.split(" ", 1)[1], a)
            if nested not in subs:
                problems.append("%s has no subcommand %r (it has %s)" % (app_name, a, ", ".join(app.subcommands)))
                break
            app, app_name = subs[nested], "%s %s" % (binary, nested)
            continue
    for opt, given in seen.items():
        if len(given) > 1 and opt.takes_value and not opt.repeatable:
            problems.append("%s takes one value but is given %d times (as %s; %s are one option)"
                            % (given[0], len(given), ", ".join(given), ",".join(opt.names)))
    return problems


# --------------------------------------------------------------------------------------------
# Finding the invocations of a binary in a command line or a shell script

SHELLS = {"sh", "bash", "dash", "ash", "zsh"}
WRAPPERS = {"env", "exec", "tini", "dumb-init", "nohup", "--", "command"}
RESERVED = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time"}


def is_binary(word):
    return os.path.basename(word) in BINARIES


def argv_invocations(argv):
    """The unmask invocations an exec-form argv makes: itself, behind wrappers (env, tini --,
    exec), or inside `sh -c SCRIPT`. Returns argvs whose argv[0] is a binary."""
    argv = list(argv)
    while argv and (os.path.basename(argv[0]) in WRAPPERS or re.match(r"^[A-Za-z_]\w*=", argv[0])
                    or (argv[0].startswith("-") and os.path.basename(argv[0]) not in BINARIES)):
        argv.pop(0)
    if not argv:
        return []
    if os.path.basename(argv[0]) in SHELLS:
        for j, a in enumerate(argv[1:], 1):
            if a.startswith("-") and "c" in a[1:] and not a.startswith("--") and j + 1 < len(argv):
                return script_invocations(argv[j + 1])
        return []
    return [argv] if is_binary(argv[0]) else []


def script_invocations(script):
    """The unmask invocations of a shell script: every simple command whose command word (after
    assignments, wrappers and reserved words) is a binary. Redirections are dropped."""
    script = re.sub(r"\\\n", " ", script).replace("\n", " ; ")
    lex = shlex.shlex(script, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        tokens = list(lex)
    except ValueError:  # unbalanced quotes: read it word by word
        tokens = script.split()
    commands, cur, skip = [], [], False
    for t in tokens:
        if skip:
            skip = False
            continue
        if t and all(ch in "();<>|&" for ch in t):
            if "<" in t or ">" in t:
                if cur and cur[-1].isdigit():
                    cur.pop()
                skip = True  # the redirection's target
                continue
            commands.append(cur)
            cur = []
            continue
        if not cur and t in RESERVED:
            continue
        cur.append(t)
    commands.append(cur)
    out = []
    for c in commands:
        out += argv_invocations(c)
    return out


INVOCATION = re.compile(r"(?:^|[\s;&|(`])((?:/usr/local/bin/)?unmask(?:-loader|-executor|-scheduler|-engine)?)(?=\s)")


def words_all(text):
    try:
        return shlex.split(text, comments=False)
    except ValueError:
        return text.split()


def text_invocations(text, subcommands):
    """Invocations in prose or a shell snippet (NOTES.txt, a README's code, a comment): a binary's
    name followed by a flag (or, for the CLI, a subcommand), to the end of its logical line.
    Returns (line number, argv) pairs."""
    out = []
    logical, buf, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        if not buf:
            start = n
        else:
            line = re.sub(r"^\s*#?", " ", line)  # a continued comment line
        if line.endswith("\\"):
            buf += line[:-1]
            continue
        logical.append((start, buf + line))
        buf = ""
    if buf:
        logical.append((start, buf))
    for n, line in logical:
        for m in INVOCATION.finditer(line):
            rest = line[m.end(1):]
            before = re.split(r"[;&|(`]", line[:m.start(1)])[-1].split()
            if before and before[0] == "helm":
                continue  # `helm install unmask ...`: a release named unmask
            if before and before[-1] in ("-p", "--project-name"):
                continue  # `docker compose -p unmask -f ...`: a compose project named unmask
            words = []
            for w in words_all(rest):
                if w in (";", "&&", "||", "|", "#"):
                    break
                # A closing backtick ends the code span, whatever follows it ("new`).").
                code = w.split("`")[0]
                if code:
                    words.append(code)
                if "`" in w:
                    break
            if not words:
                continue
            first = words[0]
            if first.startswith("-") or (os.path.basename(m.group(1)) == CLI and first in subcommands):
                out.append((n, [m.group(1)] + words))
    return out
