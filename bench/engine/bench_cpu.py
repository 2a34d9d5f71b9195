#!/usr/bin/python3
"""The CPU table: unmask's defaults against the alternatives, on this CPU, side by side.

On models/unmask-kjv with `unmask-engine generate` (the demo's two jobs: a 64-token continuation
in one 32-token block... two blocks, and the 64-token chat answer in 8-token blocks), every
configuration runs in turn, round after round, and each run reports its own generation time
(loading excluded); the figures are medians over the rounds. Configurations: the defaults (no
flags), every thread count from 1 to the cores, --precision fp32 and bf16, and each few-row kernel path
this CPU runs (--gemm avx512 / avx2 / blas). With --services, the demo itself: loader, executor
and scheduler started as tools/demo.sh starts them, and each `unmask generate` of the demo timed
from the CLI's start to its exit. With --official, reference mode against the official loop
(bench_official.py's shape and rules).

With --max-isa avx2 (or avx512), this CPU runs as the narrower CPU it is not, as far as software
can make it: unmask by UNMASK_MAX_CPU_ISA, ATen by ATEN_CPU_CAPABILITY, OpenBLAS by
OPENBLAS_CORETYPE, for unmask and the official loop alike. The instructions are the narrower
CPU's; the cores, caches and memory are still this one's, so such a row is a stand-in until that
CPU itself is measured, and says so. Not oneDNN: ATen asks the CPU itself whether oneDNN's bf16
products run, and with ONEDNN_MAX_CPU_ISA below that they fail, which no real CPU does; so a
stand-in row has no bf16 figure (on the narrower CPU bf16 is emulated, and auto is fp32).

Writes this CPU's row into --doc's bench:cpu-table section (rows of other CPUs are kept) and the
details into bench:cpu-details-<cpu>.

  bench/engine/bench_cpu.py [--build build] [--rounds 5] [--services] [--official] [--max-isa avx2]
                            [--doc docs/benchmarks.md]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_official  # noqa: E402

ROOT = bench_official.ROOT
FLAGS_THAT_MATTER = ["avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16"]
JOB = ["--gen-length", "64", "--block-length", "8", "--steps", "64"]
CHAT_ENGINE = ["--chat", "--prompt", "What does John 3:16 say?", *JOB]  # unmask-engine: --chat is a switch
CHAT = ["--chat", "What does John 3:16 say?", *JOB]  # unmask (the CLI): --chat takes the text
CONTINUATION = ["--prompt", "And God said unto Moses,", "--gen-length", "64", "--block-length", "32", "--steps", "64"]


# What each --max-isa sets, for every process the benchmark starts, and the flags that remain.
MAX_ISA = {
    "avx2": ("an AVX2-only CPU", {"UNMASK_MAX_CPU_ISA": "avx2", "ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}, ["avx2", "fma"]),
    "avx512": ("an AVX-512 CPU without bf16 instructions", {"UNMASK_MAX_CPU_ISA": "avx512", "ATEN_CPU_CAPABILITY": "avx512", "OPENBLAS_CORETYPE": "SkylakeX"}, ["avx2", "fma", "avx512f"]),
}


def cpu():
    with open("/proc/cpuinfo") as f:
        text = f.read()
    name = re.search(r"model name\s*:\s*(.*)", text)
    family, model = re.search(r"cpu family\s*:\s*(\d+)", text), re.search(r"\nmodel\s*:\s*(\d+)", text)
    flags = set(re.search(r"flags\s*:\s*(.*)", text).group(1).split())
    full = (name.group(1).strip() if name else "unknown CPU")
    if family and model:  # a hypervisor may hide the model name's generation ("AMD EPYC")
        full += f" (family {family.group(1)}, model {model.group(1)})"
    return full, [f for f in FLAGS_THAT_MATTER if f in flags]


def engine(build, model, job, extra, env=None):
    cmd = [os.path.join(build, "tools", "unmask_engine", "unmask-engine"), "generate", "--model", model, *job, "--json", *extra]
    if env is None:
        return bench_official.run_json(cmd)
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return json.loads(r.stdout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_jobs(build, rounds, executor_flags=(), env=None):
    """Seconds per `unmask generate` of the demo, through the services started as demo.sh starts them."""
    ports = {k: free_port() for k in ("loader", "executor", "scheduler")}
    bins = {"loader": "services/loader/unmask-loader", "executor": "services/executor/unmask-executor",
            "scheduler": "services/scheduler/unmask-scheduler"}
    args = {
        "loader": ["--model-root", os.path.join(ROOT, "models")],
        "executor": ["--loader", f"127.0.0.1:{ports['loader']}", "--model", "unmask-kjv", *executor_flags],
        "scheduler": ["--executors", f"127.0.0.1:{ports['executor']}", "--model-root", os.path.join(ROOT, "models")],
    }
    procs = []
    cli = os.path.join(build, "tools", "unmask_cli", "unmask")
    try:
        for who in ("loader", "executor", "scheduler"):
            procs.append(subprocess.Popen([os.path.join(build, bins[who]), "--listen", f"127.0.0.1:{ports[who]}",
                                           "--metrics-listen", "127.0.0.1:0", *args[who]],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          env={**os.environ, **(env or {})}))
            for _ in range(300):
                if subprocess.run([cli, "health", "--addr", f"127.0.0.1:{ports[who]}"], capture_output=True).returncode == 0:
                    break
                time.sleep(0.2)
        sched = ["--scheduler", f"127.0.0.1:{ports['scheduler']}"]
        for _ in range(50):
            if "unmask-kjv" in subprocess.run([cli, *sched, "models"], capture_output=True, text=True).stdout:
                break
            time.sleep(0.2)
        times = {"continuation": [], "chat": []}
        for _ in range(rounds + 1):  # the first round warms up
            for name, job in (("continuation", CONTINUATION), ("chat", CHAT)):
                start = time.monotonic()
                r = subprocess.run([cli, *sched, "generate", "--model", "unmask-kjv", *job, "--json"], capture_output=True)
                if r.returncode != 0:
                    sys.exit(f"demo job {name} failed: {r.stderr.decode()[-1000:]}")
                times[name].append(time.monotonic() - start)
        return {k: statistics.median(v[1:]) for k, v in times.items()}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


def baseline_commit(build):
    r = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(build)), "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def update_table(doc, row_key, row):
    begin, end = "<!-- bench:cpu-table -->", "<!-- /bench:cpu-table -->"
    with open(doc) as f:
        text = f.read()
    header = ("| CPU (flags that matter) | chat job, defaults | best thread setting | defaults / best | fp32 / bf16 "
              "| kernel paths at fp32 (chat job) | demo jobs through the services | reference / official |\n"
              "|---|---|---|---|---|---|---|---|\n")
    rows = []
    if begin in text and end in text:
        body = text[text.index(begin) + len(begin):text.index(end)]
        rows = [l for l in body.splitlines() if l.startswith("| ") and not l.startswith("| CPU") and not l.startswith("|---")]
    rows = [r for r in rows if not r.startswith(f"| {row_key} ")] + [row]
    bench_official.replace_section(doc, "cpu-table", header + "\n".join(rows) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--services", action="store_true", help="also time the demo's jobs through the services")
    ap.add_argument("--official", action="store_true", help="also reference mode against the official loop")
    ap.add_argument("--baseline", help="a build of an earlier commit: its defaults and its demo, in the same rounds")
    ap.add_argument("--baseline-demo-flags", default="--precision bf16", help="the executor flags its demo used")
    ap.add_argument("--baseline-blas", help="a folder with the BLAS the baseline ran with (LD_LIBRARY_PATH), e.g. "
                                            "/usr/lib/x86_64-linux-gnu/openblas-pthread before issue 26")
    ap.add_argument("--max-isa", choices=sorted(MAX_ISA), help="run as a CPU with nothing above this (a stand-in row)")
    ap.add_argument("--doc")
    a = ap.parse_args()
    model = os.path.join(ROOT, "models", "unmask-kjv")
    name, flags = cpu()
    host_flags = flags
    if a.max_isa:
        label, env, kept = MAX_ISA[a.max_isa]
        if not set(kept) <= set(flags):
            sys.exit(f"--max-isa {a.max_isa}: this CPU lacks {sorted(set(kept) - set(flags))}")
        os.environ.update(env)  # every process started from here on: unmask's and the official loop's
        flags = kept
        name += f", run as {label} (--max-isa {a.max_isa}: a stand-in)"
    cores = os.cpu_count()
    configs = {"defaults": []}
    for t in range(1, cores + 1):
        configs[f"--threads {t}"] = ["--threads", str(t)]
    configs["--precision fp32"] = ["--precision", "fp32"]
    if not a.max_isa:  # a stand-in's bf16 would run on this CPU's oneDNN (see above)
        configs["--precision bf16"] = ["--precision", "bf16"]
    paths = [p for p, need in (("avx512", "avx512f"), ("avx2", "avx2")) if need in flags and "fma" in flags] + ["blas"]
    for p in paths:  # the kernels compute float32 products: compared at fp32
        configs[f"--precision fp32 --gemm {p}"] = ["--precision", "fp32", "--gemm", p]

    builds = {c: a.build for c in configs}
    if a.baseline:
        configs["baseline: its defaults"] = []
        builds["baseline: its defaults"] = a.baseline
    seconds = {job: {c: [] for c in configs} for job in ("chat", "continuation")}
    setup = {}
    for r in range(a.rounds + 1):  # round 0 warms the caches up and is not counted
        for job, args in (("chat", CHAT_ENGINE), ("continuation", CONTINUATION)):
            for c, extra in configs.items():
                base_env = {"LD_LIBRARY_PATH": a.baseline_blas} if c.startswith("baseline") and a.baseline_blas else None
                out = engine(builds[c], model, args, extra, base_env)
                if c == "defaults":
                    setup = out.get("compute", {})
                if r > 0:
                    seconds[job][c].append(out["seconds"])
        print(f"round {r} done", file=sys.stderr)
    med = {job: {c: statistics.median(v) for c, v in s.items()} for job, s in seconds.items()}

    chat = med["chat"]
    threads = {c: v for c, v in chat.items() if c.startswith("--threads")}
    best = min(threads, key=threads.get)
    demo = demo_jobs(a.build, a.rounds) if a.services else None
    baseline_demo = (demo_jobs(a.baseline, a.rounds, a.baseline_demo_flags.split(),
                               {"LD_LIBRARY_PATH": a.baseline_blas} if a.baseline_blas else None)
                     if a.services and a.baseline else None)
    official = None
    if a.official:
        official = bench_official.compare(a.build, 64, max(3, a.rounds // 2))

    detail = [f"Configurations in turn, {a.rounds} rounds after a warm-up round; medians of each run's own generation "
              f"time (loading excluded), unmask-kjv. Defaults chose: precision {setup.get('precision')} "
              f"({setup.get('precision_why')}); {setup.get('threads')}; gemm {setup.get('gemm')}.\n",
              "| configuration | chat job (64 tokens, 8-token blocks) s | continuation (64 tokens, 32-token blocks) s |",
              "|---|---|---|"]
    for c in configs:
        detail.append(f"| {c} | {med['chat'][c]:.3f} | {med['continuation'][c]:.3f} |")
    if demo:
        detail.append(f"\nThe demo through the services (tools/demo.sh's flags; CLI start to exit, median of {a.rounds}): "
                      f"continuation {demo['continuation']:.2f} s, chat {demo['chat']:.2f} s.")
    if baseline_demo:
        detail.append(f"The baseline's demo (its executor flags: `{a.baseline_demo_flags}`): continuation "
                      f"{baseline_demo['continuation']:.2f} s, chat {baseline_demo['chat']:.2f} s.")
    if a.baseline:
        detail.append(f"\nBaseline: `{a.baseline}`, a build of commit {baseline_commit(a.baseline)}"
                      + (f", with the BLAS in `{a.baseline_blas}`" if a.baseline_blas else "") + ".")
    if official:
        detail.append(f"\nReference mode / official generate() at defaults (bench_official.py's shape, gen 64): "
                      f"{official['ratio']:.2f}x (pairs {official['pairs']}, min-max {official['min']:.2f}-{official['max']:.2f}), "
                      "identical ids in every pair.")
    if a.max_isa:
        detail.append(f"\nRun as {MAX_ISA[a.max_isa][0]}: every process had "
                      + ", ".join(f"`{k}={v}`" for k, v in MAX_ISA[a.max_isa][1].items())
                      + "; the instructions are that CPU's, the cores, caches and memory this one's.")
    detail.append(f"\nMachine: {bench_official.machine()}; flags: {' '.join(host_flags) or 'none of ' + ' '.join(FLAGS_THAT_MATTER)}. "
                  f"Command: `bench/engine/bench_cpu.py --rounds {a.rounds}" + (" --services" if a.services else "")
                  + (" --official" if a.official else "")
                  + (f" --max-isa {a.max_isa}" if a.max_isa else "") + (f" --baseline {a.baseline}" if a.baseline else "")
                  + (f" --baseline-blas {a.baseline_blas}" if a.baseline_blas else "") + (f" --doc {os.path.relpath(a.doc, ROOT)}" if a.doc else "") + "`.\n")
    body = "\n".join(detail) + "\n"
    print(body)

    key = f"{name} ({' '.join(flags)})"
    kernels = ", ".join(f"{c.split()[-1]} {med['chat'][c]:.2f} s" for c in configs if "--gemm" in c)
    bf16 = f"{chat['--precision bf16']:.2f} s" if "--precision bf16" in chat else "not run (a stand-in)"
    row = (f"| {key} | {chat['defaults']:.2f} s | {best.split()[-1]} thread(s), {threads[best]:.2f} s | "
           f"{chat['defaults'] / threads[best]:.2f} | {chat['--precision fp32']:.2f} s / {bf16} | {kernels} | "
           + (f"continuation {demo['continuation']:.2f} s, chat {demo['chat']:.2f} s" if demo else "not run") + " | "
           + (f"{official['ratio']:.2f}x" if official else "not run") + " |")
    print(row)
    if a.doc:
        update_table(a.doc, key, row)
        slug = re.sub(r"[^a-z0-9]+", "-", (name + " " + " ".join(flags)).lower()).strip("-")
        section = f"cpu-details-{slug}"
        with open(a.doc) as f:
            text = f.read()
        if f"<!-- bench:{section} -->" not in text:  # a new CPU: its details go after the table
            end = "<!-- /bench:cpu-table -->"
            text = text.replace(end, f"{end}\n\n<!-- bench:{section} -->\n<!-- /bench:{section} -->", 1)
            with open(a.doc, "w") as f:
                f.write(text)
        bench_official.replace_section(a.doc, section, f"**{key}**\n\n" + body)


if __name__ == "__main__":
    main()
