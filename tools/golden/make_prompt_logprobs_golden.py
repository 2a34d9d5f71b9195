#!/usr/bin/env python3
"""Golden data for prompt log-probabilities (GenerationParams.prompt_logprobs, `echo` with
`logprobs`), computed by the official models and checked against the official estimators.

Makes tests/data/prompt-logprobs.golden.json from the checkpoints already in tests/data
(tiny-llada-moe: bidirectional LLaDA; tiny-llada2: block-causal attention; tiny-dream: shifted
prediction). Token j of a prompt of L tokens is scored with the tokens before it given and
positions j .. L-1 masked, reading the model's distribution at j (Dream: at j - 1, as its official
code shifts the logits). Each case records, per token, its log-probability and its k most likely
alternatives there (the first token has none), from the official modeling code:
  ZHZisZZ/dllm  dllm/pipelines/llada/models/modeling_lladamoe.py (LLaDAMoEModelLM)
                dllm/pipelines/llada2/models/modeling_llada2_moe.py (LLaDA2MoeModelLM, with the
                block-causal mask its generate() builds)
                dllm/pipelines/dream/models/modeling_dream.py (DreamModel)
and checks the definition against two official estimators, whose values the file records too:
  ML-GSAI/LLaDA get_log_likelihood.py get_log_likelihood(prompt[:-1], prompt[-1:], mc_num=1):
                the last token's value (one masked answer token: its one Monte Carlo sample is exact)
  ZHZisZZ/dllm  dllm/pipelines/dream/eval.py DreamEvalHarness._eval_target_nll_ar (nll_type
                ar_ftb, log_type ftb): minus the sum of the continuation's values, for a split of
                the prompt into context and continuation
The official files are read at run time from the git mirrors (never copied into the project): the
models through make_moe_golden.py's and make_dream_golden.py's loaders, get_log_likelihood.py as a
module, and the two DreamEvalHarness methods compiled alone from eval.py's syntax tree (the module
imports lm_eval, which is not installed).

Re-run (Debian's python3-torch 1.13 + numpy; deterministic):
    /usr/bin/python3 tools/golden/make_prompt_logprobs_golden.py --official /work/.mirror
Tests never run this.
"""

import argparse
import ast
import contextlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types

import torch
import torch.nn.functional as F

import make_dream_golden as dream
import make_moe_golden as moe
from dream_standins import install_dream_standins
from hf_checkpoint_files import DATA, write_json

K = 3  # alternatives recorded per token
CASES = [
    # model, family, prompt, block_length (LLaDA2's block-causal attention), Dream split
    ("tiny-llada-moe", "lladamoe", [17, 230, 45, 301, 8, 99, 150, 420, 3, 77], None),
    ("tiny-llada-moe-gqa", "lladamoe", [120, 7, 388, 64, 250, 31, 402], None),
    ("tiny-llada2", "llada2", [17, 230, 45, 301, 8, 99, 150, 420, 3, 77, 12], 4),
    ("tiny-dream", "dream", [17, 230, 45, 301, 8, 99, 150, 420, 3], None),
    ("tiny-dream-tied", "dream", [120, 7, 388, 64, 250, 31], None),
]
DREAM_SPLIT = 4  # context = the first 4 tokens, continuation the rest


def rows_for(prompt, mask_id):
    """Row j - 1 scores token j: the tokens before j, then masks to the prompt's end."""
    length = len(prompt)
    return torch.tensor([prompt[:j] + [mask_id] * (length - j) for j in range(1, length)])


def official_logits(family, model, rows, block_length):
    with torch.no_grad():
        if family == "lladamoe":
            return model(rows).logits
        if family == "llada2":
            length = rows.shape[1]
            padded = -(-length // block_length) * block_length
            mask = moe.block_diffusion_mask(padded, block_length)[..., :length, :length]
            return model(rows, attention_mask=mask, position_ids=torch.arange(length)[None]).logits
        logits = model(rows).logits  # Dream: the official right shift
        return torch.cat([logits[:, :1], logits[:, :-1]], dim=1)


def score(family, model, prompt, mask_id, block_length):
    logits = official_logits(family, model, rows_for(prompt, mask_id), block_length)
    tokens = [None]
    for j in range(1, len(prompt)):
        logp = torch.log_softmax(logits[j - 1, j].float(), dim=-1)
        values, ids = torch.topk(logp, K)
        tokens.append({"token": prompt[j], "logprob": round(logp[prompt[j]].item(), 6),
                       "top": [[int(i), round(v, 6)] for i, v in zip(ids.tolist(), values.tolist())]})
    return tokens


def llada_get_log_likelihood(tmp, llada_git):
    path = os.path.join(tmp, "official_get_log_likelihood.py")
    with open(path, "wb") as f:
        f.write(subprocess.check_output(["git", "--git-dir", llada_git, "show", "HEAD:get_log_likelihood.py"]))
    sys.path.insert(0, tmp)
    return importlib.import_module("official_get_log_likelihood").get_log_likelihood


class CpuTorch(types.ModuleType):
    """torch, but torch.amp.autocast("cuda", ...) is a null context: on CPU tensors it changes
    nothing (newer torch disables it with a warning; torch 1.13 without CUDA raises instead)."""

    amp = types.SimpleNamespace(autocast=lambda *args, **kwargs: contextlib.nullcontext())

    def __getattr__(self, name):
        return getattr(torch, name)


def compiled_methods(git_dir, path, class_name, names, namespace):
    """The named methods of a class, compiled alone from the file's syntax tree (the module itself
    may import what is not installed here)."""
    source = subprocess.check_output(["git", "--git-dir", git_dir, "show", "HEAD:" + path], text=True)
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    wanted = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name in names]
    assert len(wanted) == len(names), (class_name, names)
    exec(compile(ast.Module(body=wanted, type_ignores=[]), path, "exec"), namespace)
    return type(class_name + "Methods", (), {f.name: namespace[f.name] for f in wanted})


def dream_harness(dllm_git):
    """DreamEvalHarness's _get_logits and _eval_target_nll_ar, compiled alone from eval.py."""
    return compiled_methods(dllm_git, "dllm/pipelines/dream/eval.py", "DreamEvalHarness",
                            ["_get_logits", "_eval_target_nll_ar"], {"torch": CpuTorch("torch"), "F": F})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--official", default="/work/.mirror", help="folder of the fetched mirrors (<owner>+<name>/repo)")
    args = parser.parse_args()
    dllm_git = os.path.join(args.official, "ZHZisZZ+dllm", "repo")
    llada_git = os.path.join(args.official, "ML-GSAI+LLaDA", "repo")

    torch.set_num_threads(1)
    install_dream_standins()
    tmp = tempfile.mkdtemp(prefix="prompt-logprobs-golden-")
    try:
        moe_official = moe.Official(os.path.join(tmp, "moe"), dllm_git, llada_git)
        dream_official = dream.Official(os.path.join(tmp, "dream"), dllm_git)
        get_log_likelihood = llada_get_log_likelihood(tmp, llada_git)
        methods = dream_harness(dllm_git)
        cases = []
        for name, family, prompt, block_length in CASES:
            folder = os.path.join(DATA, name)
            mask_id = json.load(open(os.path.join(DATA, "tiny-dream.golden.json")))["mask_id"] if family == "dream" \
                else moe.MASK_ID
            if family == "dream":
                model = dream.load_models(dream_official, folder)[0]
            else:
                model = moe.load_model(moe_official, folder)
            tokens = score(family, model, prompt, mask_id, block_length)
            case = {"model": name, "prompt": prompt, "k": K, "tokens": tokens}
            if block_length:
                case["block_length"] = block_length
            if family == "lladamoe":
                value = get_log_likelihood(model, torch.tensor(prompt[:-1]), torch.tensor(prompt[-1:]), mc_num=1,
                                           batch_size=1, mask_id=mask_id)
                assert abs(value - tokens[-1]["logprob"]) < 1e-4, (name, value, tokens[-1])
                case["official_llada_get_log_likelihood_last_token"] = round(value, 6)
            if family == "dream":
                harness = methods()
                harness.model, harness.mask_id, harness.device = model, mask_id, torch.device("cpu")
                harness.batch_size, harness.log_type, harness.nll_type = 32, "ftb", "ar_ftb"
                with torch.no_grad():
                    nll = harness._eval_target_nll_ar(torch.tensor(prompt[:DREAM_SPLIT]), torch.tensor(prompt[DREAM_SPLIT:]))
                ours = sum(t["logprob"] for t in tokens[DREAM_SPLIT:])
                assert abs(-nll - ours) < 1e-3, (name, nll, ours)
                case["official_dream_ar_ftb"] = {"context_tokens": DREAM_SPLIT, "loglikelihood": round(-nll, 6)}
            cases.append(case)
        provenance = {
            "dllm": {"repo": "ZHZisZZ/dllm", "commit": moe.git_head(dllm_git)},
            "llada": {"repo": "ML-GSAI/LLaDA", "commit": moe.git_head(llada_git), "files": ["get_log_likelihood.py"]},
            "torch": torch.__version__, "dtype": "float32 on CPU, weights upcast from the bf16 checkpoints",
        }
        golden = {
            "reference": "token j of the prompt given tokens [0, j) and masks at [j, L), the official models' "
                         "log-softmax at j (Dream: at j - 1); the first token has none",
            "provenance": provenance, "cases": cases,
        }
        write_json(os.path.join(DATA, "prompt-logprobs.golden.json"), golden, compact_lists=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
