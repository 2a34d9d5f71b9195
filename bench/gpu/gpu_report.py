#!/usr/bin/env python3
"""The tables of a GPU lease (tools/gpu/measure.sh) for docs/benchmarks.md.

Reads the $OUT folders one or more measure.sh runs brought back (results.jsonl, official.json,
log.txt; a later folder's run of the same name replaces an earlier one), keeps what the tables
need in one small JSON file (--save: token ids are reduced to how many positions equal the
official generate()'s), and writes the tables into --doc's bench:gpu section. --load re-renders
from a saved file.

Share of the card's bf16 rate: the model FLOPs each forward executes (2 x parameters x tokens for
the linear layers, 4 x tokens x keys x d_model per layer for attention, 2 x d_model x vocabulary per
row through the LM head: every row for the official code, the block's masked rows for unmask)
divided by the seconds and by 790 TFLOP/s, the dense bf16 rate measured on this kind of card
(an 8192^3 product, /work/.library/device/KINDS.md).

  bench/gpu/gpu_report.py --out-dirs /work/.device/3 /work/.device/4 \\
      --save bench/gpu/results/2026-11-26-h100.json --doc docs/benchmarks.md
  bench/gpu/gpu_report.py --load bench/gpu/results/2026-11-26-h100.json --doc docs/benchmarks.md
"""
import argparse
import hashlib
import json
import os
import shlex
import statistics
import sys

PEAK_BF16 = 790e12
PROMPT, BLOCK = 32, 32
# LLaDA-8B (tools/gpu/measure.sh's checkpoint): d_model, layers, MLP, vocabulary.
D, LAYERS, MLP, VOCAB = 4096, 32, 12288, 126464
LINEAR_PARAMS = LAYERS * (4 * D * D + 3 * D * MLP)


def forward_flops(tokens, keys, head_rows):
    return 2 * LINEAR_PARAMS * tokens + LAYERS * 4 * tokens * keys * D + 2 * D * VOCAB * head_rows


def generation_flops(mode, gen, steps, batch, official=False):
    """Model FLOPs of one generation (greedy, block 32, no early stop)."""
    total = PROMPT + gen
    per_block = steps // (gen // BLOCK)
    masked = [BLOCK - BLOCK * i // per_block for i in range(per_block)]  # masked rows before step i
    flops = 0
    for i in range(per_block):
        if official:
            flops += forward_flops(total, total, total)
        elif mode.startswith("dual_cache") and i > 0:
            flops += forward_flops(BLOCK, total, masked[i])
        else:
            flops += forward_flops(total, total, masked[i])
    return flops * (gen // BLOCK) * batch


def parse_args_text(text):
    a = shlex.split(text)
    get = lambda flag, default=None: a[a.index(flag) + 1] if flag in a else default  # noqa: E731
    return {"sampler": get("--sampler"), "gen_length": int(get("--gen-length")), "steps": int(get("--steps")),
            "batch": a.count("--prompt-ids"), "weights": get("--weights", "bf16"), "graphs": "--cuda-graphs" in a}


def collect(dirs):
    official, runs, machine, step_batch = None, {}, "", None
    for d in dirs:
        log = open(os.path.join(d, "log.txt")).read()
        machine = machine or log.splitlines()[0]
        off_path = os.path.join(d, "official.json")
        if os.path.exists(off_path):
            official = json.load(open(off_path))
        batch_path = os.path.join(d, "step_batch.md")
        if os.path.exists(batch_path):
            text = open(batch_path).read()
            if "| jobs at once" in text:
                step_batch = text[text.rindex("| jobs at once"):].strip()
        for line in open(os.path.join(d, "results.jsonl")):
            r = json.loads(line)
            runs[r["name"]] = r
    if official is None:
        sys.exit("no official.json in " + " ".join(dirs))
    off_ids = {r["gen_length"]: r["ids"] for r in official["runs"]}
    saved = {"machine": machine, "official": {k: official[k] for k in ("gpu", "torch", "cuda", "transformers", "official",
                                                                      "load_seconds", "attention")},
             "official_runs": [{k: v for k, v in r.items() if k not in ("ids", "attention_ops")} for r in official["runs"]],
             "runs": {}, "step_batch": step_batch}
    for name, r in runs.items():
        e = r["engine"]
        if e is None:
            saved["runs"][name] = {"error": r.get("error"), "stderr": r["stderr"]}
            continue
        if "likelihood" in e:  # a likelihood job (--continuation-tokens): no generation to compare
            saved["runs"][name] = dict(e["likelihood"], args=r["args"], peak_mib=r["peak_mib"],
                                       prompt_tokens=len(e["prompt_ids"]))
            continue
        a = parse_args_text(r["args"])
        ref = off_ids.get(a["gen_length"])
        same = [sum(x == y for x, y in zip(row, ref)) if ref else None for row in e["output"][:1]]
        saved["runs"][name] = dict(a, runs_seconds=e["runs_seconds"], forward_seconds=e["forward_seconds"],
                                   steps_run=e["steps_run"], load_seconds=e["load_seconds"], peak_mib=r["peak_mib"],
                                   cuda_graphs=e.get("cuda_graphs"), runs_identical=e["runs_identical"],
                                   first_row_same_as_official=same[0], precision=e["compute"]["precision"],
                                   fused_projections=e["compute"].get("fused_projections"),
                                   fused_kernels=e["compute"].get("fused_kernels"),
                                   ids_sha1=hashlib.sha1(json.dumps(e["output"]).encode()).hexdigest()[:12])
        if name.endswith("_conf"):  # the confident model's: compared with its own reference run
            saved["runs"][name]["ids"] = e["output"][0]
    return saved


def pair_table(before, after, pairs):
    rows = [f"| mode | gen_length | {before} s | {after} s | {before} / {after} | ids equal to official ({before} / {after}) |"
            " all ids the same both ways |", "|---|---|---|---|---|---|---|"]
    for gen, b, a in pairs:
        same = f"{b['first_row_same_as_official']} / {a['first_row_same_as_official']} of {gen}"
        both = "-" if "ids_sha1" not in b else ("yes" if b["ids_sha1"] == a.get("ids_sha1") else "**no**")
        mode = b["sampler"] + ("" if b["weights"] == "bf16" else f" ({b['weights']} weights)")
        rows.append(f"| {mode} | {gen} | {best(b):.2f} | {best(a):.2f} | **{best(b) / best(a):.2f}x** | {same} |"
                    f" {both} |")
    return rows


JOINED_MARK = " †"
JOINED_NOTE = ("† ran with each block's q/k/v and gate/up products joined (the 2026-11-27 lease's build did so by"
               " default; removed after it): a different engine from the one on main, and a peak memory that holds"
               " the separate weights the joining freed, so such runs are left out of the memory table.")


FUSED = " + fused kernels"


def fused(r):
    return bool(r and r.get("fused_kernels"))


def joined(r):
    return bool(r and r.get("fused_projections"))


def best(r):
    """The last run (the first of several includes one-off set-up: cuBLAS, the first captures)."""
    return r["runs_seconds"][-1]


def render(s):
    runs, off = s["runs"], {r["gen_length"]: r for r in s["official_runs"]}
    sources = [line.split("\t") for line in s["official"]["official"].strip().splitlines()[1:]]
    official = ", ".join(f"{repo} `{path}` at {commit[:8]}" for _, repo, commit, path in sources)
    out = [f"GPU: {s['machine']} (name, driver, memory, max SM clock). Official: {official}; PyTorch {s['official']['torch']}, transformers {s['official']['transformers']},"
           " eager, its default attention (`F.scaled_dot_product_attention`). unmask: `unmask-engine generate"
           " --precision bf16 --device cuda` built there against that PyTorch's LibTorch. One LLaDA-8B-shaped random"
           " checkpoint (d_model 4096, 32 layers, 32 heads, MLP 12288, vocabulary 126464, 8.02 B parameters, bf16,"
           " `make-model --fast-init`), prompt of 32 ids, block 32, greedy. Seconds are the generation loop (model"
           " loading excluded); unmask's are its last run of `--repeat` (the first one pays one-off set-up), the"
           " official's the timed run after one warm-up.", ""]
    # Leases from 2026-11-28 on also ran the fused kernels (the default on cuda since): their columns.
    with_fk = any(fused(runs.get(f + "_fk")) for f in ("ref_graphs", "ref_long_graphs"))
    fk_head = (" unmask graphs + fused kernels s | official / unmask (graphs + fused kernels) | ids equal to official"
               " (fused kernels) |") if with_fk else ""
    out += ["| gen_length | steps | official s | unmask eager s | unmask graphs s | official / unmask (graphs) |"
            " unmask tokens/s | ids equal to official | share of bf16 rate (official / unmask) |" + fk_head,
            "|---|---|---|---|---|---|---|---|---|" + "---|" * (3 * with_fk)]
    for gen, eager, graphs in ((256, "ref_eager", "ref_graphs"), (1024, "ref_long_eager", "ref_long_graphs")):
        # The engine as it is: where a lease also ran the joined-products experiment, its apart run.
        o, e, g = off.get(gen), runs.get(eager), runs.get(graphs + "_unfused", runs.get(graphs))
        if not (o and g):
            continue
        os_ = statistics.median(o["seconds"])
        gs = best(g)
        share_o = generation_flops("reference", gen, o["steps"], 1, official=True) / os_ / PEAK_BF16
        share_u = generation_flops("reference", gen, g["steps"], 1) / gs / PEAK_BF16
        eager_s = f"{best(e):.2f}{JOINED_MARK * joined(e)}{FUSED * fused(e)}" if e else "-"
        row = (f"| {gen} | {o['steps']} | {os_:.2f} | {eager_s} | {gs:.2f} | **{os_ / gs:.2f}x** |"
               f" {gen / gs:.1f} | {g['first_row_same_as_official']} of {gen} | {share_o:.0%} / {share_u:.0%} |")
        fk = runs.get(graphs + "_fk")
        if with_fk:
            row += (f" {best(fk):.2f} | **{os_ / best(fk):.2f}x** | {fk['first_row_same_as_official']} of {gen} |"
                    if fused(fk) else " - | - | - |")
        out.append(row)
    # Side-by-side experiments of one lease: (what, the engine without it, with it).
    joined_pairs = [(runs[f]["gen_length"], runs[f + "_unfused"], runs[f]) for f in ("ref_graphs", "ref_long_graphs")
                    if "runs_seconds" in runs.get(f, {}) and "runs_seconds" in runs.get(f + "_unfused", {})]
    if joined_pairs:
        out += ["", "Each block's q/k/v products and its gate/up products joined into one product each (an experiment,"
                " commit 28f88da, removed after this lease) against apart (the engine as it is), reference mode with"
                " CUDA graphs, side by side in the same run:", ""]
        out += pair_table("apart", "joined", joined_pairs)
    kernel_pairs = [(runs[f]["gen_length"], runs[f], runs[f + "_fk"])
                    for f in ("ref_graphs", "dual_graphs", "ref_long_graphs", "int8_dualthr", "int4_dualthr")
                    if "runs_seconds" in runs.get(f, {}) and "runs_seconds" in runs.get(f + "_fk", {})]
    if kernel_pairs:
        out += ["", "The fused kernels (`--fused-kernels`: RMSNorm, rotary embedding and the SiLU product, and an"
                " int8/int4 layer's dequantization, as one kernel each, common/model/fused_ops.h) against ATen's"
                " operators, with CUDA graphs, side by side in the same run:", ""]
        out += pair_table("ATen", "fused", kernel_pairs)
    out += ["", "Modes at gen_length 256 (256 steps; on a random model the threshold never passes, so"
            " dual_cache+threshold also runs 256 forwards). Host share: the host's time launching the forwards"
            " over the generation's seconds (near 100%: the CPU, not the GPU, sets the pace).", "",
            "| mode | CUDA graphs | batch | forwards | seconds | tokens/s | ms per forward | host share |"
            " vs reference eager, per token | share of bf16 rate | peak GPU MiB |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    ref_tps = None
    if "ref_eager" in runs:
        ref_tps = 256 / best(runs["ref_eager"])
    for name in ("ref_eager", "ref_graphs", "dual_eager", "dual_graphs", "dualthr_eager", "dualthr_graphs",
                 "dualthr_batch8", "dualthr_batch32", "int8_dualthr", "int8_dualthr_fk", "int4_dualthr", "int4_dualthr_fk",
                 "int4eh_dualthr_fk"):
        r = runs.get(name)
        if not r or "runs_seconds" not in r:
            continue
        sec = best(r)
        tps = r["batch"] * r["gen_length"] / sec
        share = generation_flops(r["sampler"], r["gen_length"], r["steps"], r["batch"]) / sec / PEAK_BF16
        label = (r["sampler"] + ("" if r["weights"] == "bf16" else f" ({r['weights']} weights)") + FUSED * fused(r) +
                 JOINED_MARK * joined(r))
        first = " (one run)" if len(r["runs_seconds"]) == 1 else ""
        out.append(f"| {label} | {'yes' if r['graphs'] else 'no'} | {r['batch']} | {r['steps_run']} | {sec:.2f}{first} |"
                   f" {tps:.1f} | {1000 * sec / r['steps_run']:.1f} | {r['forward_seconds'] / sec:.0%} |"
                   f" {'-' if ref_tps is None else f'{tps / ref_tps:.2f}x'} | {share:.0%} | {'-' if r['peak_mib'] is None else round(r['peak_mib'])} |")
    if any(joined(r) for r in runs.values()):
        out += ["", JOINED_NOTE]
    timed = [(n, runs[n]) for n in ("ref_graphs_timed", "dual_graphs_timed") if "runs_seconds" in runs.get(n, {})]
    if timed:
        out += ["", "Where a step's time goes (`--time-forwards`: each forward waited for on the device):", "",
                "| mode | forwards | ms per step | forward ms (device included) | the sampler's ms |", "|---|---|---|---|---|"]
        for _, r in timed:
            sec, n = best(r), r["steps_run"]
            out.append(f"| {r['sampler']} + graphs | {n} | {1000 * sec / n:.1f} | {1000 * r['forward_seconds'] / n:.1f} |"
                       f" {1000 * (sec - r['forward_seconds']) / n:.1f} |")
    if s.get("step_batch"):
        out += ["", "Many generations at once as the executor batches them (`bench_step_batch --device cuda"
                " --cuda-graphs`: each step one packed forward over the running generations, each its own sampler"
                " work; against the same generations one after another, each with its CUDA graphs):", "",
                s["step_batch"]]
    conf_ref = runs.get("ref_conf")
    if conf_ref and "runs_seconds" in conf_ref:
        out += ["", "A model sure of itself (the same draws, the LM head scaled by `make-model --head-scale`: the same"
                " argmax, sharper confidences; no trained 8B model is at hand), so that the threshold rule fires,"
                f" gen_length {conf_ref['gen_length']}, CUDA graphs{FUSED.replace(' + ', ' and the ') * fused(conf_ref)}."
                " Tokens per forward depend on how sure the model is: a trained model's figure is its own."
                f" Agreement: the share of the {conf_ref['gen_length']} generated ids equal to the reference's on"
                " this model.", "",
                "| mode | forwards | seconds | tokens/s | tokens per forward | vs reference, per token |"
                " agreement with the reference | peak GPU MiB |", "|---|---|---|---|---|---|---|---|"]
        ref_s = best(conf_ref)
        for name in ("ref_conf", "thr_conf", "dualthr_conf"):
            r = runs.get(name)
            if not r or "runs_seconds" not in r:
                continue
            sec, gen = best(r), r["gen_length"]
            same = sum(a == b for a, b in zip(r["ids"], conf_ref["ids"]))
            out.append(f"| {r['sampler']} | {r['steps_run']} | {sec:.2f} | {gen / sec:.1f} | {gen / r['steps_run']:.2f} |"
                       f" **{ref_s / sec:.2f}x** | {same / gen:.1%} | {'-' if r['peak_mib'] is None else round(r['peak_mib'])} |")
    for name, r in runs.items():
        if "loglikelihood" not in r:
            continue
        out += ["", f"The official Monte Carlo likelihood (`--continuation-tokens {r['continuation_tokens']} --mc-num"
                f" {r['samples']}`: LLaDA's get_log_likelihood, the last {r['continuation_tokens']} of"
                f" {r['prompt_tokens']} ids scored, one masked sample a forward): {r['forwards']} forwards in"
                f" {r['seconds']:.2f} s ({1000 * r['seconds'] / r['forwards']:.1f} ms a forward, eager), estimate"
                f" {r['loglikelihood']:.1f} nats (standard error {r['standard_error']:.2f}), peak"
                f" {'-' if r['peak_mib'] is None else round(r['peak_mib'])} MiB."]
    out += ["", "Peak GPU memory (nvidia-smi's memory.used, polled every 50 ms, above the idle figure: the CUDA"
            " context and the caching allocator's reserve included):", "",
            "| weights | run | gen_length | peak MiB | peak GiB |", "|---|---|---|---|---|"]
    for name in ("ref_eager", "ref_graphs", "ref_graphs_unfused", "dual_graphs", "ref_long_eager", "ref_long_graphs",
                 "ref_long_graphs_unfused", "int8_dualthr", "int8_dualthr_fk", "int4_dualthr", "int4_dualthr_fk",
                 "int4eh_dualthr_fk", "int4_long_mem"):
        r = runs.get(name)
        if not r or r.get("peak_mib") is None:
            continue
        if joined(r):  # its peak holds the separate weights the joining freed into the allocator's cache
            continue
        mode = r["sampler"] + (" + graphs" if r["graphs"] else "") + FUSED * fused(r)
        out.append(f"| {r['weights']} | {mode} | {r['gen_length']} | {r['peak_mib']:.0f} | {r['peak_mib'] / 1024:.2f} |")
    for o in s["official_runs"]:
        if o.get("max_memory_reserved_bytes") is None:  # a CPU dry run
            continue
        out.append(f"| bf16 | official generate() (torch.cuda.max_memory_reserved) | {o['gen_length']} |"
                   f" {o['max_memory_reserved_bytes'] / 2**20:.0f} | {o['max_memory_reserved_bytes'] / 2**30:.2f} |")
    loads = [r["load_seconds"] for r in runs.values() if r.get("weights") == "bf16" and "load_seconds" in r]
    qloads = [r["load_seconds"] for r in runs.values() if r.get("weights", "bf16") != "bf16" and "load_seconds" in r]
    quantized = (f", {min(qloads):.0f}-{max(qloads):.0f} s with `--weights int8` / `int4:g64` (quantized on the"
                 " CPU by the loader's code)") if qloads else ""
    bf16_loads = (f" {min(loads):.1f}-{max(loads):.1f} s for the bf16 checkpoint (15 GiB, from the page cache)"
                  if loads else " no bf16 run")
    out += ["", f"Loading: unmask{bf16_loads}{quantized}; the official code {s['official']['load_seconds']:.1f} s.",
            "", "Command (on the GPU machine, after `tools/gpu/stage_official.sh && tools/gpu/fetch_deps.sh` here):"
            " `tools/gpu/measure.sh`, then here `bench/gpu/gpu_report.py --out-dirs ... --save"
            f" bench/gpu/results/{s.get('saved_as', 'DATE-h100.json')} --doc docs/benchmarks.md`."]
    return "\n".join(out) + "\n"


def replace_section(doc, name, body):
    text = open(doc).read()
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if begin in text and end in text:
        text = text[: text.index(begin) + len(begin)] + "\n" + body + text[text.index(end):]
    else:
        text = text.rstrip("\n") + f"\n\n{begin}\n{body}{end}\n"
    open(doc, "w").write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dirs", nargs="*", default=[])
    ap.add_argument("--load")
    ap.add_argument("--save")
    ap.add_argument("--doc")
    ap.add_argument("--section", default="gpu", help="the doc's <!-- bench:SECTION --> to write")
    a = ap.parse_args()
    if bool(a.out_dirs) == bool(a.load):
        sys.exit("give --out-dirs or --load")
    s = collect(a.out_dirs) if a.out_dirs else json.load(open(a.load))
    if a.load:
        s.setdefault("saved_as", os.path.basename(a.load))
    if a.save:
        s["saved_as"] = os.path.basename(a.save)
        os.makedirs(os.path.dirname(a.save) or ".", exist_ok=True)
        json.dump(s, open(a.save, "w"), indent=1)
    body = render(s)
    if a.doc:
        replace_section(a.doc, a.section, body)
    print(body)


if __name__ == "__main__":
    main()
