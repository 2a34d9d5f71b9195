#!/usr/bin/python3
"""Memory of quantized tables: an 8B model's embedding table and LM head quantized (":emb",
":head"), side by side.

The model: LLaDA-8B's tables (d_model 4096, vocabulary 126464: 518 M parameters each, 1 GiB in
bf16) around one 8B block (MLP 12288), random bf16 weights (make-model --fast-init), so that the
tables are most of it. Each configuration is one `unmask-engine generate --weights SPEC` process
(the loader's quantization into a private segment, then 4 steps of reference mode, fp32 compute,
as a CPU user would run it); its peak resident memory (the process's maximum RSS, from wait4) and
its generation seconds. Configurations run in turn, round after round; figures are medians. With
--before, a build from before the change runs the specs it can in the same rounds.

  bench/engine/bench_quant_tables.py [--before /tmp/before-build/tools/unmask_engine/unmask-engine]
      [--rounds 3] [--doc docs/benchmarks.md]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_official  # noqa: E402

ROOT = bench_official.ROOT
SPECS = ["int4:g64", "int4:g64:head", "int4:g64:emb", "int4:g64:emb:head", "int8:emb:head"]
JOB = ["--prompt-ids", bench_official.PROMPT, "--gen-length", "32", "--block-length", "32", "--steps", "4",
       "--precision", "fp32", "--sampler", "reference", "--json"]


def table_model(build):
    model = os.path.join(build, "bench-models", "tables-8b")
    if not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([os.path.join(build, "tools", "make_model", "make-model"), "--out", model, "--fast-init",
                        "--d-model", "4096", "--n-layers", "1", "--n-heads", "32", "--mlp-hidden-size", "12288",
                        "--vocab-size", "126464"], check=True, stdout=subprocess.DEVNULL)
    return model


def run(binary, model, spec):
    """((max RSS MiB, generation seconds, ids), None), or (None, why) where the binary refuses the spec."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([binary, "generate", "--model", model, "--weights", spec, *JOB], stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)  # this child's own peak (ru_maxrss, KiB)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            lines = err.read().strip().splitlines()
            return None, lines[-1] if lines else f"exit {p.returncode}"
        j = json.loads(out.read())
    return (usage.ru_maxrss / 1024, j["seconds"], j["output"]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--before", help="unmask-engine built before the change")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--doc")
    a = ap.parse_args()
    after = os.path.join(a.build, "tools", "unmask_engine", "unmask-engine")
    model = table_model(a.build)
    binaries = [("before", a.before)] if a.before else []
    binaries.append(("after" if a.before else "unmask", after))
    results = {(b, s): [] for b, _ in binaries for s in SPECS}
    refused = {}
    for _ in range(a.rounds):
        for spec in SPECS:
            for label, binary in binaries:
                if (label, spec) in refused:
                    continue
                got, why = run(binary, model, spec)
                if got is None:
                    refused[(label, spec)] = why
                else:
                    results[(label, spec)].append(got)
    rows = ["| weights | build | peak RSS MiB | generation s (4 steps) | ids as the first run's |",
            "|---|---|---|---|---|"]
    for spec in SPECS:
        first = None
        for label, _ in binaries:
            runs = results[(label, spec)]
            if not runs:
                rows.append(f"| `{spec}` | {label} | refused: {refused.get((label, spec), '?')} | - | - |")
                continue
            first = first or runs[0][2]
            same = all(r[2] == first for r in runs)
            rows.append(f"| `{spec}` | {label} | {statistics.median(r[0] for r in runs):.0f} |"
                        f" {statistics.median(r[1] for r in runs):.2f} | {'yes' if same else '**no**'} |")
    cmd = "bench/engine/bench_quant_tables.py" + (" --before BEFORE" if a.before else "") + f" --rounds {a.rounds}"
    body = "\n".join(rows) + (
        f"\n\nMachine: {bench_official.machine()}. Medians of {a.rounds} rounds. Model: d_model 4096, vocabulary"
        " 126464, one block with MLP 12288 (1.25 B parameters; the embedding table and the LM head are 518 M each),"
        f" random bf16. Command: `{cmd}`.\n")
    print(body)
    if a.doc:
        bench_official.replace_section(a.doc, "quant-tables", body)


if __name__ == "__main__":
    main()
