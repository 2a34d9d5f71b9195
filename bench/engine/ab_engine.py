#!/usr/bin/python3
"""An engine change side by side: two unmask-engine binaries on the same jobs, in turn.

Keep the binary from before the change (cp build/tools/unmask_engine/unmask-engine /tmp/before),
build the change, and run both: before, after, before, after ... on each job, each run timing its
own generation (loading excluded). Every pair must give the same ids: this compares speed-ups,
not new results. Figures are medians; the speed-up is the median of the per-pair ratios
(min-max). Writes the table into --doc's bench:<--section> section.

Jobs: reference mode at bench_official.py's shape (d_model 512, vocabulary 126464, float32, where
the LM head over the masked rows streams 259 MB per step) at 2 and 1 threads and on the AVX2
kernels, and the demo's chat job on unmask-kjv at the defaults and at fp32 on the AVX2 kernels.

  bench/engine/ab_engine.py --before /tmp/before [--after build/tools/unmask_engine/unmask-engine]
      [--pairs 5] [--jobs all] [--doc docs/benchmarks.md --section NAME --title "what changed"]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cpu  # noqa: E402
import bench_official  # noqa: E402

ROOT = bench_official.ROOT
REFERENCE = ["--prompt-ids", bench_official.PROMPT, "--gen-length", "64", "--block-length", "32", "--steps", "64",
             "--precision", "fp32", "--sampler", "reference"]
KJV = os.path.join(ROOT, "models", "unmask-kjv")


def jobs(build):
    d512 = bench_official.official_model(build)
    return {
        "reference, d512 fp32, defaults": [d512, REFERENCE],
        "reference, d512 fp32, --threads 1": [d512, [*REFERENCE, "--threads", "1"]],
        "reference, d512 fp32, --gemm avx2": [d512, [*REFERENCE, "--gemm", "avx2"]],
        "chat job, unmask-kjv, defaults": [KJV, bench_cpu.CHAT_ENGINE],
        "chat job, unmask-kjv, --precision fp32 --gemm avx2": [KJV, [*bench_cpu.CHAT_ENGINE, "--precision", "fp32",
                                                                      "--gemm", "avx2"]],
    }


def run(binary, model, args):
    return bench_official.run_json([binary, "generate", "--model", model, *args, "--json"])


def compare(before, after, model, args, pairs):
    b_s, a_s, ratios = [], [], []
    run(before, model, args), run(after, model, args)  # warm-up: page cache, first-touch
    for pair in range(pairs):
        b, a = run(before, model, args), run(after, model, args)
        if b["output"] != a["output"]:
            sys.exit(f"pair {pair}: the ids differ\nbefore {b['output']}\nafter  {a['output']}")
        b_s.append(b["seconds"])
        a_s.append(a["seconds"])
        ratios.append(b["seconds"] / a["seconds"])
    return statistics.median(b_s), statistics.median(a_s), statistics.median(ratios), min(ratios), max(ratios)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the unmask-engine binary from before the change")
    ap.add_argument("--after", default=os.path.join(ROOT, "build", "tools", "unmask_engine", "unmask-engine"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="where bench models are made")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--jobs", default="all", help="substrings of job names separated by ';', or all")
    ap.add_argument("--doc")
    ap.add_argument("--section", default="ab-engine")
    ap.add_argument("--title", default="", help="what changed, for the table's caption")
    a = ap.parse_args()

    rows = []
    for name, (model, args) in jobs(a.build).items():
        if a.jobs != "all" and not any(j in name for j in a.jobs.split(";")):
            continue
        b, af, r, lo, hi = compare(a.before, a.after, model, args, a.pairs)
        rows.append(f"| {name} | {b:.3f} | {af:.3f} | **{r:.2f}x** ({lo:.2f}-{hi:.2f}) | identical in {a.pairs} of {a.pairs} |")
        print(rows[-1], file=sys.stderr)
    cpu, flags = bench_cpu.cpu()
    body = ((f"{a.title}\n\n" if a.title else "")
            + f"Two unmask-engine binaries in turn, {a.pairs} pairs after a warm-up pair; seconds are medians of each "
            "run's own generation time (loading excluded), the speed-up is the median of the per-pair ratios "
            "(min-max).\n\n| job | before s | after s | after / before | ids |\n|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\n"
            f"Machine: {cpu}, {bench_official.machine().split(', ', 1)[1]}; flags: {' '.join(flags)}. Command: "
            f"`bench/engine/ab_engine.py --before {a.before} --pairs {a.pairs}"
            + (f" --jobs '{a.jobs}'" if a.jobs != "all" else "")
            + (f" --doc {os.path.relpath(a.doc, ROOT)} --section {a.section}" if a.doc else "") + "`.\n")
    print(body)
    if a.doc:
        bench_official.replace_section(a.doc, a.section, body)


if __name__ == "__main__":
    main()
