#!/usr/bin/env python3
"""Holds the size limits of services/ and common/: no source file over 500 lines, no function
over 80 lines (issue 27). A function is a brace block at namespace or class level whose opening
line ends a signature (a ')' before the '{', or a constructor's initializer list); lambdas and
blocks inside a function count as part of it. Comments and string literals are ignored.

  tools/checks/code_sizes.py [ROOT]      prints every violation, exits 1 when there is one
"""
import os
import re
import sys

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
FOLDERS = ("services", "common")


def strip(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return re.sub(r"//.*", "", line)


def functions(lines):
    """Yields (first line, length) of each top-level function body."""
    stack = []  # kinds of the open braces: "func", "scope" (namespace/class/enum), "block"
    start = 0
    in_comment = False
    for i, raw in enumerate(lines):
        line = raw
        if in_comment:
            if "*/" not in line:
                continue
            line = line.split("*/", 1)[1]
            in_comment = False
        line = re.sub(r"/\*.*?\*/", "", line)
        if "/*" in line:
            line, in_comment = line.split("/*", 1)[0], True
        line = strip(line)
        for pos, ch in enumerate(line):
            if ch == "{":
                head = " ".join(l.strip() for l in lines[max(0, i - 4):i]) + " " + line[:pos]
                if "func" in stack:
                    kind = "block"
                elif re.search(r"\b(namespace|class|struct|enum|union)\b[^;(){}]*$", head) or re.search(r'extern\s+""\s*$', head):
                    kind = "scope"
                elif re.search(r"(\)|\bconst|\boverride|\bnoexcept|\bfinal|->\s*[\w:<>,\s*&]+)\s*$", line[:pos]) or \
                        re.search(r"\)\s*:\s*[^;]*$", head) or (line[:pos].strip() == "" and head.rstrip().endswith(")")):
                    kind = "func"
                    start = i
                else:
                    kind = "block"
                stack.append(kind)
            elif ch == "}" and stack:
                kind = stack.pop()
                if kind == "func" and "func" not in stack:
                    yield start + 1, i - start + 1


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if not name.endswith((".cc", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
                if len(lines) - 1 > MAX_FILE_LINES:
                    problems.append(f"{rel}: {len(lines) - 1} lines (at most {MAX_FILE_LINES})")
                for first, length in functions(lines):
                    if length > MAX_FUNCTION_LINES:
                        problems.append(f"{rel}:{first}: a function of {length} lines (at most {MAX_FUNCTION_LINES})")
    for p in problems:
        print(p)
    if not problems:
        print(f"code sizes: every file of {', '.join(FOLDERS)} within {MAX_FILE_LINES} lines, every function within {MAX_FUNCTION_LINES}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
