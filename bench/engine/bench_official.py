#!/usr/bin/python3
"""unmask's reference mode against the official generate() loop, side by side on one checkpoint.

The official loop is bench/engine/official_generate.py (eager PyTorch, Debian's python3-torch);
unmask is `unmask-engine generate --sampler reference`. Shape (issue 18): d_model 512, 8 heads,
8 layers, MLP 1408, vocabulary 126464, prompt 32, block 32, steps = gen_length, float32,
temperature 0, all cores for both. The two run in turn (A B A B ...), each timing its own
generation loop (model loading excluded); every pair must produce identical ids. Writes the
table into --doc's bench:reference-vs-official section.

  bench/engine/bench_official.py [--build build] [--pairs 3] [--doc docs/benchmarks.md]
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return json.loads(r.stdout)


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release()}"


def replace_section(doc, name, body):
    with open(doc) as f:
        text = f.read()
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if begin in text and end in text:
        text = text[: text.index(begin) + len(begin)] + "\n" + body + text[text.index(end):]
    else:
        text = text.rstrip("\n") + f"\n\n{begin}\n{body}{end}\n"
    with open(doc, "w") as f:
        f.write(text)


def official_model(build):
    model = os.path.join(build, "bench-models", "official-d512")
    if not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([os.path.join(build, "tools", "make_model", "make-model"), "--out", model, "--d-model", "512",
                        "--n-layers", "8", "--n-heads", "8", "--mlp-hidden-size", "1408", "--vocab-size", "126464",
                        "--dtype", "fp32", "--seed", "7"], check=True, stdout=subprocess.DEVNULL)
    return model


PROMPT = ",".join(str(i) for i in range(1000, 1032))


def official(model, gen):
    return run_json(["/usr/bin/python3", os.path.join(ROOT, "bench", "engine", "official_generate.py"), "--model", model,
                     "--prompt-ids", PROMPT, "--gen-length", str(gen), "--block-length", "32", "--steps", str(gen)])


def unmask(build, model, gen):
    # Only what the comparison needs: the reference sampler, fp32 as the official loop computes;
    # threads and kernels are unmask's defaults.
    return run_json([os.path.join(build, "tools", "unmask_engine", "unmask-engine"), "generate", "--model", model,
                     "--prompt-ids", PROMPT, "--gen-length", str(gen), "--block-length", "32", "--steps", str(gen),
                     "--precision", "fp32", "--sampler", "reference", "--json"])


def compare(build, gen, pairs):
    """Official and unmask in turn, `pairs` times; exits when the ids differ."""
    model = official_model(build)
    ratios, off_s, un_s = [], [], []
    for pair in range(pairs):
        o, u = official(model, gen), unmask(build, model, gen)
        if o["ids"] != u["output"][0]:
            sys.exit(f"gen_length {gen}, pair {pair}: the ids differ\nofficial {o['ids']}\nunmask   {u['output'][0]}")
        off_s.append(o["seconds"])
        un_s.append(u["seconds"])
        ratios.append(o["seconds"] / u["seconds"])
        print(f"gen {gen} pair {pair}: official {o['seconds']:.2f} s, unmask {u['seconds']:.2f} s", file=sys.stderr)
    return {"ratio": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "pairs": pairs,
            "official_s": statistics.median(off_s), "unmask_s": statistics.median(un_s)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--gen-lengths", default="64", help="compared with the official loop")
    ap.add_argument("--unmask-only", default="256", help="gen lengths timed for unmask alone")
    ap.add_argument("--doc")
    a = ap.parse_args()

    model = official_model(a.build)
    rows = []
    for gen in [int(g) for g in a.gen_lengths.split(",") if g]:
        c = compare(a.build, gen, a.pairs)
        rows.append(f"| {gen} | {gen / c['official_s']:.2f} | {gen / c['unmask_s']:.2f} | "
                    f"**{c['ratio']:.2f}x** ({c['min']:.2f}-{c['max']:.2f}) | identical in {a.pairs} of {a.pairs} |")
    for gen in [int(g) for g in a.unmask_only.split(",") if g]:
        secs = [unmask(a.build, model, gen)["seconds"] for _ in range(a.pairs)]
        rows.append(f"| {gen} | not run | {gen / statistics.median(secs):.2f} | - | - |")

    body = ("Reference sampler against the official generate() loop (bench/engine/official_generate.py, eager PyTorch "
            "from Debian's python3-torch, written from the published algorithm and checked against the official golden "
            "outputs), one random checkpoint: d_model 512, 8 heads, 8 layers, MLP 1408, vocabulary 126464 (155 M "
            "parameters), prompt 32 tokens, block 32, steps = gen_length, float32, temperature 0, both at their default "
            "threading (all cores). "
            f"The two run in turn, {a.pairs} pairs; each times its generation loop only (loading excluded); tokens/s are "
            "medians, the speed-up is the median of the per-pair ratios (min-max).\n\n"
            "| gen_length | official tokens/s | unmask tokens/s | unmask / official | ids |\n|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\n"
            f"Machine: {machine()}. Command: `bench/engine/bench_official.py --pairs {a.pairs}"
            + (f" --doc {os.path.relpath(a.doc, ROOT)}" if a.doc else "") + "`.\n")
    print(body)
    if a.doc:
        replace_section(a.doc, "reference-vs-official", body)


if __name__ == "__main__":
    main()
