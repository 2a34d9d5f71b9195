#!/usr/bin/env python3
"""Golden data for LLaDA-MoE and LLaDA2.x (issue 29), computed by the official code.

Makes, under tests/data/:
  tiny-llada-moe/, tiny-llada-moe-gqa/          LLaDA-MoE-7B-A1B layout (LLaDAMoEModelLM)
  tiny-llada2/, tiny-llada2-grouped/,
  tiny-llada2-confident/                        LLaDA2.0-mini layout (LLaDA2MoeModelLM)
  tiny-llada-moe.golden.json, tiny-llada2.golden.json
Each checkpoint folder holds config.json, two bf16 safetensors shards with their index,
tokenizer.json and tokenizer_config.json. tests/data/moe-golden.md describes all of it.

The official code is never copied into the project. It is read at run time from local git
mirrors (`git show HEAD:<path>`) into a temporary folder and imported from there:
  ZHZisZZ/dllm   dllm/pipelines/llada/models/{configuration,modeling}_lladamoe.py
                 dllm/pipelines/llada2/models/{configuration,modeling}_llada2_moe.py
                 (LLaDA2MoeModelLM.generate is in the modeling file)
  ML-GSAI/LLaDA  generate.py (the LLaDA generate() that LLaDA-MoE's model card uses)
Those files import parts of `transformers`, which is not installed here; install_standins()
(transformers_standins.py) puts the smallest stand-ins for exactly what they import into
sys.modules, each one documented where it is defined. hf_checkpoint_files.py writes and reads the
checkpoints' files; this file holds the configurations, runs the official code and records it.

Re-run (Debian's python3-torch 1.13 + numpy, nothing else; deterministic: fixed seeds, one
thread). The mirrors come from the agent `fetch` tool (github:ZHZisZZ/dllm, github:ML-GSAI/LLaDA),
which leaves them at <dir>/<owner>+<name>/repo:
    /usr/bin/python3 tools/golden/make_moe_golden.py --official /work/.mirror
--dllm-git / --llada-git point at the two git directories directly instead. Tests never run this.
"""

import argparse
import contextlib
import importlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import torch

from hf_checkpoint_files import (DATA, EOS_ID, MASK_ID, VOCAB_SIZE, load_checkpoint, save_checkpoint, write_json,
                                 write_tokenizer)
from transformers_standins import ALL_ATTENTION_FUNCTIONS, install_standins

DLLM_FILES = {
    "official_lladamoe/configuration_lladamoe.py":
        "dllm/pipelines/llada/models/configuration_lladamoe.py",
    "official_lladamoe/modeling_lladamoe.py": "dllm/pipelines/llada/models/modeling_lladamoe.py",
    "official_llada2/configuration_llada2_moe.py":
        "dllm/pipelines/llada2/models/configuration_llada2_moe.py",
    "official_llada2/modeling_llada2_moe.py": "dllm/pipelines/llada2/models/modeling_llada2_moe.py",
}
LLADA_FILES = {"official_llada_generate.py": "generate.py"}

# =============================================================================================
# Official code: extraction and import.
# =============================================================================================

def git_head(gitdir):
    return subprocess.check_output(["git", "--git-dir", gitdir, "rev-parse", "HEAD"], text=True).strip()


def extract(gitdir, files, dest):
    for local, path in files.items():
        target = os.path.join(dest, local)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(subprocess.check_output(["git", "--git-dir", gitdir, "show", f"HEAD:{path}"]))
    for package in {os.path.dirname(local) for local in files if "/" in local}:
        open(os.path.join(dest, package, "__init__.py"), "w").close()



# =============================================================================================
# Configurations: field names of the published config.json files, tiny values.
# =============================================================================================

def lladamoe_config(**overrides):
    """LLaDA-MoE-7B-A1B: published model_type is "llada" (the dense LLaDA's), so loaders must
    tell the two apart by `architectures`. Published values: hidden 2048, 16 layers, 16 heads =
    16 KV heads, 64 experts top-8 of 1024, no shared expert, QK-norm, rope_theta 50000."""
    config = {
        "architectures": ["LLaDAMoEModelLM"],
        "auto_map": {"AutoConfig": "configuration_lladamoe.LLaDAMoEConfig",
                     "AutoModel": "modeling_lladamoe.LLaDAMoEModelLM",
                     "AutoModelForCausalLM": "modeling_lladamoe.LLaDAMoEModelLM"},
        "model_type": "llada",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": None,
        "clip_qkv": None,
        "dense_intermediate_size": 128,
        "eos_token_id": EOS_ID,
        "expert_intermediate_size": 32,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "max_position_embeddings": 8192,
        "moe_layer_freq": [1, 1],
        "moe_router_enable_expert_bias": False,
        "moe_router_score_function": "softmax",
        "norm_topk_prob": False,
        "num_attention_heads": 4,
        "num_experts": 16,
        "num_experts_per_tok": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 4,
        "output_router_logits": False,
        "pad_token_id": EOS_ID,
        "partial_rotary_factor": 1.0,
        "qk_layernorm": True,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 50000,
        "routed_scaling_factor": 1,
        "router_aux_loss_coef": 0.01,
        "router_num_group": None,
        "router_topk_group": None,
        "shared_expert_intermediate_size": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.46.3",
        "use_cache": False,
        "vocab_size": VOCAB_SIZE,
    }
    config.update(overrides)
    return config


def llada2_config(**overrides):
    """LLaDA2.0-mini (published): hidden 2048, 20 layers, 16 heads, 4 KV heads, head_dim 128,
    partial_rotary_factor 0.5, first layer dense (5120), 256 experts top-8 of 512 in 8 groups
    (4 kept), 1 shared expert, routed_scaling_factor 2.5, sigmoid router with expert bias,
    rope_theta 600000, rms_norm_eps 1e-6."""
    config = {
        "architectures": ["LLaDA2MoeModelLM"],
        "auto_map": {"AutoConfig": "configuration_llada2_moe.LLaDA2MoeConfig",
                     "AutoModel": "modeling_llada2_moe.LLaDA2MoeModel",
                     "AutoModelForCausalLM": "modeling_llada2_moe.LLaDA2MoeModelLM"},
        "model_type": "llada2_moe",
        "attention_dropout": 0.0,
        "embedding_dropout": 0.0,
        "first_k_dense_replace": 1,
        "head_dim": 16,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 128,
        "max_position_embeddings": 32768,
        "max_window_layers": 28,
        "moe_intermediate_size": 32,
        "moe_router_enable_expert_bias": True,
        "n_group": 1,
        "norm_head": False,
        "norm_topk_prob": True,
        "num_attention_heads": 4,
        "num_experts": 16,
        "num_experts_per_tok": 4,
        "num_hidden_layers": 3,
        "num_key_value_heads": 2,
        "num_shared_experts": 1,
        "output_dropout": 0.0,
        "output_router_logits": False,
        "pad_token_id": EOS_ID,
        "partial_rotary_factor": 0.5,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 600000,
        "rotary_dim": 8,
        "routed_scaling_factor": 2.5,
        "router_dtype": "fp32",
        "score_function": "sigmoid",
        "tie_word_embeddings": False,
        "topk_group": 1,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.52.3",
        "use_bias": False,
        "use_cache": False,
        "use_qk_norm": True,
        "use_qkv_bias": False,
        "use_rmsnorm": True,
        "use_sliding_window": False,
        "vocab_size": VOCAB_SIZE,
    }
    config.update(overrides)
    return config


# name -> (family, config, weight seed, LM-head scale, EOS row taken from this token or None)
CHECKPOINTS = {
    "tiny-llada-moe": ("lladamoe", lladamoe_config(), 101, 1.0, None),
    # GQA, a dense first layer, a shared expert, expert bias and norm_topk_prob=true (which
    # modeling_lladamoe ignores: it hard-codes norm_topk_prob = False).
    "tiny-llada-moe-gqa": ("lladamoe", lladamoe_config(
        num_hidden_layers=3, num_key_value_heads=2, moe_layer_freq=[0, 1, 1], num_experts=8,
        num_experts_per_tok=2, shared_expert_intermediate_size=48, moe_router_enable_expert_bias=True,
        norm_topk_prob=True, partial_rotary_factor=0.5), 102, 1.0, None),
    "tiny-llada2": ("llada2", llada2_config(), 201, 1.0, 217),
    # All layers MoE, 4 groups of 4 experts (2 kept), 2 shared experts, MQA, head_dim 32 > hidden/heads.
    "tiny-llada2-grouped": ("llada2", llada2_config(
        first_k_dense_replace=0, num_hidden_layers=2, head_dim=32, rotary_dim=16, num_key_value_heads=1,
        n_group=4, topk_group=2, num_shared_experts=2), 202, 1.0, None),
    # tiny-llada2 with the LM head x CONFIDENT_SCALE: a threshold sampler commits several tokens.
    "tiny-llada2-confident": ("llada2", llada2_config(), 201, None, 217),
}
CONFIDENT_SCALE = 8.0  # a power of two: scaling the bf16 head is exact
DESCRIPTIONS = {
    "tiny-llada-moe": "2 MoE layers, 4 heads = 4 KV heads (head_dim 16), 16 experts top-4, no shared expert, "
                      "no expert bias, full RoPE",
    "tiny-llada-moe-gqa": "3 layers (layer 0 dense), 4 heads / 2 KV heads, 8 experts top-2, shared expert (48), "
                          "expert bias, norm_topk_prob true (ignored by the code), partial_rotary_factor 0.5",
    "tiny-llada2": "3 layers (layer 0 dense), 4 heads / 2 KV heads (head_dim 16, rotary 8), 16 experts top-4, "
                   "n_group 1, 1 shared expert, routed_scaling_factor 2.5",
    "tiny-llada2-grouped": "2 MoE layers, 4 heads / 1 KV head (head_dim 32 > hidden/heads, rotary 16), 16 experts "
                           "top-4 in 4 groups (2 kept), 2 shared experts (one MLP of 64)",
    "tiny-llada2-confident": "tiny-llada2 with lm_head.weight x 8 (exact in bf16): a threshold commits several "
                             "tokens per step",
}


# =============================================================================================
# Models.
# =============================================================================================

class Official:
    def __init__(self, tmp, dllm_git, llada_git):
        extract(dllm_git, DLLM_FILES, tmp)
        extract(llada_git, LLADA_FILES, tmp)
        sys.path.insert(0, tmp)
        self.lladamoe_cfg = importlib.import_module("official_lladamoe.configuration_lladamoe")
        self.lladamoe = importlib.import_module("official_lladamoe.modeling_lladamoe")
        self.llada2_cfg = importlib.import_module("official_llada2.configuration_llada2_moe")
        self.llada2 = importlib.import_module("official_llada2.modeling_llada2_moe")
        self.generate = importlib.import_module("official_llada_generate")
        # LLaDA2's generate() builds an additive bf16 block mask (0 / -inf), which only the SDPA
        # path passes through unchanged (the eager path would invert it). transformers'
        # sdpa_attention_forward computes softmax(q k^T * scaling + mask) v with repeated KV
        # heads; torch 1.13 has no F.scaled_dot_product_attention, and in float32 real SDPA
        # refuses a bf16 mask, so "sdpa" is the file's own eager_attention_forward, which computes
        # the same thing (the mask's 0/-inf are exact in bf16 and are added in float32).
        ALL_ATTENTION_FUNCTIONS["sdpa"] = self.llada2.eager_attention_forward

    def build(self, family, config_json):
        if family == "lladamoe":
            config = self.lladamoe_cfg.LLaDAMoEConfig(**config_json)
            # transformers would pick SDPA; LLaDAMoESdpaAttention calls
            # F.scaled_dot_product_attention, absent in torch 1.13. The eager class computes the
            # same softmax(q k^T / sqrt(d)) v, here without a mask (generate() passes none).
            config._attn_implementation = "eager"
            return self.lladamoe.LLaDAMoEModelLM(config).eval()
        config = self.llada2_cfg.LLaDA2MoeConfig(**config_json)
        config._attn_implementation = "sdpa"
        return self.llada2.LLaDA2MoeModelLM(config).eval()


def random_state(model, seed, head_scale, eos_from):
    """Deterministic weights for the official state_dict's names and shapes, rounded to bf16
    (expert_bias stays float32). Scales keep activations O(1) and logits with a spread of ~2."""
    g = torch.Generator().manual_seed(seed)
    state = {}
    for name, t in model.state_dict().items():
        if name.endswith("expert_bias"):
            value = (torch.rand(t.shape, generator=g) - 0.5) * 0.2
        elif t.dim() == 1:  # RMSNorm weights
            value = 1.0 + (torch.rand(t.shape, generator=g) - 0.5) * 0.4
        elif "embed" in name:
            value = torch.randn(t.shape, generator=g)
        elif name == "lm_head.weight":
            value = torch.randn(t.shape, generator=g) * (2.0 / math.sqrt(t.shape[1]))
        else:
            value = torch.randn(t.shape, generator=g) / math.sqrt(t.shape[1])
        state[name] = value
    head = state["lm_head.weight"]
    head[MASK_ID] = 0.0  # logit 0 for the mask token: far below the usual maximum
    if eos_from is not None:  # EOS wins where `eos_from` would: generations do end sometimes
        head[EOS_ID] = head[eos_from] * 1.02
    if head_scale is not None and head_scale != 1.0:
        state["lm_head.weight"] = head * head_scale
    return {k: (v if k.endswith("expert_bias") else v.to(torch.bfloat16)) for k, v in state.items()}


def load_model(official, folder):
    config = json.load(open(os.path.join(folder, "config.json")))
    family = "llada2" if config["model_type"] == "llada2_moe" else "lladamoe"
    model = official.build(family, config)
    state = {k: v.float() for k, v in load_checkpoint(folder).items()}
    model.load_state_dict(state, strict=True)
    return model.float().eval()


# =============================================================================================
# Recording.
# =============================================================================================

@contextlib.contextmanager
def recorded_forward(model):
    """Wraps model.forward (an instance attribute: both generate() functions call it) and keeps
    every input, cloned, plus the live tensor of the last call (a view of generate's canvas)."""
    calls = []
    original = model.forward

    def forward(input_ids, *args, **kwargs):
        calls.append((input_ids.clone(), input_ids))
        return original(input_ids, *args, **kwargs)

    model.forward = forward
    try:
        yield calls
    finally:
        del model.forward


@contextlib.contextmanager
def recorded_topk(module):
    """LLaDA-MoE's router calls torch.topk inside LLaDAMoESparseMoeBlock.forward and returns
    only the mixed output; this proxies the file's `torch` to keep the (weights, experts) each
    torch.topk call returns, in layer order."""
    calls = []

    class Proxy:
        def __getattr__(self, name):
            return getattr(torch, name)

        @staticmethod
        def topk(*args, **kwargs):
            result = torch.topk(*args, **kwargs)
            calls.append(result)
            return result

    module.torch = Proxy()
    try:
        yield calls
    finally:
        module.torch = torch


def logits_summary(logits, columns):
    logits = logits.float()
    return {
        "argmax": logits.argmax(-1).tolist(),
        "logsumexp": [round(v, 6) for v in torch.logsumexp(logits, -1).tolist()],
        "columns": columns,
        "logits_at_columns": [[round(v, 6) for v in row] for row in logits[:, columns].tolist()],
    }


COLUMNS = sorted(set(range(0, VOCAB_SIZE, 17)) | {EOS_ID, MASK_ID})


def block_diffusion_mask(total_length, block_length):
    """The additive mask LLaDA2MoeModelLM.generate builds (block-lower-triangular, log, bf16)."""
    blocks = total_length // block_length
    mask = torch.tril(torch.ones(blocks, blocks))
    mask = mask.repeat_interleave(block_length, 0).repeat_interleave(block_length, 1)
    return mask[None, None].log().to(torch.bfloat16)


def lladamoe_forward(official, model, name, first_moe_layer):
    ids = torch.tensor([[17, 230, 45, 301, 8, 99, 150, 420, 3, 77] + [MASK_ID] * 6])
    with torch.no_grad(), recorded_topk(official.lladamoe) as topk:
        logits = model(ids).logits[0]
    weights, experts = topk[0]  # the first torch.topk call is the first MoE layer's router
    return dict(model=name, input=ids[0].tolist(), attention="full (no mask)", **logits_summary(logits, COLUMNS),
                router={"layer": first_moe_layer, "experts": experts.tolist(),
                        "weights": [[round(v, 6) for v in row] for row in weights.tolist()]})


def llada2_forward(model, name, first_moe_layer):
    block_length = 4
    ids = torch.tensor([[17, 230, 45, 301, 8, 99, 150] + [MASK_ID] * 5])
    captured = {}
    gate = model.model.layers[first_moe_layer].mlp.gate
    handle = gate.register_forward_hook(lambda m, i, out: captured.setdefault("gate", out))
    with torch.no_grad():
        logits = model(ids, attention_mask=block_diffusion_mask(ids.shape[1], block_length),
                       position_ids=torch.arange(ids.shape[1])[None]).logits[0]
    handle.remove()
    experts, weights, _ = captured["gate"]
    return dict(model=name, input=ids[0].tolist(), attention="block-causal", block_length=block_length,
                **logits_summary(logits, COLUMNS),
                router={"layer": first_moe_layer, "experts": experts.tolist(),
                        "weights": [[round(v, 6) for v in row] for row in weights.tolist()]})


def committed_positions(before, after, prompt_length):
    """Per row: the positions (0-based after the prompt) that were masks in `before`, not in `after`."""
    width = before.shape[1]
    changed = (before == MASK_ID) & (after[:, :width] != MASK_ID)
    return [[int(p) - prompt_length for p in row.nonzero().flatten()] for row in changed]


def run_llada_case(official, model, case):
    prompt = torch.tensor(case["prompt"])
    with recorded_forward(model) as calls:
        torch.manual_seed(case["seed"])
        x = official.generate.generate(
            model, prompt, attention_mask=None, steps=case["steps"], gen_length=case["gen_length"],
            block_length=case["block_length"], temperature=case["temperature"], cfg_scale=case["cfg_scale"],
            remasking=case["remasking"], mask_id=MASK_ID, logits_eos_inf=case["logits_eos_inf"],
            confidence_eos_eot_inf=case["confidence_eos_eot_inf"])
    states = [c[0] for c in calls] + [x]
    per_step = [committed_positions(states[i], states[i + 1], prompt.shape[1]) for i in range(len(calls))]
    output = x[:, prompt.shape[1]:]
    assert not (output == MASK_ID).any(), case
    return dict(case, output=output.tolist(), unmasked_per_step=per_step)


def run_llada2_case(model, case):
    prompt = torch.tensor(case["prompt"])
    with recorded_forward(model) as calls:
        torch.manual_seed(case["seed"])
        output = model.generate(
            inputs=prompt, temperature=case["temperature"], block_length=case["block_length"],
            steps=case["steps"], gen_length=case["gen_length"], top_p=case["top_p"], top_k=case["top_k"],
            eos_early_stop=case["eos_early_stop"], minimal_topk=case["minimal_topk"],
            threshold=case["threshold"], eos_id=case["eos_id"], mask_id=case["mask_id"])
    windows = [c[0] for c in calls]
    canvas = calls[-1][1]  # the last window, as the last step left it
    states = windows[1:] + [canvas]
    block_length, prompt_length = case["block_length"], prompt.shape[1]
    per_step = [committed_positions(windows[i], states[i], prompt_length)[0] for i in range(len(windows))]
    blocks = [w.shape[1] // block_length - 1 for w in windows]
    return dict(case, output=output[0].tolist(), nfe=len(calls), step_block=blocks,
                committed_per_step=per_step, canvas=canvas[0].tolist())


# =============================================================================================
# Cases.
# =============================================================================================

P6 = [[17, 230, 45, 301, 8, 99]]
P9 = [[120, 7, 388, 64, 250, 31, 402, 19, 5]]


def llada_case(model, prompt, steps, gen_length, block_length, temperature=0.0, remasking="low_confidence",
               seed=0):
    return dict(model=model, prompt=prompt, steps=steps, gen_length=gen_length, block_length=block_length,
                temperature=temperature, cfg_scale=0.0, remasking=remasking, logits_eos_inf=False,
                confidence_eos_eot_inf=False, seed=seed)


LLADA_MOE_CASES = [
    llada_case("tiny-llada-moe", P6, 8, 8, 8),
    llada_case("tiny-llada-moe", P9, 16, 16, 4),
    llada_case("tiny-llada-moe", P6 + [[44, 300, 12, 9, 260, 71]], 4, 8, 8),
    llada_case("tiny-llada-moe", P9, 5, 12, 12),
    llada_case("tiny-llada-moe", P6, 8, 16, 8, temperature=0.7, seed=1234),
    llada_case("tiny-llada-moe", P6, 8, 8, 4, remasking="random", seed=99),
    llada_case("tiny-llada-moe", P9 + [[3, 1, 4, 1, 5, 9, 2, 6, 5]], 6, 12, 6, temperature=1.0,
               remasking="random", seed=7),
    llada_case("tiny-llada-moe-gqa", P6, 8, 16, 8),
    llada_case("tiny-llada-moe-gqa", P9, 12, 12, 4),
    llada_case("tiny-llada-moe-gqa", P6, 8, 8, 8, temperature=0.5, seed=42),
    llada_case("tiny-llada-moe-gqa", P6 + [[44, 300, 12, 9, 260, 71]], 8, 16, 16, temperature=0.9,
               remasking="random", seed=2024),
]


def llada2_case(model, prompt, gen_length, block_length, steps, threshold=0.95, minimal_topk=1,
                temperature=0.0, top_k=None, top_p=None, eos_early_stop=False, seed=0):
    return dict(model=model, prompt=prompt, gen_length=gen_length, block_length=block_length, steps=steps,
                threshold=threshold, minimal_topk=minimal_topk, temperature=temperature, top_k=top_k,
                top_p=top_p, eos_early_stop=eos_early_stop, eos_id=EOS_ID, mask_id=MASK_ID, seed=seed)


LLADA2_CASES = [
    llada2_case("tiny-llada2", P6, 16, 8, 8),
    llada2_case("tiny-llada2", P9, 12, 4, 2),
    llada2_case("tiny-llada2", [[17, 230, 45, 301, 8, 99, 150, 420]], 8, 4, 4),
    llada2_case("tiny-llada2", P6, 16, 8, 8, temperature=0.7, top_p=0.8, seed=3),
    llada2_case("tiny-llada2", P9, 16, 8, 8, minimal_topk=4),
    llada2_case("tiny-llada2-confident", P6, 24, 8, 8, threshold=0.9),
    llada2_case("tiny-llada2-confident", P9, 16, 8, 4, threshold=0.5),
    llada2_case("tiny-llada2-confident", P6, 16, 4, 4, threshold=0.95),
    llada2_case("tiny-llada2-confident", P6, 16, 8, 8, threshold=0.9, temperature=0.8, top_k=20, top_p=0.9,
                seed=5),
    llada2_case("tiny-llada2-confident", P9, 16, 8, 8, threshold=0.7, temperature=1.0, seed=11),
    # EOS: committed before a later position of its block (early stop saves a call) ...
    llada2_case("tiny-llada2-confident", [[68, 334, 266, 418, 333, 330, 177]], 32, 8, 8, threshold=0.9,
                eos_early_stop=True),
    llada2_case("tiny-llada2-confident", [[68, 334, 266, 418, 333, 330, 177]], 32, 8, 8, threshold=0.9,
                eos_early_stop=False),
    # ... committed while an earlier position is still masked (no early stop then; it fires a
    # step later, when an earlier position becomes EOS too) ...
    llada2_case("tiny-llada2", [[175, 96, 126, 362]], 32, 8, 8, threshold=0.5, eos_early_stop=True),
    llada2_case("tiny-llada2", [[175, 96, 126, 362]], 32, 8, 8, threshold=0.5, eos_early_stop=False),
    # ... and sampled, with more steps than the block has tokens (schedule 1,1,1,1,0,0,0,0); the
    # block-end check stops it.
    llada2_case("tiny-llada2", [[46, 43, 184]], 32, 4, 8, threshold=0.5, temperature=1.0, eos_early_stop=True,
                seed=32),
    # A sampled <|mask|> token is committed: it counts as masked again (by value) and survives in
    # the output when its block runs out of steps.
    llada2_case("tiny-llada2", [[441, 73, 90]], 32, 8, 2, threshold=0.3, temperature=1.0, eos_early_stop=True,
                seed=56),
    llada2_case("tiny-llada2-grouped", P6, 16, 8, 8),
    llada2_case("tiny-llada2-grouped", P9, 16, 4, 4, threshold=0.5, temperature=0.9, top_k=50, seed=8),
]


# =============================================================================================
# Main.
# =============================================================================================

RANDOM_DRAWS_LLADA = (
    "torch.manual_seed(seed) right before generate() (CPU generator). Per model call, in this "
    "order: if temperature > 0, torch.rand_like(logits, dtype=float64) over the full "
    "[batch, prompt+gen_length, vocab] logits (Gumbel noise: logits.exp() / (-log(u))**temperature, "
    "float64); then, for remasking 'random', torch.rand(batch, prompt+gen_length) (float32). "
    "Nothing is drawn otherwise. logits_eos_inf/confidence_eos_eot_inf are false: generate() "
    "hard-codes LLaDA-8B's ids 126081/126348 for them, outside this vocabulary.")

RANDOM_DRAWS_LLADA2 = (
    "torch.manual_seed(seed) right before generate() (CPU generator). With temperature 0 nothing "
    "is drawn. With temperature > 0, once per model call: torch.multinomial(probs, 1) on the "
    "float32 probabilities of the current block, shape [block_length, vocab] (every position of "
    "the block, masked or not; after /temperature, top-k, then top-p, softmax). In this torch "
    "build (no MKL) that is q = torch.empty_like(probs).exponential_(1) followed by "
    "argmax(probs / q, -1) (first maximum): one 53-bit double u per element in row-major order "
    "(as torch.rand(float64) draws it) and q = float32(-log(1 - u)). The script checks this "
    "identity before running the cases.")


def check_multinomial_identity():
    p = torch.softmax(torch.randn(8, VOCAB_SIZE, generator=torch.Generator().manual_seed(1)) * 3, -1)
    torch.manual_seed(77)
    direct = torch.multinomial(p, 1)
    torch.manual_seed(77)
    u = torch.rand(p.shape, dtype=torch.float64)
    q = (-torch.log(1.0 - u)).float()
    torch.manual_seed(77)
    q_torch = torch.empty_like(p).exponential_(1)
    assert torch.equal(q, q_torch), "exponential_ is not float32(-log(1-u)) here"
    assert torch.equal(direct, torch.argmax(p / q, -1, keepdim=True)), "multinomial is not argmax(p/q) here"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--official", default="/work/.mirror",
                        help="folder of the fetched mirrors (<owner>+<name>/repo)")
    parser.add_argument("--dllm-git", help="git dir of ZHZisZZ/dllm (default: under --official)")
    parser.add_argument("--llada-git", help="git dir of ML-GSAI/LLaDA (default: under --official)")
    args = parser.parse_args()
    dllm_git = args.dllm_git or os.path.join(args.official, "ZHZisZZ+dllm", "repo")
    llada_git = args.llada_git or os.path.join(args.official, "ML-GSAI+LLaDA", "repo")

    torch.set_num_threads(1)
    check_multinomial_identity()
    install_standins()
    tmp = tempfile.mkdtemp(prefix="moe-golden-")
    try:
        official = Official(tmp, dllm_git, llada_git)
        for name, (family, config, seed, head_scale, eos_from) in CHECKPOINTS.items():
            model = official.build(family, config)
            scale = CONFIDENT_SCALE if head_scale is None else head_scale
            folder = os.path.join(DATA, name)
            save_checkpoint(folder, random_state(model, seed, scale, eos_from), config)
            write_tokenizer(folder)
        models = {name: load_model(official, os.path.join(DATA, name)) for name in CHECKPOINTS}

        provenance = {
            "dllm": {"repo": "ZHZisZZ/dllm", "commit": git_head(dllm_git), "files": sorted(DLLM_FILES.values())},
            "llada": {"repo": "ML-GSAI/LLaDA", "commit": git_head(llada_git), "files": ["generate.py"]},
            "torch": torch.__version__, "mkl": torch.backends.mkl.is_available(),
            "dtype": "float32 on CPU, weights upcast from the bf16 (expert_bias: f32) checkpoints",
        }
        moe = {
            "reference": "ML-GSAI/LLaDA generate.py generate() over ZHZisZZ/dllm modeling_lladamoe.py "
                         "(LLaDAMoEModelLM), float32",
            "provenance": provenance, "mask_id": MASK_ID, "eos_id": EOS_ID,
            "checkpoints": {n: DESCRIPTIONS[n] for n, c in CHECKPOINTS.items() if c[0] == "lladamoe"},
            "random_draws": RANDOM_DRAWS_LLADA,
            "forward": [lladamoe_forward(official, models["tiny-llada-moe"], "tiny-llada-moe", 0),
                        lladamoe_forward(official, models["tiny-llada-moe-gqa"], "tiny-llada-moe-gqa", 1)],
            "cases": [run_llada_case(official, models[c["model"]], c) for c in LLADA_MOE_CASES],
        }
        write_json(os.path.join(DATA, "tiny-llada-moe.golden.json"), moe, compact_lists=True)
        llada2 = {
            "reference": "ZHZisZZ/dllm modeling_llada2_moe.py LLaDA2MoeModelLM.generate, float32",
            "provenance": provenance, "mask_id": MASK_ID, "eos_id": EOS_ID,
            "checkpoints": {n: DESCRIPTIONS[n] for n, c in CHECKPOINTS.items() if c[0] == "llada2"},
            "confident_scale": CONFIDENT_SCALE,
            "random_draws": RANDOM_DRAWS_LLADA2,
            "forward": [llada2_forward(models[n], n, 1 if n != "tiny-llada2-grouped" else 0)
                        for n in ("tiny-llada2", "tiny-llada2-grouped", "tiny-llada2-confident")],
            "cases": [run_llada2_case(models[c["model"]], c) for c in LLADA2_CASES],
        }
        write_json(os.path.join(DATA, "tiny-llada2.golden.json"), llada2, compact_lists=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
