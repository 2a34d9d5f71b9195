#!/usr/bin/env python3
"""Golden data for LLaDA2.1 (token editing), computed by the official code.

Makes, under tests/data/:
  tiny-llada21/, tiny-llada21-kv0/      LLaDA2.1 layout (LLaDA2MoeModelLM, model_type llada21_moe)
  tiny-llada21.golden.json              forward logits and generate() traces of both
Each checkpoint folder holds config.json, two bf16 safetensors shards with their index,
tokenizer.json and tokenizer_config.json, exactly as make_moe_golden.py writes the LLaDA2.0 ones.
tests/data/moe-golden.md (section "LLaDA2.1") describes all of it.

The official code is never copied into the project. It is read at run time from the local git
mirror of ZHZisZZ/dllm (`git show HEAD:<path>`) into a temporary folder and imported from there:
  dllm/pipelines/llada21/models/configuration_llada21_moe.py
  dllm/pipelines/llada21/models/modeling_llada21_moe.py   (LLaDA2MoeModelLM.generate)
The `transformers` stand-ins (transformers_standins.py), the checkpoint writer/reader
(hf_checkpoint_files.py) and the shared helpers of make_moe_golden.py (config shape, random
weights, forward recording, the multinomial identity check) are reused as they are.

Re-run (Debian's python3-torch 1.13 + numpy, nothing else; deterministic: fixed seeds, one
thread). The mirror comes from the agent `fetch` tool (github:ZHZisZZ/dllm), which leaves it at
<dir>/ZHZisZZ+dllm/repo:
    /usr/bin/python3 tools/golden/make_llada21_golden.py --official /work/.mirror
--dllm-git points at the git directory directly instead. Tests never run this.
"""

import argparse
import contextlib
import importlib
import json
import os
import shutil
import sys
import tempfile

import torch

from hf_checkpoint_files import DATA, EOS_ID, MASK_ID, load_checkpoint, save_checkpoint, write_json, write_tokenizer
from make_moe_golden import (P6, P9, RANDOM_DRAWS_LLADA2, check_multinomial_identity, extract, git_head,
                             llada2_config, llada2_forward, random_state, recorded_forward)
from transformers_standins import install_standins

DLLM_FILES = {
    "official_llada21/configuration_llada21_moe.py":
        "dllm/pipelines/llada21/models/configuration_llada21_moe.py",
    "official_llada21/modeling_llada21_moe.py": "dllm/pipelines/llada21/models/modeling_llada21_moe.py",
}


# =============================================================================================
# Configurations and checkpoints.
# =============================================================================================

def llada21_config(**overrides):
    """The LLaDA2.0 tiny shape (llada2_config) under LLaDA2.1's model_type; the architecture and
    auto_map name the class and files of dllm's llada21 package (LLaDA2.1 reuses the LLaDA2.0
    class names)."""
    config = llada2_config(**overrides)
    config.update({
        "architectures": ["LLaDA2MoeModelLM"],
        "auto_map": {"AutoConfig": "configuration_llada21_moe.LLaDA2MoeConfig",
                     "AutoModel": "modeling_llada21_moe.LLaDA2MoeModel",
                     "AutoModelForCausalLM": "modeling_llada21_moe.LLaDA2MoeModelLM"},
        "model_type": "llada21_moe",
    })
    return dict(sorted(config.items(), key=lambda kv: kv[0] not in ("architectures", "auto_map", "model_type")))


# name -> (config, weight seed, LM-head scale, EOS row taken from this token)
HEAD_SCALE = 2.0  # a power of two: scaling the bf16 head is exact
CHECKPOINTS = {
    "tiny-llada21": (llada21_config(), 211, HEAD_SCALE, 217),
    # num_key_value_heads 0: the LLaDA2.1 config class reads it as num_attention_heads (4).
    "tiny-llada21-kv0": (llada21_config(num_key_value_heads=0), 212, HEAD_SCALE, 217),
}
DESCRIPTIONS = {
    "tiny-llada21": "tiny-llada2's shape (3 layers, layer 0 dense, 4 heads / 2 KV heads, head_dim 16, rotary 8, "
                    "16 experts top-4, 1 shared expert), own weights, lm_head.weight x 2 (exact in bf16)",
    "tiny-llada21-kv0": "tiny-llada21 with num_key_value_heads 0 in config.json (the config class turns it into "
                        "num_attention_heads = 4: plain MHA), own weights, lm_head.weight x 2",
}


# =============================================================================================
# Model.
# =============================================================================================

class Official:
    def __init__(self, tmp, dllm_git):
        extract(dllm_git, DLLM_FILES, tmp)
        sys.path.insert(0, tmp)
        self.config = importlib.import_module("official_llada21.configuration_llada21_moe")
        self.modeling = importlib.import_module("official_llada21.modeling_llada21_moe")

    def build(self, config_json):
        config = self.config.LLaDA2MoeConfig(**config_json)
        # LLaDA2.1's LLaDA2MoeModel.forward passes a 4-D float mask through unchanged whatever the
        # attention implementation, and its eager_attention_forward adds it to the float32
        # scores: the file's own code path, no stand-in needed (real SDPA would compute the same).
        config._attn_implementation = "eager"
        return self.modeling.LLaDA2MoeModelLM(config).eval()


def load_model(official, folder):
    config = json.load(open(os.path.join(folder, "config.json")))
    model = official.build(config)
    model.load_state_dict({k: v.float() for k, v in load_checkpoint(folder).items()}, strict=True)
    return model.float().eval()


# =============================================================================================
# Recording.
# =============================================================================================

@contextlib.contextmanager
def recorded_sampler(model):
    """Wraps model._sample_with_temperature_topk_topp (generate() calls it once per forward, on
    the current block's logits) and keeps its (tokens, probabilities)."""
    calls = []
    original = model._sample_with_temperature_topk_topp

    def sample(*args, **kwargs):
        token, prob = original(*args, **kwargs)
        calls.append((token.clone(), prob.clone()))
        return token, prob

    model._sample_with_temperature_topk_topp = sample
    try:
        yield calls
    finally:
        del model._sample_with_temperature_topk_topp


def run_case(model, case):
    """Runs generate() and rebuilds, per model call, what changed in the block it denoised.

    The window of call i is x[:, :(b+1)*block_length]; the block's state after call i is the
    same block in the window of call i+1 (the block loop changes nothing between a block's last
    forward and the next block's first one), and after the last call it is the live view of
    generate's canvas."""
    prompt = torch.tensor(case["prompt"])
    prompt_length, block_length = prompt.shape[1], case["block_length"]
    with recorded_forward(model) as calls, recorded_sampler(model) as samples:
        torch.manual_seed(case["seed"])
        output = model.generate(
            inputs=prompt, temperature=case["temperature"], block_length=block_length, steps=case["steps"],
            gen_length=case["gen_length"], top_p=case["top_p"], top_k=case["top_k"],
            eos_early_stop=case["eos_early_stop"], minimal_topk=case["minimal_topk"], threshold=case["threshold"],
            editing_threshold=case["editing_threshold"], max_post_steps=case["max_post_steps"],
            eos_id=case["eos_id"], mask_id=case["mask_id"], num_to_transfer=case["num_to_transfer"])
    assert len(samples) == len(calls)
    windows = [c[0][0] for c in calls]
    canvas = calls[-1][1][0]
    trace = []
    for i, window in enumerate(windows):
        end = window.shape[0]
        after = windows[i + 1][:end] if i + 1 < len(windows) else canvas
        begin = end - block_length
        before, after = window[begin:], after[begin:]
        assert torch.equal(window[:begin], (windows[i + 1] if i + 1 < len(windows) else canvas)[:begin])
        was_mask = before == MASK_ID
        committed = [[begin + p - prompt_length, int(after[p])]
                     for p in (was_mask & (after != MASK_ID)).nonzero().flatten().tolist()]
        edited = [[begin + p - prompt_length, int(before[p]), int(after[p])]
                  for p in (~was_mask & (after != before)).nonzero().flatten().tolist()]
        assert all(e[0] >= 0 for e in edited), "a prompt position was edited"
        token, prob = samples[i]
        for p, new in [(c[0], c[1]) for c in committed] + [(e[0], e[2]) for e in edited]:
            assert new == int(token[0, p + prompt_length - begin]), "a change is not the sampled token"
        for p, _, _ in edited:
            assert prob[0, p + prompt_length - begin] > case["editing_threshold"], "an edit below the threshold"
        trace.append({"block": end // block_length - 1, "masked_before": int(was_mask.sum()),
                      "committed": committed, "edited": edited,
                      "x0": token[0].tolist(), "x0_p": [round(v, 6) for v in prob[0].tolist()]})
    out = output[0].tolist()
    generated = canvas[prompt_length:prompt_length + case["gen_length"]].tolist()
    assert out == generated[:generated.index(EOS_ID) + 1 if EOS_ID in generated else len(generated)]
    summary = {"commits": sum(len(t["committed"]) for t in trace), "edits": sum(len(t["edited"]) for t in trace),
               "post_calls": sum(1 for t in trace if t["masked_before"] == 0),
               "max_commits_per_call": max(len(t["committed"]) for t in trace),
               "ends_with_eos": bool(out) and out[-1] == EOS_ID}
    return dict(case, output=out, nfe=len(calls), summary=summary, calls=trace, canvas=canvas.tolist())


# =============================================================================================
# Cases.
# =============================================================================================

def case(model, prompt, gen_length, block_length, steps=8, threshold=0.9, editing_threshold=0.9, max_post_steps=16,
         num_to_transfer=1, minimal_topk=1, temperature=0.0, top_k=None, top_p=None, eos_early_stop=False,
         seed=0):
    return dict(model=model, prompt=prompt, gen_length=gen_length, block_length=block_length, steps=steps,
                threshold=threshold, editing_threshold=editing_threshold, max_post_steps=max_post_steps,
                num_to_transfer=num_to_transfer, minimal_topk=minimal_topk, temperature=temperature, top_k=top_k,
                top_p=top_p, eos_early_stop=eos_early_stop, eos_id=EOS_ID, mask_id=MASK_ID, seed=seed)


P8 = [[17, 230, 45, 301, 8, 99, 150, 420]]  # ends on a block boundary for block_length 4 and 8
PE = [[385, 435, 308, 445, 25, 214]]  # greedy tiny-llada21 reaches EOS after these
PE8 = [[122, 270, 191, 53, 6, 18, 91, 379]]

CASES = [
    # Greedy; editing_threshold 0.9 (a few edits), 0.5 (many edits: block 1 still edits in its
    # 5th post step, so max_post_steps ends it) and 1.0 (no edit can pass the strict >).
    case("tiny-llada21", P6, 16, 8),
    case("tiny-llada21", P6, 16, 8, editing_threshold=0.5, max_post_steps=5),
    case("tiny-llada21", P6, 16, 8, editing_threshold=1.0),
    # Several commits per call (threshold 0.5); max_post_steps 0 (no call once the block is full)
    # and 2.
    case("tiny-llada21", P9, 16, 8, threshold=0.5, editing_threshold=0.7, max_post_steps=0),
    case("tiny-llada21", P9, 16, 8, threshold=0.5, editing_threshold=0.7, max_post_steps=2),
    # The prompt ends on a block boundary; num_to_transfer 2 and 3; gen_length not a multiple of
    # block_length (the last block is padded and denoised in full); minimal_topk / steps unused.
    case("tiny-llada21", P8, 12, 4, threshold=0.7, editing_threshold=0.6, num_to_transfer=2),
    case("tiny-llada21", P6, 13, 8, threshold=0.8, editing_threshold=0.8, num_to_transfer=3, max_post_steps=4),
    case("tiny-llada21", P9, 10, 4, steps=2, minimal_topk=4, editing_threshold=0.6),
    # Sampled: top-k, top-p, both.
    case("tiny-llada21", P6, 16, 8, temperature=0.8, top_k=20, editing_threshold=0.6, seed=3),
    case("tiny-llada21", P9, 16, 8, threshold=0.8, temperature=1.0, top_p=0.9, editing_threshold=0.8, seed=11),
    case("tiny-llada21", P8, 16, 8, threshold=0.6, temperature=0.7, top_k=50, top_p=0.8, num_to_transfer=2,
         editing_threshold=0.7, max_post_steps=3, seed=5),
    # EOS, with and without early stop (only the number of calls differs).
    case("tiny-llada21", PE, 16, 8, threshold=0.7, editing_threshold=0.6, max_post_steps=4, eos_early_stop=True),
    case("tiny-llada21", PE, 16, 8, threshold=0.7, editing_threshold=0.6, max_post_steps=4, eos_early_stop=False),
    case("tiny-llada21", PE8, 16, 8, threshold=0.7, editing_threshold=0.6, max_post_steps=4, eos_early_stop=True),
    # num_key_value_heads 0.
    case("tiny-llada21-kv0", P6, 16, 8, editing_threshold=0.6),
    case("tiny-llada21-kv0", P8, 16, 8, threshold=0.7, temperature=0.9, editing_threshold=0.6, seed=10),
]


# =============================================================================================
# Main.
# =============================================================================================

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--official", default="/work/.mirror",
                        help="folder of the fetched mirrors (<owner>+<name>/repo)")
    parser.add_argument("--dllm-git", help="git dir of ZHZisZZ/dllm (default: under --official)")
    parser.add_argument("--explore", action="store_true", help="print case summaries, write nothing but checkpoints")
    args = parser.parse_args()
    dllm_git = args.dllm_git or os.path.join(args.official, "ZHZisZZ+dllm", "repo")

    torch.set_num_threads(1)
    check_multinomial_identity()
    install_standins()
    tmp = tempfile.mkdtemp(prefix="llada21-golden-")
    try:
        official = Official(tmp, dllm_git)
        for name, (config, seed, head_scale, eos_from) in CHECKPOINTS.items():
            model = official.build(config)
            folder = os.path.join(DATA, name)
            save_checkpoint(folder, random_state(model, seed, head_scale, eos_from), config)
            write_tokenizer(folder)
        models = {name: load_model(official, os.path.join(DATA, name)) for name in CHECKPOINTS}
        cases = [run_case(models[c["model"]], c) for c in CASES]
        if args.explore:
            for c in cases:
                print(c["model"], c["prompt"], {k: c[k] for k in ("gen_length", "block_length", "threshold",
                      "editing_threshold", "max_post_steps", "num_to_transfer", "temperature", "eos_early_stop")},
                      c["nfe"], c["summary"], c["output"])
            return
        golden = {
            "reference": "ZHZisZZ/dllm modeling_llada21_moe.py LLaDA2MoeModelLM.generate, float32",
            "provenance": {
                "dllm": {"repo": "ZHZisZZ/dllm", "commit": git_head(dllm_git), "files": sorted(DLLM_FILES.values())},
                "torch": torch.__version__, "mkl": torch.backends.mkl.is_available(),
                "dtype": "float32 on CPU, weights upcast from the bf16 (expert_bias: f32) checkpoints",
            },
            "mask_id": MASK_ID, "eos_id": EOS_ID,
            "checkpoints": DESCRIPTIONS, "head_scale": HEAD_SCALE,
            "random_draws": RANDOM_DRAWS_LLADA2,
            "forward": [llada2_forward(models[n], n, 1) for n in CHECKPOINTS],
            "cases": cases,
        }
        write_json(os.path.join(DATA, "tiny-llada21.golden.json"), golden, compact_lists=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
