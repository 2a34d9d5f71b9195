#!/usr/bin/env python3
"""Lints deploy/Dockerfile.* (and the compose files) against the CMake build.

    lint_containers.py --deploy-dir deploy --build-dir BUILD --binary NAME=PATH ... [--helmrender BIN]
    lint_containers.py --selftest

Rules, per Dockerfile:
  * multi-stage; the last stage runs as a non-root USER;
  * every COPY --from=<stage that runs the CMake build> copies one of the project's binaries, from
    the path CMake builds it at (PATH relative to BUILD, below the image's `cmake -B` dir), and
    that stage's `cmake --build --target` list builds it;
  * the three services and the CLI are all copied;
  * ENTRYPOINT / CMD name a binary that is copied;
  * no `# syntax=` parser directive (BuildKit would pull that frontend image from Docker Hub, and
    a build without a registry fails before its first step);
  * tools/setup.sh runs with --build-only (the full set-up installs the test tools and runs npm in
    tests/, which the image's context at that step does not hold);
  * the runtime installs OpenBLAS's OpenMP build, not its pthreads build (the threading model of
    common/model/threading.h: one pool, OpenBLAS on LibTorch's OpenMP threads).
Per compose file (when --helmrender is given, to read YAML): the unmask services run and
health-check copied binaries.
Python 3 stdlib only.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

REQUIRED = {"unmask-loader", "unmask-executor", "unmask-scheduler", "unmask"}
# Where the binaries are planned to be built (relative to the build dir), used by --selftest and
# for binaries whose CMake target does not exist yet.
PLANNED = {
    "unmask-loader": "services/loader/unmask-loader",
    "unmask-executor": "services/executor/unmask-executor",
    "unmask-scheduler": "services/scheduler/unmask-scheduler",
    "unmask": "tools/unmask_cli/unmask",
    "unmask-engine": "tools/unmask_engine/unmask-engine",
}


def instructions(text):
    """(line number, INSTRUCTION, rest) with continuations joined and comments dropped."""
    out, buf, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if buf and s.startswith("#"):
            continue  # comment lines inside a continued instruction
        if not buf:
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        word, _, rest = buf.partition(" ")
        out.append((start, word.upper(), rest.strip()))
        buf = ""
    if buf:
        word, _, rest = buf.partition(" ")
        out.append((start, word.upper(), rest.strip()))
    return out


def exec_form(rest):
    """The argv of an ENTRYPOINT/CMD in JSON (exec) or shell form."""
    if rest.startswith("["):
        return json.loads(rest)
    return shlex.split(rest)


def lint_dockerfile(path, binaries):
    """Returns a list of problems. binaries: name -> path relative to the build dir."""
    errors = []
    name = os.path.basename(path)
    text = open(path).read()
    stages = []  # dicts: name, build_dir, targets
    copied = {}  # destination basename -> binary name
    final_user = None
    cmd = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("#"):
            break  # parser directives only come first
        if re.match(r"^#\s*syntax\s*=", line, re.I):
            errors.append("%s:%d: a `# syntax=` directive makes BuildKit pull a frontend image (no registry: the build fails); "
                          "the built-in frontend has RUN --mount" % (name, n))
    for line, ins, rest in instructions(text):
        where = "%s:%d" % (name, line)
        if ins == "FROM":
            m = re.match(r"^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
            stages.append({"name": (m.group(2) or str(len(stages))).lower(), "build_dir": None, "targets": set()})
            final_user = None
            cmd = []
        elif ins == "RUN" and stages:
            for m in re.finditer(r"\S*setup\.sh((?:\s+--?[\w-]+)*)", rest):
                if "--build-only" not in m.group(1).split():
                    errors.append("%s: %s runs without --build-only (the full set-up needs the tests' files)" % (where, m.group(0).split()[0]))
            if re.search(r"\blibopenblas0-pthread\b", rest):
                errors.append("%s: installs libopenblas0-pthread; the images use OpenBLAS's OpenMP build (libopenblas0-openmp)" % where)
            m = re.search(r"cmake\s+(?:[^&|;]*\s)?-B\s*(\S+)", rest)
            if m:
                stages[-1]["build_dir"] = m.group(1).rstrip("/")
            for m in re.finditer(r"cmake\s+--build\s+\S+((?:\s+--target(?:\s+[\w.+-]+)+)+)", rest):
                stages[-1]["targets"] |= set(re.findall(r"[\w.+-]+", m.group(1))) - {"target"}
        elif ins == "COPY":
            words = shlex.split(rest)
            opts = [w for w in words if w.startswith("--")]
            args = [w for w in words if not w.startswith("--")]
            src_stage = None
            for o in opts:
                if o.startswith("--from="):
                    src_stage = o.split("=", 1)[1].lower()
            if src_stage is None or len(args) < 2:
                continue
            stage = next((s for s in stages if s["name"] == src_stage), None)
            if stage is None:
                continue  # an external image
            sources, dest = args[:-1], args[-1]
            if stage["build_dir"] is None:
                for src in sources:
                    for s in stages:
                        if s["build_dir"] and (src + "/").startswith(s["build_dir"] + "/"):
                            errors.append("%s: copies %s from stage %s, but build outputs come from the build stage" % (where, src, src_stage))
                continue
            for src in sources:
                rel = os.path.relpath(src, stage["build_dir"])
                match = [b for b, p in binaries.items() if p == rel]
                if rel.startswith("..") or not match:
                    errors.append("%s: COPY --from=%s %s is not one of the project's binaries %s (as built at %s/...)"
                                  % (where, src_stage, src, sorted(binaries), stage["build_dir"]))
                    continue
                binary = match[0]
                if binary not in stage["targets"]:
                    errors.append("%s: %s is copied but stage %s does not build target %s" % (where, src, src_stage, binary))
                dest_name = os.path.basename(src) if dest.endswith("/") else os.path.basename(dest)
                if dest_name != binary:
                    errors.append("%s: %s is installed as %s; keep the binary's name" % (where, binary, dest_name))
                copied[dest_name] = binary
        elif ins == "USER":
            final_user = rest.split(":")[0]
        elif ins in ("ENTRYPOINT", "CMD"):
            cmd.append((where, ins, exec_form(rest)))
    if len(stages) < 2:
        errors.append("%s: not a multi-stage build" % name)
    if final_user in (None, "root", "0"):
        errors.append("%s: the runtime stage must switch to a non-root USER" % name)
    for b in sorted(REQUIRED - set(copied.values())):
        errors.append("%s: does not copy %s from the build" % (name, b))
    if not cmd:
        errors.append("%s: the runtime stage has no ENTRYPOINT or CMD" % name)
    for where, ins, argv in cmd:
        if argv and os.path.basename(argv[0]) not in copied:
            errors.append("%s: %s runs %r, which is not a binary copied into the image %s" % (where, ins, argv[0], sorted(copied)))
    return errors, copied


def lint_compose(path, helmrender, copied):
    errors = []
    p = subprocess.run([helmrender, "--yaml2json", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return ["%s: %s" % (os.path.basename(path), p.stderr.strip())]
    doc = json.loads(p.stdout)[0]
    for svc, spec in (doc.get("services") or {}).items():
        image = str(spec.get("image", ""))
        if "unmask" not in image:
            continue
        argv = spec.get("command")
        if argv and os.path.basename(argv[0]) not in copied:
            errors.append("%s: service %s runs %r, not a binary of the image" % (os.path.basename(path), svc, argv[0]))
        test = (spec.get("healthcheck") or {}).get("test")
        if test and test[0] == "CMD" and os.path.basename(test[1]) not in copied:
            errors.append("%s: service %s health-checks with %r, not a binary of the image" % (os.path.basename(path), svc, test[1]))
    return errors


def lint(deploy_dir, binaries, helmrender=None):
    errors, all_copied = [], None
    dockerfiles = sorted(f for f in os.listdir(deploy_dir) if re.match(r"^Dockerfile(\.[\w-]+)?$", f))
    if not dockerfiles:
        return ["no Dockerfile in %s" % deploy_dir]
    for f in dockerfiles:
        errs, copied = lint_dockerfile(os.path.join(deploy_dir, f), binaries)
        errors += errs
        all_copied = set(copied) if all_copied is None else all_copied & set(copied)
        print("%s: copies %s" % (f, ", ".join(sorted(copied))))
    if helmrender:
        for f in sorted(os.listdir(deploy_dir)):
            if re.match(r"^(docker-)?compose(\.[\w-]+)?\.ya?ml$", f):
                errors += lint_compose(os.path.join(deploy_dir, f), helmrender, all_copied or set())
    return errors


def selftest():
    """The lint must reject broken Dockerfiles (a lint that cannot fail proves nothing)."""
    good = """FROM debian:12 AS build
RUN cmake -S /src -B /build \\
 && cmake --build /build --target unmask-loader unmask-executor unmask-scheduler unmask
FROM debian:12-slim
COPY --from=build /build/services/loader/unmask-loader /usr/local/bin/unmask-loader
COPY --from=build /build/services/executor/unmask-executor /build/services/scheduler/unmask-scheduler /usr/local/bin/
COPY --from=build /build/tools/unmask_cli/unmask /usr/local/bin/unmask
USER 10001
CMD ["unmask", "--help"]
"""
    bad = {
        "copies a library": good.replace("FROM debian:12-slim\n", "FROM debian:12-slim\nCOPY --from=build /build/common/libx.so /usr/lib/\n"),
        "wrong build path": good.replace("/build/services/loader/unmask-loader", "/build/loader/unmask-loader"),
        "CMD names a missing binary": good.replace('CMD ["unmask", "--help"]', 'CMD ["unmask-gateway"]'),
        "ENTRYPOINT names a missing binary": good + "ENTRYPOINT /usr/local/bin/unmaskd --x\n",
        "runs as root": good.replace("USER 10001\n", ""),
        "target not built": good.replace(" unmask-scheduler unmask\n", " unmask\n"),
        "CLI missing": good.replace("COPY --from=build /build/tools/unmask_cli/unmask /usr/local/bin/unmask\n", "")
                           .replace('CMD ["unmask", "--help"]', 'CMD ["unmask-scheduler"]'),
        "single stage": good.split("FROM debian:12-slim\n")[0] + "USER 1\nCMD [\"unmask\"]\n",
        "renamed binary": good.replace("/usr/local/bin/unmask-loader\n", "/usr/local/bin/loader\n"),
        "syntax directive": "# syntax=docker/dockerfile:1\n" + good,
        "full set-up": good.replace("FROM debian:12 AS build\n", "FROM debian:12 AS build\nRUN /src/tools/setup.sh\n"),
        "pthreads OpenBLAS": good.replace("FROM debian:12-slim\n", "FROM debian:12-slim\nRUN apt-get install -y libtorch1.13 libopenblas0-pthread\n"),
    }
    good = good.replace("FROM debian:12 AS build\n", "# a comment\nFROM debian:12 AS build\nRUN /src/tools/setup.sh --build-only\n")
    good = good.replace("FROM debian:12-slim\n", "FROM debian:12-slim\nRUN apt-get install -y libopenblas0-openmp\n")
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "Dockerfile")
        open(path, "w").write(good)
        errs, _ = lint_dockerfile(path, PLANNED)
        if errs:
            print("FAIL: a good Dockerfile was rejected: %s" % errs)
            failures += 1
        for why, text in bad.items():
            open(path, "w").write(text)
            errs, _ = lint_dockerfile(path, PLANNED)
            if errs:
                print("caught %s: %s" % (why, errs[0]))
            else:
                print("FAIL: not caught: %s" % why)
                failures += 1
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deploy-dir")
    ap.add_argument("--build-dir", help="the CMake build dir the --binary paths are in")
    ap.add_argument("--binary", action="append", default=[], help="NAME=PATH of a built binary (TARGET_FILE)")
    ap.add_argument("--helmrender", help="helmrender binary, to read the compose files")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    if not a.deploy_dir or not a.build_dir:
        ap.error("--deploy-dir and --build-dir are required")
    binaries = dict(PLANNED)
    for b in a.binary:
        name, _, path = b.partition("=")
        binaries[name] = os.path.relpath(path, a.build_dir)
    errors = lint(a.deploy_dir, binaries, a.helmrender)
    for e in errors:
        print("ERROR " + e, file=sys.stderr)
    print("%d problem(s)" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
