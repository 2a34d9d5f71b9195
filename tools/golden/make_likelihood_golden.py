#!/usr/bin/env python3
"""Golden data for the Monte Carlo likelihood (GenerationParams.likelihood), computed by the
official evaluation code on the official models.

Makes tests/data/likelihood.golden.json from the checkpoints already in tests/data. Each case is a
context, a continuation, mc_num, batch_size, cfg_scale and a seed; its value is what the official
code returns after torch.manual_seed(seed):
  LLaDA-MoE  ML-GSAI/LLaDA get_log_likelihood.py get_log_likelihood(model, context, continuation,
             mc_num, batch_size, cfg_scale, mask_id), and with check_greedy eval_llada.py's
             LLaDAEvalHarness.suffix_greedy_prediction (compiled alone from the file's syntax tree:
             the module imports lm_eval and accelerate, which are not installed)
  Dream      ZHZisZZ/dllm dllm/pipelines/dream/eval.py DreamEvalHarness._eval_target_nll_mc
             (nll_type mc, log_type ftb, sampling_eps 1e-3), with its _forward_process and
             _get_logits, compiled alone the same way; the value is minus its result
The models are the official modeling code (ZHZisZZ/dllm), loaded as make_moe_golden.py and
make_dream_golden.py load them. One LLaDA-MoE case takes as its continuation what the greedy
check itself unmasks from the context, so that one greedy answer is true.

Re-run (Debian's python3-torch 1.13 + numpy; deterministic):
    /usr/bin/python3 tools/golden/make_likelihood_golden.py --official /work/.mirror
Tests never run this.
"""

import argparse
import json
import os
import shutil
import tempfile

import torch
import torch.nn.functional as F

import make_dream_golden as dream
import make_moe_golden as moe
from dream_standins import install_dream_standins
from hf_checkpoint_files import DATA, write_json
from make_prompt_logprobs_golden import CpuTorch, compiled_methods, llada_get_log_likelihood

CONTEXT = [17, 230, 45, 301, 8]
CONTINUATION = [99, 150, 420, 3, 77]
# model, family, context, continuation, mc_num, batch_size, cfg_scale, seed, check_greedy
CASES = [
    ("tiny-llada-moe", "lladamoe", CONTEXT, CONTINUATION, 8, 4, 0.0, 7, True),
    ("tiny-llada-moe", "lladamoe", CONTEXT, CONTINUATION, 6, 3, 0.5, 11, True),
    ("tiny-llada-moe", "lladamoe", CONTEXT, "greedy", 4, 4, 0.0, 5, True),
    ("tiny-llada-moe", "lladamoe", [], [120, 7, 388, 64], 4, 2, 0.0, 1, False),
    ("tiny-llada-moe-gqa", "lladamoe", [120, 7, 388, 64, 250, 31], [402], 4, 2, 0.0, 3, True),
    ("tiny-llada-moe-gqa", "lladamoe", [120, 7], [388, 64, 250, 31, 402, 9, 13], 14, 7, 0.0, 42, False),
    ("tiny-dream", "dream", [17, 230, 45, 301], [8, 99, 150, 420, 3], 8, 4, 0.0, 3, False),
    ("tiny-dream-tied", "dream", [120, 7], [388, 64, 250, 31], 6, 2, 0.0, 9, False),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--official", default="/work/.mirror", help="folder of the fetched mirrors (<owner>+<name>/repo)")
    args = parser.parse_args()
    dllm_git = os.path.join(args.official, "ZHZisZZ+dllm", "repo")
    llada_git = os.path.join(args.official, "ML-GSAI+LLaDA", "repo")

    torch.set_num_threads(1)
    install_dream_standins()
    tmp = tempfile.mkdtemp(prefix="likelihood-golden-")
    try:
        moe_official = moe.Official(os.path.join(tmp, "moe"), dllm_git, llada_git)
        dream_official = dream.Official(os.path.join(tmp, "dream"), dllm_git)
        get_log_likelihood = llada_get_log_likelihood(tmp, llada_git)
        llada_methods = compiled_methods(llada_git, "eval_llada.py", "LLaDAEvalHarness",
                                         ["get_logits", "suffix_greedy_prediction"], {"torch": torch, "F": F})
        dream_methods = compiled_methods(dllm_git, "dllm/pipelines/dream/eval.py", "DreamEvalHarness",
                                         ["_forward_process", "_get_logits", "_eval_target_nll_mc"],
                                         {"torch": CpuTorch("torch"), "F": F})
        dream_mask = json.load(open(os.path.join(DATA, "tiny-dream.golden.json")))["mask_id"]
        cases = []
        for name, family, context, continuation, mc_num, batch_size, cfg, seed, check_greedy in CASES:
            folder = os.path.join(DATA, name)
            case = {"model": name, "context": context, "mc_num": mc_num, "batch_size": batch_size,
                    "cfg_scale": cfg, "seed": seed}
            if family == "lladamoe":
                model = moe.load_model(moe_official, folder)
                harness = llada_methods()
                harness.model, harness.mask_id, harness.device = model, moe.MASK_ID, torch.device("cpu")
                harness.cfg, harness.is_check_greedy = cfg, True
                if continuation == "greedy":  # what the greedy check unmasks from the context
                    length = len(CONTINUATION)
                    seq = torch.tensor([context + [moe.MASK_ID] * length])
                    prompt_index = torch.arange(seq.shape[1]) < len(context)
                    with torch.no_grad():
                        for _ in range(length):
                            mask_index = seq == moe.MASK_ID
                            logits = harness.get_logits(seq, prompt_index)[mask_index]
                            x0 = torch.argmax(logits, dim=-1)
                            confidence = torch.softmax(logits.float(), -1).gather(-1, x0[:, None])[:, 0]
                            x0[torch.sort(confidence, descending=True)[1][1:]] = moe.MASK_ID
                            seq[mask_index] = x0
                    continuation = seq[0, len(context):].tolist()
                torch.manual_seed(seed)
                value = get_log_likelihood(model, torch.tensor(context, dtype=torch.long),
                                           torch.tensor(continuation, dtype=torch.long), mc_num=mc_num,
                                           batch_size=batch_size, cfg_scale=cfg, mask_id=moe.MASK_ID)
                if check_greedy:
                    greedy = harness.suffix_greedy_prediction(torch.tensor(context, dtype=torch.long),
                                                              torch.tensor(continuation, dtype=torch.long))
                    case["greedy"] = bool(greedy)
            else:
                model = dream.load_models(dream_official, folder)[0]
                harness = dream_methods()
                harness.model, harness.mask_id, harness.device = model, dream_mask, torch.device("cpu")
                harness.batch_size, harness.mc_num, harness.log_type = batch_size, mc_num, "ftb"
                harness.sampling_eps = 1e-3
                torch.manual_seed(seed)
                with torch.no_grad():
                    value = -harness._eval_target_nll_mc(torch.tensor(context, dtype=torch.long),
                                                         torch.tensor(continuation, dtype=torch.long))
            case["continuation"] = continuation
            case["loglikelihood"] = round(float(value), 6)
            cases.append(case)
            print(name, case["loglikelihood"], case.get("greedy"))
        provenance = {
            "dllm": {"repo": "ZHZisZZ/dllm", "commit": moe.git_head(dllm_git),
                     "files": ["dllm/pipelines/dream/eval.py"]},
            "llada": {"repo": "ML-GSAI/LLaDA", "commit": moe.git_head(llada_git),
                      "files": ["get_log_likelihood.py", "eval_llada.py"]},
            "torch": torch.__version__, "dtype": "float32 on CPU, weights upcast from the bf16 checkpoints",
        }
        golden = {
            "reference": "the official Monte Carlo log-likelihood of the continuation given the context after "
                         "torch.manual_seed(seed) (LLaDA-MoE: get_log_likelihood; Dream: DreamEvalHarness "
                         "_eval_target_nll_mc, ftb), and LLaDA's suffix_greedy_prediction",
            "provenance": provenance, "cases": cases,
        }
        write_json(os.path.join(DATA, "likelihood.golden.json"), golden, compact_lists=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
