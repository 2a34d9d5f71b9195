#!/usr/bin/python3
"""unmask's Dream modes against the official Dream code, side by side on one random checkpoint.

The official side is bench/engine/official_dream_generate.py: dllm's DreamModel.diffusion_generate
(mode `dream`) and Fast-dLLM's FastdLLMDreamSampler (the cache modes), run from the git mirror
(never copied), eager PyTorch from Debian's python3-torch 1.13. unmask is `unmask-engine generate
--sampler MODE --precision fp32`. The checkpoint is written by this script into a temporary folder
(or --model-dir) in the Hugging Face Dream layout: config.json with the fields of
tools/golden/make_dream_golden.py's dream_config(), float32 weights in two safetensors shards with
their index; hidden 512, 8 layers, 8 heads / 2 KV heads, intermediate 1408, Dream-7B's vocabulary
(152064) and special ids. Prompt 32 ids, greedy, float32, all cores for both (--threads N: N each).
The two run in turn (official, unmask, official, unmask, ...), each timing its own generation loop
(model loading excluded); every pair must give identical ids: a mode whose ids differ is reported
as such and not timed. Writes the table into --doc's bench:dream-vs-official section.

  bench/engine/bench_dream_official.py [--build build] [--pairs 3] [--gen-lengths 128] [--doc docs/benchmarks.md]
"""
import argparse
import datetime
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "golden"))

from bench_official import replace_section, run_json  # noqa: E402
from hf_checkpoint_files import save_checkpoint  # noqa: E402
from make_dream_golden import dream_config  # noqa: E402

SECTION = "dream-vs-official"
MODES = ["dream", "dream_prefix_cache", "dream_dual_cache", "dream_prefix_cache+threshold",
         "dream_dual_cache+threshold"]
# Dream-v0-Instruct-7B's ids: bos = eos = pad = <|endoftext|>, <|mask|>.
EOS_ID, MASK_ID, VOCAB = 151643, 151666, 152064
SHAPE = dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=2,
             intermediate_size=1408, max_window_layers=8)
PROMPT = list(range(1000, 1032))

INTRO = """## Dream: unmask's Dream modes against the official code (issue 30)

How to read the table: each row is one sampler mode at one gen_length, run by the official Python
code (dllm's `diffusion_generate` for `dream`, Fast-dLLM's Dream sampler for the cache modes) and by
`unmask-engine` in turn on the same random Dream checkpoint, greedy, with identical ids in every
pair (a mode whose ids differ would say so instead of a time). Seconds are the generation loop only
(medians over the pairs); "unmask / official" is the speed-up, official seconds / unmask seconds in
each pair, median (min-max); model calls are the forwards each side ran (the threshold modes stop
calling when the block is full, so they can call less often than the others). On a random model
the confidences are low, so the threshold rarely passes and the threshold modes commit about one
token per call. On the shared 2-core machine the figures move from run to run: compare rows of one
run.

"""


def random_checkpoint(folder, seed=30):
    """A Dream checkpoint in the Hugging Face layout, named as DreamModel.state_dict() (the official
    loader checks that with strict=True): embeddings N(0,1), linear weights N(0, 1/fan_in), q/k/v
    biases N(0, 0.2^2), RMSNorm weights 1 +- 0.2, lm_head N(0, 4/hidden) with the <|mask|> row zero;
    float32 (as make_dream_golden.py's random_state, without the bf16 rounding)."""
    config = dream_config(**SHAPE, vocab_size=VOCAB, bos_token_id=EOS_ID, eos_token_id=EOS_ID, pad_token_id=EOS_ID,
                          mask_token_id=MASK_ID, torch_dtype="float32")
    hidden, inter = config["hidden_size"], config["intermediate_size"]
    kv = hidden // config["num_attention_heads"] * config["num_key_value_heads"]
    g = torch.Generator().manual_seed(seed)

    def linear(rows, cols):
        return torch.randn(rows, cols, generator=g) / math.sqrt(cols)

    def norm():
        return 1.0 + (torch.rand(hidden, generator=g) - 0.5) * 0.4

    state = {"model.embed_tokens.weight": torch.randn(VOCAB, hidden, generator=g)}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for name, rows in (("q_proj", hidden), ("k_proj", kv), ("v_proj", kv)):
            state[f"{p}self_attn.{name}.weight"] = linear(rows, hidden)
            state[f"{p}self_attn.{name}.bias"] = torch.randn(rows, generator=g) * 0.2
        state[p + "self_attn.o_proj.weight"] = linear(hidden, hidden)
        state[p + "mlp.gate_proj.weight"] = linear(inter, hidden)
        state[p + "mlp.up_proj.weight"] = linear(inter, hidden)
        state[p + "mlp.down_proj.weight"] = linear(hidden, inter)
        state[p + "input_layernorm.weight"] = norm()
        state[p + "post_attention_layernorm.weight"] = norm()
    state["model.norm.weight"] = norm()
    head = torch.randn(VOCAB, hidden, generator=g) * (2.0 / math.sqrt(hidden))
    head[MASK_ID] = 0.0
    state["lm_head.weight"] = head
    save_checkpoint(folder, state, config)
    assert sum(t.numel() for t in state.values()) == parameters()


def parameters():
    """Parameters of the checkpoint random_checkpoint() writes."""
    hidden, inter, layers = SHAPE["hidden_size"], SHAPE["intermediate_size"], SHAPE["num_hidden_layers"]
    kv = hidden // SHAPE["num_attention_heads"] * SHAPE["num_key_value_heads"]
    layer = (hidden + 1) * (hidden + 2 * kv) + hidden * hidden + 3 * hidden * inter + 2 * hidden
    return 2 * VOCAB * hidden + layers * layer + hidden


def mode_flags(mode, gen, a):
    """The generation arguments both sides get: steps = gen_length; the cache modes in blocks."""
    flags = ["--gen-length", str(gen), "--steps", str(gen), "--alg", a.alg]
    if a.threads:
        flags += ["--threads", str(a.threads)]
    if mode != "dream":
        flags += ["--block-length", str(a.block_length)]
    if mode.endswith("+threshold"):
        flags += ["--threshold", str(a.threshold)]
    return flags


def official(model, mode, gen, a):
    return run_json(["/usr/bin/python3", os.path.join(HERE, "official_dream_generate.py"), "--model", model,
                     "--prompt-ids", ",".join(map(str, PROMPT)), "--mode", mode, "--dllm-git", a.dllm_git]
                    + mode_flags(mode, gen, a))


def unmask(model, mode, gen, a):
    return run_json([os.path.join(a.build, "tools", "unmask_engine", "unmask-engine"), "generate", "--model", model,
                     "--prompt-ids", ",".join(map(str, PROMPT)), "--sampler", mode, "--precision", "fp32", "--json"]
                    + mode_flags(mode, gen, a))


def busy_cores(seconds=2.0):
    """Cores kept busy over the next `seconds` (from /proc/stat), by anything: run between pairs, it is
    what the others sharing the machine use."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v[:8]), v[3] + v[4]  # all jiffies (up to steal), idle + iowait
    (t0, i0) = sample()
    time.sleep(seconds)
    (t1, i1) = sample()
    return os.cpu_count() * (1 - (i1 - i0) / max(1, t1 - t0))


def wait_for_quiet(a):
    """Waits (at most a.max_wait seconds) until the others use under a.quiet cores; returns what they
    used when the pair started."""
    deadline = time.monotonic() + a.max_wait
    busy = busy_cores()
    while busy > a.quiet and time.monotonic() < deadline:
        time.sleep(3)
        busy = busy_cores()
    return busy


def compare(model, mode, gen, a):
    """Official and unmask in turn, a.pairs times; stops at the first pair whose ids differ."""
    off_s, un_s, ratios, calls, busy = [], [], [], set(), []
    for pair in range(a.pairs):
        busy.append(wait_for_quiet(a))
        o, u = official(model, mode, gen, a), unmask(model, mode, gen, a)
        if o["ids"] != u["output"][0]:
            first = next(i for i, (x, y) in enumerate(zip(o["ids"], u["output"][0])) if x != y)
            print(f"{mode} gen {gen} pair {pair}: the ids differ from position {first}\n"
                  f"official {o['ids']}\nunmask   {u['output'][0]}", file=sys.stderr)
            return {"differ": f"ids differ in pair {pair + 1} from generated position {first}", "busy": busy}
        off_s.append(o["seconds"])
        un_s.append(u["seconds"])
        ratios.append(o["seconds"] / u["seconds"])
        calls.add((o["calls"], u["steps_run"]))
        print(f"{mode} gen {gen} pair {pair}: official {o['seconds']:.2f} s ({o['calls']} calls), "
              f"unmask {u['seconds']:.2f} s ({u['steps_run']} calls); others used {busy[-1]:.2f} cores at the "
              "start", file=sys.stderr, flush=True)
    return {"official_s": statistics.median(off_s), "unmask_s": statistics.median(un_s),
            "ratio": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "calls": sorted(calls),
            "commit": o["commit"], "busy": busy}


def cpu_line():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    m = re.search(r"Model name:\s*(.*)", out)
    name = m.group(1).strip() if m else "unknown CPU"
    flags = set()
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^flags\s*:\s*(.*)$", f.read(), re.M)
        flags = set(m.group(1).split()) if m else flags
    has = ", ".join(f"{fl} {'yes' if fl in flags else 'no'}" for fl in ("avx2", "avx512f", "avx512_bf16"))
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{name} ({has}), {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release()}"


def section(a, modes, rows, commit, machine, busy, left):
    """The text between the section's markers: setup, table, machine, command."""
    command = "bench/engine/bench_dream_official.py" + (f" --pairs {a.pairs}" if a.pairs != 3 else "")
    command += f" --gen-lengths {a.gen_lengths}" + (f" --threads {a.threads}" if a.threads else "")
    command += f" --modes {a.modes}" if modes != MODES else ""
    command += f" --doc {os.path.relpath(a.doc, ROOT)}" if a.doc else ""
    threads = f"{a.threads} thread(s) on both sides" if a.threads else "both at their default threading (all cores)"
    waited = (f"before each pair the run waited (at most {a.max_wait} s) until the others used under {a.quiet} cores; "
              f"at the pairs' starts they used {min(busy):.2f}-{max(busy):.2f} cores (median "
              f"{statistics.median(busy):.2f})") if busy else "no pair ran"
    return ("Official: ZHZisZZ/dllm at " + commit[:8] + " run from its git mirror (`diffusion_generate` for `dream`, "
            "`FastdLLMDreamSampler.sample` with use_cache prefix / dual for the cache modes, alg confidence_threshold "
            "for +threshold), with tools/golden's transformers stand-ins (scaled_dot_product_attention as torch 2.5's "
            "math formula: torch 1.13 has none), eager PyTorch 1.13 from Debian (no MKL). unmask: `unmask-engine "
            "generate --sampler MODE --precision fp32`. One random checkpoint in the Hugging Face Dream layout: "
            "hidden 512, 8 layers, 8 heads / 2 KV heads (head_dim 64), intermediate 1408, vocabulary 152064 "
            f"(Dream-7B's), untied head, {parameters() / 1e6:.0f} M parameters, float32. Prompt 32 ids, greedy "
            f"(temperature 0, no top-p / top-k), steps = gen_length, alg {a.alg} (dream and the cache modes), cache "
            f"modes in blocks of {a.block_length}, threshold {a.threshold}; {threads}. {a.pairs} pairs per row, "
            "official then unmask, each timing its generation loop only (loading excluded).\n\n"
            "| gen_length | mode | model calls (official / unmask) | official s | unmask s | unmask / official | "
            "official tokens/s | unmask tokens/s | ids |\n|---|---|---|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n"
            + (f"\n**Incomplete: {left} more row(s) were still to run when this was written.**\n" if left else "")
            + f"\nMachine: {machine}; shared with other work: {waited}. Date: {datetime.date.today().isoformat()}. "
            f"Command: `{command}`.\n")


def write_doc(doc, body):
    with open(doc) as f:
        text = f.read()
    if f"<!-- bench:{SECTION} -->" not in text:  # first run: the section's heading and how to read it
        with open(doc, "w") as f:
            f.write(text.rstrip("\n") + "\n\n" + INTRO + f"<!-- bench:{SECTION} -->\n<!-- /bench:{SECTION} -->\n")
    replace_section(doc, SECTION, body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--gen-lengths", default="128")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--block-length", type=int, default=32, help="cache modes")
    ap.add_argument("--alg", default="entropy", help="dream and the cache modes without threshold")
    ap.add_argument("--threshold", type=float, default=0.9, help="+threshold modes")
    ap.add_argument("--threads", type=int, default=0, help="both sides' threads (0: their default, all cores)")
    ap.add_argument("--quiet", type=float, default=0.3, help="start a pair once the others use fewer cores")
    ap.add_argument("--max-wait", type=int, default=300, help="seconds to wait for --quiet before a pair")
    ap.add_argument("--model-dir", help="keep the checkpoint here (written if it has no config.json)")
    ap.add_argument("--official", default="/work/.mirror", help="folder of the fetched mirrors (<owner>+<name>/repo)")
    ap.add_argument("--dllm-git", help="git dir of ZHZisZZ/dllm (default: under --official)")
    ap.add_argument("--doc")
    a = ap.parse_args()
    a.dllm_git = a.dllm_git or os.path.join(a.official, "ZHZisZZ+dllm", "repo")
    modes = [m for m in a.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"--modes: {m!r} is not one of {', '.join(MODES)}")

    machine = cpu_line()
    model = a.model_dir or tempfile.mkdtemp(prefix="dream-bench-")
    runs = [(int(g), m) for g in a.gen_lengths.split(",") if g for m in modes]
    rows, commit, busy = [], "?", []
    try:
        if not os.path.exists(os.path.join(model, "config.json")):
            random_checkpoint(model)
            print(f"checkpoint: {parameters() / 1e6:.0f} M parameters in {model}", file=sys.stderr)
        for gen, mode in runs:
            c = compare(model, mode, gen, a)
            busy += c["busy"]
            if "differ" in c:
                rows.append(f"| {gen} | {mode} | - | - | - | - | - | - | **{c['differ']}**: not timed |")
            else:
                commit = c["commit"]
                calls = ", ".join(f"{o} / {u}" for o, u in c["calls"])
                rows.append(f"| {gen} | {mode} | {calls} | {c['official_s']:.2f} | {c['unmask_s']:.2f} | "
                            f"**{c['ratio']:.2f}x** ({c['min']:.2f}-{c['max']:.2f}) | {gen / c['official_s']:.1f} | "
                            f"{gen / c['unmask_s']:.1f} | identical in {a.pairs} of {a.pairs} |")
            if a.doc and len(rows) < len(runs):  # what is done so far, in case the run is cut short
                write_doc(a.doc, section(a, modes, rows, commit, machine, busy, len(runs) - len(rows)))
    finally:
        if not a.model_dir:
            shutil.rmtree(model, ignore_errors=True)
    body = section(a, modes, rows, commit, machine, busy, 0)
    print(body)
    if a.doc:
        write_doc(a.doc, body)


if __name__ == "__main__":
    main()
