#!/usr/bin/python3
"""The official Dream generation code, timed on one checkpoint: the baseline unmask's Dream modes
are timed against (bench/engine/bench_dream_official.py).

Runs the official code itself, never a copy of it: like tools/golden/make_dream_golden.py (whose
`Official` loader this script imports), it reads ZHZisZZ/dllm's files at run time from the local
git mirror (`git show HEAD:<path>`) into a temporary `dllm` package and imports them from there,
with the golden scripts' stand-ins for the pieces of `transformers` they import
(tools/golden/transformers_standins.py, dream_standins.py; torch 1.13 has no
scaled_dot_product_attention, so the stand-in computes it as torch 2.5's math reference does).

  --mode dream                       DreamModel.diffusion_generate (dllm/pipelines/dream/models)
  --mode dream_prefix_cache          FastdLLMDreamSampler.sample, use_cache "prefix"
  --mode dream_dual_cache            FastdLLMDreamSampler.sample, use_cache "dual"
  --mode dream_prefix_cache+threshold, dream_dual_cache+threshold
                                     the same with alg "confidence_threshold" and --threshold

Greedy only (temperature 0, no top-p / top-k), float32 on CPU, one prompt. The model is loaded
(excluded from the time), then the generation call alone is timed. Prints one JSON line:
{"ids": [generated ids], "seconds": s, "calls": model calls, "threads": t, "commit": dllm HEAD}.

  official_dream_generate.py --model DIR --prompt-ids 1,2,3 --mode dream --gen-length 128 --steps 128
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import types

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "golden"))

from dream_standins import install_dream_standins  # noqa: E402
from hf_checkpoint_files import load_checkpoint  # noqa: E402
from make_dream_golden import Official, git_head  # noqa: E402

MODES = {  # mode -> (use_cache, threshold rule)
    "dream": (None, False),
    "dream_prefix_cache": ("prefix", False),
    "dream_dual_cache": ("dual", False),
    "dream_prefix_cache+threshold": ("prefix", True),
    "dream_dual_cache+threshold": ("dual", True),
}


def load(official, directory, fast):
    """DreamModel (or Fast-dLLM's FastdLLMDreamModel) from a Hugging Face Dream checkpoint folder,
    float32, every tensor loaded with strict=True."""
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    model = (official.build_fast if fast else official.build)(config)
    state = {k: v.float() for k, v in load_checkpoint(directory).items()}
    if config.get("tie_word_embeddings"):
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state, strict=True)
    return model.float().eval(), config


def count_calls(model):
    """Counts the model's forward calls (the official loops call model(...) once per step)."""
    calls = [0]
    original = model.forward

    def forward(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    model.forward = forward
    return calls


def generate(official, model, config, prompt, a):
    use_cache, threshold_rule = MODES[a.mode]
    if a.mode == "dream":
        ids = torch.tensor([prompt], dtype=torch.long)
        with torch.no_grad():
            out = model.diffusion_generate(
                ids, attention_mask=torch.ones_like(ids), max_new_tokens=a.gen_length, steps=a.steps, eps=a.eps,
                alg=a.alg, alg_temp=None, temperature=0.0, top_p=None, top_k=None, output_history=False,
                return_dict=True)
        return out.sequences[0, len(prompt):].tolist()
    sm = official.fast_sampler
    sampler = sm.FastdLLMDreamSampler(model=model, tokenizer=types.SimpleNamespace(
        mask_token_id=config["mask_token_id"], eos_token_id=config["eos_token_id"]))
    out = sampler.sample([list(prompt)], config=sm.FastdLLMDreamSamplerConfig(), return_dict=True,
                         max_new_tokens=a.gen_length, steps=a.steps, eps=a.eps,
                         alg="confidence_threshold" if threshold_rule else a.alg, alg_temp=0.0, temperature=0.0,
                         top_p=1.0, top_k=None, stochastic_transfer=False,
                         threshold=a.threshold if threshold_rule else None, use_cache=use_cache,
                         block_size=a.block_length, right_shift_logits=True)
    return out.sequences[0, len(prompt):].tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--mode", default="dream", choices=sorted(MODES))
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--block-length", type=int, default=32, help="cache modes")
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--alg", default="entropy", help="maskgit_plus, topk_margin or entropy (dream also origin)")
    ap.add_argument("--threshold", type=float, default=0.9, help="+threshold modes")
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=0, help="0: one per core")
    ap.add_argument("--official", default="/work/.mirror", help="folder of the fetched mirrors (<owner>+<name>/repo)")
    ap.add_argument("--dllm-git", help="git dir of ZHZisZZ/dllm (default: under --official)")
    a = ap.parse_args()
    dllm_git = a.dllm_git or os.path.join(a.official, "ZHZisZZ+dllm", "repo")
    torch.set_num_threads(a.threads or os.cpu_count())
    install_dream_standins()
    prompt = [int(t) for t in a.prompt_ids.split(",")]
    tmp = tempfile.mkdtemp(prefix="dream-official-")
    try:
        official = Official(tmp, dllm_git)
        model, config = load(official, a.model, fast=a.mode != "dream")
        calls = count_calls(model)
        start = time.perf_counter()
        ids = generate(official, model, config, prompt, a)
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"ids": ids, "seconds": seconds, "calls": calls[0], "threads": torch.get_num_threads(),
                      "commit": git_head(dllm_git)}))


if __name__ == "__main__":
    main()
