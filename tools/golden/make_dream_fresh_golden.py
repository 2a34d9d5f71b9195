#!/usr/bin/env python3
"""Fresh golden cases for Dream: cases drawn at random (a seeded draw, not chosen by hand) and run
with the official code on the committed tiny Dream checkpoints, in the formats of
tiny-dream.golden.json and tiny-dream.fastdllm.golden.json. They check unmask on cases it was never
written against: the draw is made after the code, and the tests read the files as they came out.

Writes tests/data/tiny-dream.fresh.golden.json (diffusion_generate: every alg, greedy and sampled,
top-p, top-k, alg_temp, eps, step counts above and below the token count, left-padded batches of
two, a mask token inside a prompt) and tests/data/tiny-dream.fastdllm.fresh.golden.json (Fast-dLLM's
Dream sampler without a cache, with the prefix cache and with the dual cache, the threshold rule).

    /usr/bin/python3 tools/golden/make_dream_fresh_golden.py --official /work/.mirror [--draw 1] [--cases 24]

--draw picks the random draw (the committed files say theirs under "draw"). The official code is
read from the git mirror as make_dream_golden.py reads it (never copied); the checkpoints are the
committed ones (nothing under tests/data/tiny-dream* is rewritten). Tests never run this.
"""
import argparse
import os
import random
import shutil
import tempfile

import torch

import make_dream_golden as g
from dream_tokenizer import EOS_ID, MASK_ID, PAD_ID, PUBLISHED_IDS, SPECIAL_TOKENS
from hf_checkpoint_files import DATA, write_json

MODELS = ["tiny-dream", "tiny-dream", "tiny-dream-tied", "tiny-dream-confident"]  # tiny-dream twice as often


def prompt(rng):
    ids = [rng.randrange(0, 480) for _ in range(rng.randint(1, 14))]
    if rng.random() < 0.1:
        ids[rng.randrange(len(ids))] = MASK_ID  # a mask inside the prompt is denoised too
    return ids


def sampling(rng):
    """temperature, top_p, top_k: greedy half of the time; the filters with or without one."""
    temperature = 0.0 if rng.random() < 0.5 else rng.choice([0.5, 0.7, 1.0, 1.3])
    top_p = rng.choice([0.8, 0.9, 0.95]) if rng.random() < 0.35 else None
    top_k = rng.choice([5, 20, 50]) if rng.random() < 0.3 else None
    return temperature, top_p, top_k


def generate_case(rng):
    alg = rng.choice(["origin", "maskgit_plus", "topk_margin", "entropy"])
    temperature, top_p, top_k = sampling(rng)
    gen = rng.randint(4, 20)
    rows = 1 if rng.random() < 0.7 else 2
    return g.gcase(rng.choice(MODELS), [prompt(rng) for _ in range(rows)], gen, rng.randint(1, gen + 4), alg,
                   temperature=temperature, top_p=top_p, top_k=top_k,
                   alg_temp=(rng.choice([0.3, 0.5, 1.0]) if alg != "origin" and rng.random() < 0.35 else None),
                   eps=rng.choice([1e-3, 1e-3, 0.01, 0.05]), seed=rng.randrange(1 << 20))


def fast_case(rng):
    cache = rng.choice([None, "prefix", "dual"])
    alg = rng.choice(["maskgit_plus", "topk_margin", "entropy", "confidence_threshold"])
    temperature, top_p, top_k = sampling(rng)
    block = rng.choice([4, 8]) if cache else None
    gen = block * rng.randint(1, 3) if cache else rng.randint(4, 20)
    blocks = gen // block if cache else 1
    steps = blocks * rng.randint(1, (block if cache else gen) + 2)  # a whole number of steps per block
    rows = 1 if cache == "dual" or rng.random() < 0.7 else 2  # the official dual cache takes one row
    prompts = [prompt(rng) for _ in range(rows)]
    if cache == "prefix" and rows == 2:  # the official prefix cache fails on rows of unequal lengths
        prompts[1] = (prompts[1] * 14)[:len(prompts[0])]
    return g.fcase(rng.choice(MODELS), prompts, gen, steps, alg, cache,
                   block_size=block,
                   threshold=(rng.choice([0.5, 0.7, 0.9]) if alg == "confidence_threshold" else None),
                   temperature=temperature, top_p=(top_p if top_p is not None else 1.0), top_k=top_k,
                   alg_temp=(rng.choice([0.3, 0.5]) if rng.random() < 0.25 else 0.0),
                   eps=rng.choice([1e-3, 0.01]), seed=rng.randrange(1 << 20))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--official", default="/work/.mirror", help="folder of the fetched mirrors")
    parser.add_argument("--dllm-git", help="git dir of ZHZisZZ/dllm (default: under --official)")
    parser.add_argument("--draw", type=int, default=1, help="the random draw of cases")
    parser.add_argument("--cases", type=int, default=24, help="cases of each kind")
    args = parser.parse_args()
    dllm_git = args.dllm_git or os.path.join(args.official, "ZHZisZZ+dllm", "repo")

    torch.set_num_threads(1)
    g.check_draw_identities()
    g.install_dream_standins()
    rng = random.Random(f"unmask dream fresh draw {args.draw}")
    generate_cases = [generate_case(rng) for _ in range(args.cases)]
    fast_cases = [fast_case(rng) for _ in range(args.cases)]
    tmp = tempfile.mkdtemp(prefix="dream-fresh-")
    try:
        official = g.Official(tmp, dllm_git)
        models, fast_models = {}, {}
        for name in g.CHECKPOINTS:
            models[name], fast_models[name] = g.load_models(official, os.path.join(DATA, name))
        provenance = {"dllm": {"repo": "ZHZisZZ/dllm", "commit": g.git_head(dllm_git), "files": g.DLLM_FILES},
                      "torch": torch.__version__, "dtype": "float32 on CPU, weights upcast from the bf16 checkpoints"}
        common = {"provenance": provenance, "draw": args.draw, "mask_id": MASK_ID, "eos_id": EOS_ID, "pad_id": PAD_ID,
                  "special_tokens": {c: {"id": i, "published_id": PUBLISHED_IDS[c]} for c, i in SPECIAL_TOKENS},
                  "checkpoints": g.DESCRIPTIONS}
        write_json(os.path.join(DATA, "tiny-dream.fresh.golden.json"), dict(
            reference="ZHZisZZ/dllm dllm/pipelines/dream/models: DreamGenerationMixin.diffusion_generate, float32; "
                      "cases drawn at random by tools/golden/make_dream_fresh_golden.py",
            **common, cases=[g.run_generate(official, models[c["model"]], c) for c in generate_cases]),
            compact_lists=True)
        write_json(os.path.join(DATA, "tiny-dream.fastdllm.fresh.golden.json"), dict(
            reference="ZHZisZZ/dllm dllm/pipelines/fastdllm/dream: FastdLLMDreamSampler.sample, float32; "
                      "cases drawn at random by tools/golden/make_dream_fresh_golden.py",
            **common, cases=[g.run_fast_case(official, fast_models[c["model"]], c) for c in fast_cases]),
            compact_lists=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
