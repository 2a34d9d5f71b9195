"""The report of bench_serving.py: the overload verdict, the markdown tables with the machine, the
commit and the command, the checks that fail the run, and the bench:serving section of the doc."""
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engine"))
import bench_official  # noqa: E402  (replace_section: the marker convention of docs/benchmarks.md)
import serving_load as load  # noqa: E402

SECTION = "serving"
FLAGS_THAT_MATTER = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
# The overload's p99 "stays bounded" when the requests sent in the last third of the window see a
# p99 at most this many times that of the first third: a queue that only grows gives ~3x (a wait
# proportional to the arrival time), a bounded one ~1x once it is full; a third holds a few dozen
# requests at this machine's rates, so its p99 is nearly its maximum and 1.5x was seen by chance.
P99_GROWTH_LIMIT = 2.0


@dataclass
class Run:
    protocol: str
    mode: str  # closed, open, overload
    setting: str  # "c=4", "3.10 req/s (1x)"
    outcomes: List[load.Outcome]
    wall_s: float
    figures: load.Figures
    offered: Optional[float] = None  # req/s of an open-loop run
    differ: int = 0  # answers whose text differs from the same request alone
    compared: int = 0


@dataclass
class Overload:
    run: Run
    seconds: float
    answers_ok: bool  # every answer a result or a 429
    p99_first: Optional[float]
    p99_last: Optional[float]
    bounded: bool
    accepted: int
    lost: Dict[str, str] = field(default_factory=dict)  # job id -> its state in the job store

    @property
    def passed(self) -> bool:
        return self.answers_ok and self.bounded and not self.lost


def overload_verdict(run: Run, seconds: float, states: Dict[str, str]) -> Overload:
    """The three checks of an overload run; `states`: the job store's state of each accepted job
    the client got no result for."""
    t0 = min((o.t_send for o in run.outcomes), default=0.0)
    first = [o.t_end - o.t_send for o in run.outcomes if o.ok and o.t_send - t0 < seconds / 3]
    last = [o.t_end - o.t_send for o in run.outcomes if o.ok and o.t_send - t0 >= 2 * seconds / 3]
    p99_first, p99_last = load.percentile(first, 99), load.percentile(last, 99)
    bounded = p99_first is not None and p99_last is not None and p99_last <= P99_GROWTH_LIMIT * p99_first
    accepted = [o for o in run.outcomes if o.job_id]
    lost = {o.job_id: states.get(o.job_id, "not asked") for o in accepted if not o.ok}
    answers_ok = all(o.kind in ("ok", "429") for o in run.outcomes)
    return Overload(run, seconds, answers_ok, p99_first, p99_last, bounded, len(accepted), lost)


def secs(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.2f}"


def machine() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    name = re.search(r"Model name:\s*(.*)", out)
    flags = set((re.search(r"Flags:\s*(.*)", out) or re.search("()", "")).group(1).split())
    have = [f for f in FLAGS_THAT_MATTER if f in flags]
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{name.group(1).strip() if name else 'unknown CPU'}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, "
            f"Linux {platform.release()}; CPU flags: {' '.join(have) or 'none of ' + ' '.join(FLAGS_THAT_MATTER)}")


def commit(root: str) -> str:
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True).stdout

    sha, changed = git("rev-parse", "--short", "HEAD").strip(), git("diff", "--name-only", "HEAD").split()
    if not sha:
        return "unknown commit"
    if not changed:
        return f"commit {sha}"
    dirs = sorted({"/".join(p.split("/")[:-1][:2]) or p for p in changed})
    return f"commit {sha} with uncommitted changes in {', '.join(dirs)}"


def _run_row(r: Run, first_tps: Dict[str, float]) -> str:
    f = r.figures
    e = f.errors
    rel = ""
    if r.mode == "closed":
        base = first_tps.get(r.protocol)
        rel = f" | {f.tokens_per_s / base:.2f}x" if base else " | -"
    setting = r.setting[2:] if r.mode == "closed" else r.setting
    return (f"| {r.protocol} | {setting} | {f.requests} | {f.ok} | {e['429']} | {e['5xx']} | {e['timeout']} | "
            f"{e['other']} | {f.tokens_per_s:.1f}{rel} | {f.requests_per_s:.2f} | {secs(f.ttft_p50)} / {secs(f.ttft_p99)} | "
            f"{secs(f.latency_p50)} / {secs(f.latency_p99)} | {r.differ} of {r.compared} |")


def _tables(runs: List[Run], overloads: List[Overload]) -> List[str]:
    lines = []
    figures = ("429 | 5xx | timeout | other | tokens/s{} | req/s | TTFT p50 / p99 s | latency p50 / p99 s | "
               "differ from alone |")
    closed = [r for r in runs if r.mode == "closed"]
    if closed:
        first_tps = {r.protocol: r.figures.tokens_per_s for r in closed if r.setting == "c=1"}
        lines += ["**Closed loop** (each client sends its next request when its last one ended):", "",
                  "| protocol | clients | requests | ok | " + figures.format(" | tokens/s vs 1 client"), "|---" * 14 + "|"]
        lines += [_run_row(r, first_tps) for r in closed] + [""]
    opened = [r for r in runs if r.mode == "open"]
    if opened:
        lines += ["**Open loop** (Poisson arrivals; requests still running at the end are waited for):", "",
                  "| protocol | offered | requests | ok | " + figures.format(""), "|---" * 13 + "|"]
        lines += [_run_row(r, {}) for r in opened] + [""]
    if overloads:
        lines += ["**Overload** (Poisson arrivals at the given multiple of the capacity):", "",
                  "| protocol | offered | seconds | requests | results | 429 | 5xx / timeout / other | p99 of accepted s, "
                  "first / last third | accepted without a result | answers: results or 429 | p99 bounded | none lost |",
                  "|---" * 12 + "|"]
        for v in overloads:
            f, e = v.run.figures, v.run.figures.errors
            lost = ", ".join(f"{j[:8]}: {s}" for j, s in list(v.lost.items())[:4]) or "0"
            lines.append(f"| {v.run.protocol} | {v.run.setting} | {v.seconds:g} | {f.requests} | {f.ok} | {e['429']} | "
                         f"{e['5xx']} / {e['timeout']} / {e['other']} | {secs(v.p99_first)} / {secs(v.p99_last)} | "
                         f"{len(v.lost)} of {v.accepted} | {_ok(v.answers_ok)} | {_ok(v.bounded)} | {_ok(not v.lost)} |")
            if v.lost:
                lines.append(f"\nAccepted without a result ({v.run.protocol}), job store states: {lost}")
        lines.append("")
    return lines


def _ok(b: bool) -> str:
    return "pass" if b else "**FAIL**"


def _goal(runs: List[Run]) -> List[str]:
    """The issue's goal: tokens/s at 8 clients at least 3x 1 client; the same text alone and concurrent."""
    out = []
    for protocol in sorted({r.protocol for r in runs}):
        tps = {r.setting: r.figures.tokens_per_s for r in runs if r.protocol == protocol and r.mode == "closed"}
        if "c=1" in tps and "c=8" in tps and tps["c=1"] > 0:
            x = tps["c=8"] / tps["c=1"]
            out.append(f"{protocol} {x:.2f}x ({'met' if x >= 3 else 'not met'})")
    differ, compared = sum(r.differ for r in runs), sum(r.compared for r in runs)
    lines = []
    if out:
        lines.append("Goal, tokens/s at 8 clients at least 3x 1 client: " + ", ".join(out) + ".")
    lines.append(f"Same text alone and concurrent: {differ} of {compared} answers differ from the same request alone "
                 f"({'met' if differ == 0 else 'not met'}).")
    return lines


def compare(runs: List[Run], alone: Dict) -> None:
    """Sets each run's differ/compared against the texts alone ((protocol, key) -> text)."""
    for r in runs:
        r.compared = sum(1 for o in r.outcomes if o.ok and (o.protocol, o.request.key) in alone)
        bad = load.mismatches(r.outcomes, alone)
        r.differ = len(bad)
        for o in bad[:2]:
            print(f"differs: {r.protocol} {r.mode} {r.setting} prompt {o.request.prompt} max_tokens "
                  f"{o.request.max_tokens}:\n  alone:      {alone[(o.protocol, o.request.key)]!r}\n"
                  f"  concurrent: {o.text!r}", file=sys.stderr)


def _workload(a, alone_extra: int, client_cpu) -> str:
    kinds = sorted({k for k, _ in load.PROMPTS})
    counts = ", ".join(f"{sum(1 for k, _ in load.PROMPTS if k == x)} {x}" for x in kinds)
    words = [len(p.split()) for _, p in load.PROMPTS]
    cpu_s, wall_s = client_cpu
    return " ".join([
        f"Workload: {len(load.PROMPTS)} prompts ({counts}: KJV continuations and chat questions of {min(words)} to",
        f"{max(words)} words) drawn with seed {a.seed}, max_tokens from {{{', '.join(map(str, a.max_tokens))}}},",
        f"sampler {a.sampler}, temperature {a.temperature:g}, chat in {load.CHAT_BLOCK_LENGTH}-token blocks, the other",
        "fields at their defaults (continuations: block_length the largest divisor of max_tokens up to 32; steps =",
        "max_tokens). HTTP: streamed `/v1/completions` and `/v1/chat/completions`, a new connection per request;",
        "gRPC: `Scheduler.Generate` through clients/python, one channel. TTFT: from sending to the first streamed",
        "chunk carrying text (HTTP) or the first step event with tokens (gRPC); latency: to the end of the stream;",
        "tokens/s: generated tokens of the answered requests (the answer's tokens before the first end-of-text or",
        "end-of-turn, read from the step events alike on both protocols) over the run's wall time (first send to",
        "last end). Differ from alone: answers whose text is not the text of the same request (protocol, prompt,",
        f"max_tokens) sent alone (closed loop with 1 client, and {alone_extra} request(s) sent one at a time after",
        f"the runs). The client runs on the same cores as the services: {cpu_s:.1f} CPU-seconds in {wall_s:.0f} s",
        f"({100 * cpu_s / max(wall_s, 1e-9):.0f}% of one core) for the whole benchmark."])


def render(a, runs: List[Run], overloads: List[Overload], alone_extra: int, stack_flags, started: float,
           load_avg, client_cpu, root: str, argv: List[str]) -> str:
    """The markdown of the section (after compare())."""
    lines = [_workload(a, alone_extra, client_cpu), ""]
    if stack_flags:
        shown = {k: shlex.join(_without_addresses(v)) for k, v in stack_flags.items()}
        lines += ["Stack, started by the benchmark: " + "; ".join(f"`{v}`" for v in shown.values())
                  + (" (in-process job store)" if "redis" not in shown else "") + ".", ""]
    caps = {r.protocol: max(x.figures.requests_per_s for x in runs if x.protocol == r.protocol and x.mode == "closed")
            for r in runs if r.mode == "closed"}
    lines += _tables(runs, overloads)
    if caps and (any(r.mode != "closed" for r in runs) or overloads):
        lines += ["Capacity (best closed-loop req/s): " + ", ".join(f"{p} {c:.2f}" for p, c in sorted(caps.items()))
                  + (f"; given as {a.capacity:g} req/s" if a.capacity else "") + ".", ""]
    lines += _goal(runs) + [""]
    when = datetime.datetime.fromtimestamp(started).strftime("%Y-%m-%d %H:%M")
    command = "bench/services/bench_serving.py" + ("" if not argv else " " + shlex.join(argv))
    lines.append(f"Measured {when} at {commit(root)}. Machine: {machine()}; load average {load_avg[0]:.2f} at the start. "
                 f"Command: `{command}`.")
    return "\n".join(lines) + "\n"


def _without_addresses(argv: List[str]) -> List[str]:
    """An argv without the addresses and ports picked for this run."""
    out, skip = [], False
    for i, x in enumerate(argv):
        if skip:
            skip = False
            continue
        if x in ("--listen", "--metrics-listen", "--drain-timeout-seconds", "--loader", "--executors", "--http-port",
                 "--http-host", "--redis", "--port", "--bind", "--dir"):
            skip = True
            continue
        out.append(os.path.basename(x) if i == 0 else x)
    return out


def failures(runs: List[Run], overloads: List[Overload]) -> List[str]:
    out = []
    for r in runs:
        e = r.figures.errors
        bad = sum(e.values()) if r.mode == "closed" else (e["5xx"] + e["timeout"] + e["other"] if r.mode == "open" else 0)
        if bad:
            out.append(f"{r.protocol} {r.mode} {r.setting}: {bad} request(s) failed ({', '.join(r.figures.details)})")
        if r.differ:
            out.append(f"{r.protocol} {r.mode} {r.setting}: {r.differ} answer(s) differ from the same request alone")
        if r.compared < r.figures.ok:
            out.append(f"{r.protocol} {r.mode} {r.setting}: {r.figures.ok - r.compared} answer(s) without a text alone")
    for v in overloads:
        if not v.passed:
            out.append(f"{v.run.protocol} overload: answers {_ok(v.answers_ok)}, p99 bounded {_ok(v.bounded)} "
                       f"({secs(v.p99_first)} -> {secs(v.p99_last)} s), lost {len(v.lost)}")
    return out


def write_doc(doc: str, body: str) -> None:
    """Replaces the bench:serving section; a doc without one gets it at its end, under a heading."""
    with open(doc) as f:
        has = f"<!-- bench:{SECTION} -->" in f.read()
    if not has:
        with open(doc, "a") as f:
            f.write("\n## Serving: the real stack under load, over HTTP and gRPC\n")
    bench_official.replace_section(doc, SECTION, body)
