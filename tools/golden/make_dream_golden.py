#!/usr/bin/env python3
"""Golden data for the Dream family (Dream-v0-Instruct-7B and kin), computed by the official code.

Makes, under tests/data/:
  tiny-dream/, tiny-dream-tied/, tiny-dream-confident/   Dream-v0-Instruct-7B layout (DreamModel)
  tiny-dream.golden.json            forward logits, diffusion_generate traces, tokenizer cases
  tiny-dream.fastdllm.golden.json   Fast-dLLM's Dream sampler (no cache / prefix / dual cache)
Each checkpoint folder holds config.json, two bf16 safetensors shards with their index, the
tokenizer files Dream-v0 publishes (vocab.json, merges.txt, added_tokens.json,
special_tokens_map.json, tokenizer_config.json; no tokenizer.json) and generation_config.json.
tests/data/dream-golden.md describes all of it.

The official code is never copied into the project. It is read at run time from the local git
mirror of ZHZisZZ/dllm (`git show HEAD:<path>`) into a temporary `dllm` package and imported
from there (the package __init__ files are left empty, so nothing else of dllm is imported):
  dllm/pipelines/dream/models/{configuration_dream,modeling_dream,generation_utils}.py
  dllm/pipelines/fastdllm/dream/models/{configuration_dream,modeling_dream}.py
  dllm/pipelines/fastdllm/dream/sampler.py
  dllm/core/samplers/{base,utils}.py, dllm/core/schedulers/{__init__,alpha,kappa}.py
Those files import parts of `transformers`, which is not installed here: transformers_standins.py
plus dream_standins.py put the smallest stand-ins for exactly what they import into sys.modules
(and torch 1.13 has no scaled_dot_product_attention: dream_standins provides it).

Re-run (Debian's python3-torch 1.13 + numpy, nothing else; deterministic: fixed seeds, one
thread). The mirror comes from the agent `fetch` tool (github:ZHZisZZ/dllm), which leaves it at
<dir>/ZHZisZZ+dllm/repo:
    /usr/bin/python3 tools/golden/make_dream_golden.py --official /work/.mirror
--dllm-git points at the git directory directly instead. Tests never run this.
"""

import argparse
import importlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import types

import torch

from dream_standins import install_dream_standins
from hf_checkpoint_files import DATA, load_checkpoint, save_checkpoint, write_json

from dream_draws import (RANDOM_DRAWS, check_draw_identities, draws_of, recording, selections_of, sig, sig_list,
                         split_steps)
from dream_tokenizer import (EOS_ID, MASK_ID, PAD_ID, PUBLISHED_IDS, SPECIAL_TOKENS, TOKENIZER_TEXTS, VOCAB_SIZE,
                             Tokenizer, write_generation_config)

DLLM_FILES = [
    "dllm/pipelines/dream/models/configuration_dream.py",
    "dllm/pipelines/dream/models/modeling_dream.py",
    "dllm/pipelines/dream/models/generation_utils.py",
    "dllm/pipelines/fastdllm/dream/models/configuration_dream.py",
    "dllm/pipelines/fastdllm/dream/models/modeling_dream.py",
    "dllm/pipelines/fastdllm/dream/sampler.py",
    "dllm/core/samplers/base.py",
    "dllm/core/samplers/utils.py",
    "dllm/core/schedulers/__init__.py",
    "dllm/core/schedulers/alpha.py",
    "dllm/core/schedulers/kappa.py",
]

# =============================================================================================
# Official code: extraction and import.
# =============================================================================================

def git_head(gitdir):
    return subprocess.check_output(["git", "--git-dir", gitdir, "rev-parse", "HEAD"], text=True).strip()


def extract(gitdir, dest):
    for path in DLLM_FILES:
        target = os.path.join(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(subprocess.check_output(["git", "--git-dir", gitdir, "show", f"HEAD:{path}"]))
    for path in DLLM_FILES:  # every package on the way gets an (empty) __init__.py unless extracted
        folder = os.path.dirname(path)
        while folder:
            init = os.path.join(dest, folder, "__init__.py")
            if not os.path.exists(init):
                open(init, "w").close()
            folder = os.path.dirname(folder)


class Official:
    def __init__(self, tmp, dllm_git):
        extract(dllm_git, tmp)
        sys.path.insert(0, tmp)
        self.cfg = importlib.import_module("dllm.pipelines.dream.models.configuration_dream")
        self.modeling = importlib.import_module("dllm.pipelines.dream.models.modeling_dream")
        self.gen = importlib.import_module("dllm.pipelines.dream.models.generation_utils")
        self.fast_cfg = importlib.import_module("dllm.pipelines.fastdllm.dream.models.configuration_dream")
        self.fast_modeling = importlib.import_module("dllm.pipelines.fastdllm.dream.models.modeling_dream")
        self.fast_sampler = importlib.import_module("dllm.pipelines.fastdllm.dream.sampler")
        self.fast_utils = importlib.import_module("dllm.core.samplers.utils")
        self.schedulers = importlib.import_module("dllm.core.schedulers")

    def build(self, config_json):
        return self.modeling.DreamModel(self.cfg.DreamConfig(**config_json)).eval()

    def build_fast(self, config_json):
        return self.fast_modeling.FastdLLMDreamModel(self.fast_cfg.FastdLLMDreamConfig(**config_json)).eval()


# =============================================================================================
# Configurations: field names of the published Dream-v0-Instruct-7B config.json, tiny values.
# =============================================================================================

def dream_config(**overrides):
    """Published (Dream-v0-Instruct-7B): hidden 3584, 28 layers, 28 heads / 4 KV heads (head_dim
    128), intermediate 18944, rope_theta 1e6, rms_norm_eps 1e-6, untied, vocab 152064, bos = eos =
    pad = 151643, mask 151666, max_position_embeddings 131072. The field set and order are the
    published config.json's (use_cache true: diffusion_generate never reads it)."""
    config = {
        "_name_or_path": "Dream-org/Dream-v0-Instruct-7B",
        "architectures": ["DreamModel"],
        "attention_dropout": 0.0,
        "auto_map": {"AutoConfig": "configuration_dream.DreamConfig", "AutoModel": "modeling_dream.DreamModel"},
        "bos_token_id": EOS_ID,
        "eos_token_id": EOS_ID,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 128,
        "mask_token_id": MASK_ID,
        "max_position_embeddings": 131072,
        "max_window_layers": 3,
        "model_type": "Dream",
        "num_attention_heads": 4,
        "num_hidden_layers": 3,
        "num_key_value_heads": 2,
        "pad_token_id": PAD_ID,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000.0,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.46.2",
        "use_cache": True,
        "use_mrope": False,
        "use_sliding_window": False,
        "vocab_size": VOCAB_SIZE,
    }
    config.update(overrides)
    return config


CONFIDENT_SCALE = 8.0  # a power of two: scaling the bf16 head is exact
EOS_FROM = 219         # the <|endoftext|> row of lm_head is 1.02 x this token's row
# name -> (config, weight seed, LM-head scale)
CHECKPOINTS = {
    "tiny-dream": (dream_config(), 301, 1.0),
    "tiny-dream-tied": (dream_config(num_hidden_layers=2, num_key_value_heads=1, max_window_layers=2,
                                     rope_theta=10000.0, rms_norm_eps=1e-05, tie_word_embeddings=True), 302, 1.0),
    "tiny-dream-confident": (dream_config(), 301, CONFIDENT_SCALE),
}
DESCRIPTIONS = {
    "tiny-dream": "hidden 64, 3 layers, 4 heads / 2 KV heads (head_dim 16), intermediate 128, rope_theta 1e6, "
                  "rms_norm_eps 1e-6, untied lm_head",
    "tiny-dream-tied": "hidden 64, 2 layers, 4 heads / 1 KV head (head_dim 16), intermediate 128, rope_theta 1e4, "
                       "rms_norm_eps 1e-5, tie_word_embeddings true (no lm_head.weight in the files)",
    "tiny-dream-confident": "tiny-dream with lm_head.weight x 8 (exact in bf16): top-1 probabilities near 1",
}


def random_state(model, seed, head_scale, tied):
    """Deterministic weights for the official state_dict's names and shapes, rounded to bf16.
    Embeddings N(0,1) (tied: N(0, 1/16), the head's scale), linear weights N(0, 1/fan_in), q/k/v
    biases N(0, 0.2^2), RMSNorm weights 1 +- 0.2, lm_head N(0, 4/hidden). The <|mask|> row of the
    head is zero, the <|endoftext|> row 1.02 x row EOS_FROM (tied: these rows are the embeddings)."""
    g = torch.Generator().manual_seed(seed)
    state = {}
    for name, t in model.state_dict().items():
        if tied and name == "lm_head.weight":
            continue
        if name.endswith("norm.weight"):
            value = 1.0 + (torch.rand(t.shape, generator=g) - 0.5) * 0.4
        elif name.endswith(".bias"):
            value = torch.randn(t.shape, generator=g) * 0.2
        elif name == "model.embed_tokens.weight":
            value = torch.randn(t.shape, generator=g) * (0.25 if tied else 1.0)
        elif name == "lm_head.weight":
            value = torch.randn(t.shape, generator=g) * (2.0 / math.sqrt(t.shape[1]))
        else:
            value = torch.randn(t.shape, generator=g) / math.sqrt(t.shape[1])
        state[name] = value
    head = state["model.embed_tokens.weight" if tied else "lm_head.weight"]
    head[MASK_ID] = 0.0
    head[EOS_ID] = head[EOS_FROM] * 1.02
    if head_scale != 1.0:
        head.mul_(head_scale)
    return {k: v.to(torch.bfloat16) for k, v in state.items()}


def load_state(folder, model):
    """The files' tensors, upcast, with lm_head.weight = embed_tokens.weight when the config ties
    them (transformers saves a tied model without lm_head.weight and ties it again on load)."""
    state = {k: v.float() for k, v in load_checkpoint(folder).items()}
    expected = set(model.state_dict())
    if model.config.tie_word_embeddings:
        assert "lm_head.weight" not in state, folder
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    assert set(state) == expected, (folder, set(state) ^ expected)
    return state


def load_models(official, folder):
    config = json.load(open(os.path.join(folder, "config.json")))
    models = []
    for build in (official.build, official.build_fast):
        model = build(config)
        model.load_state_dict(load_state(folder, model), strict=True)
        model = model.float().eval()
        if config["tie_word_embeddings"]:
            assert model.lm_head.weight is model.model.embed_tokens.weight
        models.append(model)
    return models


# =============================================================================================
# Forward goldens.
# =============================================================================================

def logits_record(logits, keep_rows):
    rows = []
    for r in range(logits.shape[0]):
        rows.append(sig_list(logits[r]) if keep_rows[r] else None)
    return {
        "argmax": [int(v) if keep_rows[i] else None for i, v in enumerate(logits.argmax(-1).tolist())],
        "logsumexp": [sig(v) if keep_rows[i] else None for i, v in enumerate(torch.logsumexp(logits, -1).tolist())],
        "logits": rows,
    }


def generate_masks(attention_mask, max_length):
    """What DreamGenerationMixin._sample builds from a 2-D attention mask with zeros."""
    am = torch.nn.functional.pad(attention_mask, (0, max_length - attention_mask.shape[1]), value=1.0)
    tok_idx = am.long().cumsum(-1) - 1
    tok_idx.masked_fill_(am == 0, 1)
    mask4d = torch.logical_and(am.unsqueeze(1).unsqueeze(-2), am.unsqueeze(1).unsqueeze(-1))
    return am, tok_idx, mask4d


def forward_cases(model, name):
    M = MASK_ID
    single = torch.tensor([[17, 230, 45, 301, M, 99, 150, 420, 3, M, M, M]])
    with torch.no_grad():
        logits = model(single).logits[0]
    out = [dict(model=name, kind="single", input_ids=single.tolist(), attention="none (full bidirectional)",
                position_ids=[list(range(single.shape[1]))], **logits_record(logits, [True] * single.shape[1]))]
    # A left-padded batch of two prompts, as diffusion_generate runs it: prompts 3 and 6 ids, 6 masks.
    prompts = [[120, 7, 388], [17, 230, 45, 301, 8, 99]]
    width, gen = max(map(len, prompts)), 6
    ids = torch.tensor([[PAD_ID] * (width - len(p)) + p + [M] * gen for p in prompts])
    attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    am, tok_idx, mask4d = generate_masks(attention_mask, ids.shape[1])
    with torch.no_grad():
        logits = model(ids, mask4d, tok_idx).logits
    records = [logits_record(logits[b], am[b].bool().tolist()) for b in range(len(prompts))]
    out.append(dict(model=name, kind="left_padded_batch", input_ids=ids.tolist(),
                    attention_mask=am.tolist(), position_ids=tok_idx.tolist(),
                    attention="4-D bool mask[b, 0, i, j] = attention_mask[b, i] & attention_mask[b, j]",
                    argmax=[r["argmax"] for r in records], logsumexp=[r["logsumexp"] for r in records],
                    logits=[r["logits"] for r in records]))
    return out


# =============================================================================================
# diffusion_generate goldens.
# =============================================================================================

def left_pad(prompts):
    width = max(map(len, prompts))
    ids = torch.tensor([[PAD_ID] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


def run_generate(official, model, case):
    ids, attention_mask = left_pad(case["prompt"])
    P = ids.shape[1]
    with recording(official.gen, model) as log:
        torch.manual_seed(case["seed"])
        out = model.diffusion_generate(
            ids, attention_mask=attention_mask, max_new_tokens=case["max_new_tokens"], steps=case["steps"],
            eps=case["eps"], alg=case["alg"], alg_temp=case["alg_temp"], temperature=case["temperature"],
            top_p=case["top_p"], top_k=case["top_k"], output_history=True, return_dict=True)
    steps = split_steps(log)
    assert len(steps) == case["steps"] == len(out.history)
    history = [h.tolist() for h in out.history]
    per_step = []
    confidence_alg = case["alg"] != "origin"
    for i, events in enumerate(steps):
        x_in = events[0][1]
        masked = int((x_in == MASK_ID).sum())
        rec = {"masked": masked, "draws": draws_of(events)}
        samples = [e for e in events if e[0] == "sample"]
        assert len(samples) == 1
        _, shape, confidence, x0 = samples[0]
        if confidence_alg:
            rec["x0"] = x0.tolist()
            rec["confidence"] = sig_list(confidence, 6)
            sel = selections_of(events)
            assert len(sel) <= 1
            rec["k"] = sel[0][2] if sel else 0
            rec["select"] = sel[0][0] if sel else None
            rec["boundary_tie"] = bool(sel and sel[0][0] == "topk" and sel[0][3])
        else:
            rec["transferred"] = shape[0]
            rec["x0"] = x0.tolist()
        before, after = x_in, out.history[i]
        rec["committed"] = [[[int(p) - P, int(after[b, p])] for p in ((before[b] == MASK_ID) &
                                                                    (after[b] != MASK_ID)).nonzero().flatten()]
                            for b in range(before.shape[0])]
        per_step.append(rec)
    full = bool((attention_mask == 1).all())
    position_ids = None if full else generate_masks(attention_mask, P + case["max_new_tokens"])[1].tolist()
    timesteps = torch.linspace(1, case["eps"], case["steps"] + 1)
    return dict(case, input_ids=ids.tolist(), attention_mask=attention_mask.tolist(), full_attention=full,
                position_ids=position_ids, timesteps=[float(v) for v in timesteps],
                sequences=out.sequences.tolist(), history=history, steps_detail=per_step)


P3 = [46, 43, 184]
P5 = [17, 230, 45, 301, 8]
P6 = [17, 230, 45, 301, 8, 99]
P9 = [120, 7, 388, 64, 250, 31, 402, 19, 5]
P12 = [68, 334, 266, 418, 333, 330, 177, 92, 11, 250, 7, 64]
PMASK = [17, 230, MASK_ID, 301, 8, MASK_ID, 99]  # masks inside the prompt are denoised too


def gcase(model, prompt, max_new_tokens, steps, alg, temperature=0.0, top_p=None, top_k=None, alg_temp=None,
          eps=1e-3, seed=0):
    return dict(model=model, prompt=prompt, max_new_tokens=max_new_tokens, steps=steps, alg=alg,
                temperature=temperature, top_p=top_p, top_k=top_k, alg_temp=alg_temp, eps=eps, seed=seed)


D, T, C = "tiny-dream", "tiny-dream-tied", "tiny-dream-confident"
GENERATE_CASES = [
    # origin
    gcase(D, [P6], 8, 8, "origin"),
    gcase(D, [P6], 12, 5, "origin", temperature=0.7, seed=1),
    gcase(D, [P6], 12, 5, "origin", temperature=0.7, seed=2),
    gcase(D, [P9], 16, 16, "origin", temperature=0.7, top_p=0.9, seed=3),
    gcase(D, [P5], 10, 4, "origin", temperature=1.0, top_k=20, seed=4),
    gcase(D, [P3, P9], 8, 6, "origin", temperature=0.7, seed=5),
    gcase(D, [P6], 8, 12, "origin", temperature=0.7, eps=0.01, seed=6),
    gcase(T, [P6], 8, 8, "origin", eps=0.01, seed=7),
    gcase(T, [P5, P12], 10, 5, "origin", seed=8),
    gcase(C, [P9], 12, 12, "origin", temperature=0.5, seed=9),
    # maskgit_plus
    gcase(D, [P6], 8, 8, "maskgit_plus"),
    gcase(D, [P9], 12, 4, "maskgit_plus"),
    gcase(D, [P6], 10, 7, "maskgit_plus"),
    gcase(D, [P12], 8, 12, "maskgit_plus"),
    gcase(D, [P6], 12, 12, "maskgit_plus", temperature=0.7, seed=11),
    gcase(D, [P6], 12, 12, "maskgit_plus", temperature=0.7, seed=12),
    gcase(D, [P9], 12, 6, "maskgit_plus", temperature=0.7, top_p=0.9, seed=13),
    gcase(D, [P5], 8, 8, "maskgit_plus", temperature=0.7, top_k=20, seed=14),
    gcase(D, [P6], 8, 8, "maskgit_plus", alg_temp=0.5, seed=15),
    gcase(D, [P6], 12, 6, "maskgit_plus", temperature=0.7, alg_temp=0.5, seed=16),
    gcase(D, [P6], 12, 6, "maskgit_plus", temperature=0.7, alg_temp=0.5, seed=17),
    gcase(D, [P3, P9], 8, 8, "maskgit_plus"),
    gcase(D, [P5, P12], 10, 5, "maskgit_plus", temperature=0.7, alg_temp=0.5, seed=18),
    gcase(D, [P6], 8, 4, "maskgit_plus", top_p=0.9),
    gcase(D, [PMASK], 6, 4, "maskgit_plus"),
    gcase(T, [P6], 16, 16, "maskgit_plus", eps=0.01),
    gcase(T, [P3, P9], 8, 8, "maskgit_plus", temperature=0.7, seed=19),
    gcase(C, [P9], 16, 4, "maskgit_plus"),
    gcase(C, [P6], 12, 6, "maskgit_plus", temperature=0.7, top_p=0.9, seed=20),
    # topk_margin
    gcase(D, [P6], 8, 8, "topk_margin"),
    gcase(D, [P9], 12, 5, "topk_margin"),
    gcase(D, [P6], 10, 10, "topk_margin", temperature=0.7, seed=21),
    gcase(D, [P6], 10, 10, "topk_margin", temperature=0.7, seed=22),
    gcase(D, [P5], 8, 8, "topk_margin", temperature=0.7, top_k=20, alg_temp=0.5, seed=23),
    gcase(D, [P3, P9], 8, 4, "topk_margin"),
    gcase(T, [P9], 12, 6, "topk_margin", eps=0.01),
    gcase(T, [P5, P12], 8, 8, "topk_margin", temperature=1.0, top_p=0.9, seed=24),
    gcase(C, [P6], 16, 8, "topk_margin"),
    gcase(C, [P9], 12, 12, "topk_margin", temperature=1.0, top_p=0.9, seed=25),
    # entropy
    gcase(D, [P6], 8, 8, "entropy"),
    gcase(D, [P9], 12, 12, "entropy", temperature=0.2, top_p=0.95, seed=26),
    gcase(D, [P9], 12, 12, "entropy", temperature=0.5, top_p=0.95, seed=27),
    gcase(D, [P9], 12, 12, "entropy", temperature=0.5, top_p=0.95, seed=32),
    gcase(D, [P6], 10, 3, "entropy"),
    gcase(D, [P6], 8, 8, "entropy", alg_temp=0.5, seed=28),
    gcase(D, [P3, P9], 8, 8, "entropy", temperature=0.7, seed=29),
    gcase(D, [P12], 8, 8, "entropy", eps=0.01),
    gcase(T, [P6], 16, 16, "entropy"),
    gcase(T, [P6], 12, 6, "entropy", temperature=0.7, top_k=20, seed=30),
    gcase(C, [P9], 12, 4, "entropy"),
    gcase(C, [P5, P12], 12, 6, "entropy", temperature=0.5, alg_temp=0.5, seed=31),
]


# =============================================================================================
# Fast-dLLM goldens.
# =============================================================================================

def fcase(model, prompts, max_new_tokens, steps, alg, use_cache, block_size=None, threshold=None, temperature=0.0,
          top_p=1.0, top_k=None, alg_temp=0.0, eps=1e-3, right_shift_logits=True, seed=0):
    return dict(model=model, prompt=prompts, max_new_tokens=max_new_tokens, steps=steps, alg=alg,
                use_cache=use_cache, block_size=block_size, threshold=threshold, temperature=temperature,
                top_p=top_p, top_k=top_k, alg_temp=alg_temp, eps=eps, right_shift_logits=right_shift_logits,
                stochastic_transfer=False, seed=seed)


FAST_CASES = [
    # no cache: get_num_transfer_tokens schedule (linear scheduler, rounding), per-row selection
    fcase(D, [P6], 8, 8, "maskgit_plus", None),
    fcase(D, [P9], 12, 5, "entropy", None),
    fcase(D, [P6], 12, 6, "topk_margin", None, temperature=1.0, top_k=50, seed=41),
    fcase(D, [P6], 8, 8, "maskgit_plus", None, alg_temp=0.5, seed=42),
    fcase(D, [P3, P9], 8, 4, "maskgit_plus", None),
    fcase(D, [P6], 8, 8, "maskgit_plus", None, right_shift_logits=False),
    fcase(D, [P5], 4, 10, "maskgit_plus", None),  # more steps than masks: zeros compacted away
    fcase(C, [P6], 16, 8, "confidence_threshold", None, threshold=0.9),
    fcase(D, [P9], 12, 4, "confidence_threshold", None, threshold=0.5),
    # prefix cache
    fcase(D, [P6], 16, 8, "maskgit_plus", "prefix", block_size=8),
    fcase(D, [P9], 16, 16, "entropy", "prefix", block_size=4),
    fcase(D, [P6], 16, 8, "topk_margin", "prefix", block_size=8, temperature=0.7, top_p=0.9, seed=43),
    fcase(D, [P5], 12, 6, "maskgit_plus", "prefix", block_size=4, alg_temp=0.5, temperature=1.0, top_k=50, seed=44),
    fcase(D, [P6, P12[:6]], 16, 8, "maskgit_plus", "prefix", block_size=8),
    fcase(D, [P6], 16, 2, "maskgit_plus", "prefix", block_size=8),
    fcase(C, [P6], 24, 24, "confidence_threshold", "prefix", block_size=8, threshold=0.9),
    fcase(C, [P9], 16, 16, "confidence_threshold", "prefix", block_size=8, threshold=0.7, temperature=0.7, seed=45),
    fcase(D, [P6], 8, 8, "confidence_threshold", "prefix", block_size=4, threshold=0.9),
    fcase(T, [P6], 16, 8, "entropy", "prefix", block_size=8),
    # dual cache (batch 1 only)
    fcase(D, [P6], 16, 8, "maskgit_plus", "dual", block_size=8),
    fcase(D, [P9], 16, 8, "entropy", "dual", block_size=4, temperature=1.0, top_k=50, seed=46),
    fcase(D, [P6], 16, 8, "topk_margin", "dual", block_size=8, alg_temp=0.5, seed=47),
    fcase(C, [P6], 24, 24, "confidence_threshold", "dual", block_size=8, threshold=0.9),
    fcase(C, [P9], 16, 16, "confidence_threshold", "dual", block_size=8, threshold=0.7, temperature=0.7, seed=48),
    fcase(T, [P5], 16, 16, "confidence_threshold", "dual", block_size=4, threshold=0.5),
]


def run_fast(official, model, case):
    sm = official.fast_sampler
    sampler = sm.FastdLLMDreamSampler(model=model, tokenizer=types.SimpleNamespace(
        mask_token_id=MASK_ID, eos_token_id=EOS_ID))
    params = {k: case[k] for k in ("max_new_tokens", "steps", "eps", "alg", "alg_temp", "temperature", "top_p",
                                   "top_k", "stochastic_transfer", "threshold", "use_cache", "right_shift_logits")}
    if case["block_size"] is not None:
        params["block_size"] = case["block_size"]
    with recording(sm, model) as log:
        torch.manual_seed(case["seed"])
        out = sampler.sample([list(p) for p in case["prompt"]], config=sm.FastdLLMDreamSamplerConfig(),
                             return_dict=True, **params)
    x = out.sequences
    T_len = x.shape[1]
    gen_start = T_len - case["max_new_tokens"]
    steps = split_steps(log)
    calls = []
    for events in steps:
        input_ids, kwargs = events[0][1], events[0][3]
        past = kwargs.get("past_key_values")
        if past is None:
            kind, start, cache = "full", 0, None
        elif kwargs.get("dual_cache"):
            kind, cache = "dual", past[0][0].shape[1]
            start = int(kwargs["replace_position"][0].nonzero()[0])
        else:
            kind, cache, start = "prefix", past[0][0].shape[1], past[0][0].shape[1]
        calls.append({"kind": kind, "query": [start - gen_start, start + input_ids.shape[1] - gen_start],
                      "cache_len": cache, "draws": draws_of(events), "events": events})
    return calls, out, gen_start


def finish_fast(case, calls, out, gen_start, snapshots):
    records = []
    for i, call in enumerate(calls):
        before, after = snapshots[i], snapshots[i + 1]
        committed = [[[int(p) - gen_start, int(after[b, p])]
                      for p in ((before[b] == MASK_ID) & (after[b] != MASK_ID)).nonzero().flatten()]
                     for b in range(before.shape[0])]
        changed = (before != MASK_ID) & (before != after)
        assert not changed.any(), "a committed token changed"
        rec = {k: v for k, v in call.items() if k != "events"}
        rec["masked_before"] = int((before[:, gen_start:] == MASK_ID).sum())
        rec["committed"] = committed
        samples = [e for e in call["events"] if e[0] == "sample"]
        if samples:
            _, shape, confidence, x0 = samples[0]
            if len(shape) == 2:
                rec["x0"] = x0.tolist()
                rec["confidence"] = sig_list(confidence, 6)
            else:
                rec["sampled_all_positions"] = shape
        selections = selections_of(call["events"])
        rec["select"] = [[e[0], e[2]] + ([e[3]] if e[0] == "topk" else []) for e in selections]
        records.append(rec)
    return records


def run_fast_case(official, model, case):
    snapshots = []
    original_forward = model.forward
    holder = {}

    def forward(input_ids, *args, **kwargs):
        if "x" not in holder:
            holder["x"] = input_ids
        snapshots.append(holder["x"].clone())
        return original_forward(input_ids, *args, **kwargs)

    model.forward = forward
    try:
        calls, out, gen_start = run_fast(official, model, case)
    finally:
        del model.forward
    snapshots.append(out.sequences.clone())
    records = finish_fast(case, calls, out, gen_start, snapshots)
    x = out.sequences
    extra = {}
    if case["use_cache"] is None:  # the official schedule for this canvas
        schedule = official.fast_utils.get_num_transfer_tokens(
            snapshots[0] == MASK_ID, case["steps"], official.schedulers.LinearAlphaScheduler())
        extra["schedule"] = schedule.tolist()
    elif case["alg"] != "confidence_threshold":
        per_block = case["steps"] // (case["max_new_tokens"] // case["block_size"])
        extra["block_timesteps"] = [float(v) for v in torch.linspace(1, case["eps"], per_block + 1)]
    return dict(case, **extra, input_ids=snapshots[0].tolist(), gen_start=gen_start, nfe=len(calls),
                sequences=x.tolist(), output=[row[gen_start:] for row in x.tolist()],
                masks_left=int((x[:, gen_start:] == MASK_ID).sum()),
                histories=[h.tolist() for h in out.histories], calls=records)


# =============================================================================================
# Main.
# =============================================================================================

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--official", default="/work/.mirror",
                        help="folder of the fetched mirrors (<owner>+<name>/repo)")
    parser.add_argument("--dllm-git", help="git dir of ZHZisZZ/dllm (default: under --official)")
    args = parser.parse_args()
    dllm_git = args.dllm_git or os.path.join(args.official, "ZHZisZZ+dllm", "repo")

    torch.set_num_threads(1)
    check_draw_identities()
    install_dream_standins()
    tokenizer = Tokenizer()
    tmp = tempfile.mkdtemp(prefix="dream-golden-")
    try:
        official = Official(tmp, dllm_git)
        for name, (config, seed, head_scale) in CHECKPOINTS.items():
            model = official.build(config)
            folder = os.path.join(DATA, name)
            save_checkpoint(folder, random_state(model, seed, head_scale, config["tie_word_embeddings"]), config)
            tokenizer.write(folder)
            write_generation_config(folder)
        models, fast_models = {}, {}
        for name in CHECKPOINTS:
            models[name], fast_models[name] = load_models(official, os.path.join(DATA, name))
            ids = torch.tensor([P9 + [MASK_ID] * 7])
            with torch.no_grad():  # Fast-dLLM's model is Dream's, bit for bit, on an unpadded input
                assert torch.equal(models[name](ids).logits, fast_models[name](ids, "full", None).logits)

        provenance = {
            "dllm": {"repo": "ZHZisZZ/dllm", "commit": git_head(dllm_git), "files": DLLM_FILES},
            "torch": torch.__version__, "mkl": torch.backends.mkl.is_available(),
            "dtype": "float32 on CPU, weights upcast from the bf16 checkpoints",
            "sdpa": "dream_standins.scaled_dot_product_attention (torch 2.5 math formula, fully masked rows -> 0)",
        }
        common = {"provenance": provenance, "mask_id": MASK_ID, "eos_id": EOS_ID, "pad_id": PAD_ID,
                  "special_tokens": {c: {"id": i, "published_id": PUBLISHED_IDS[c]} for c, i in SPECIAL_TOKENS},
                  "checkpoints": DESCRIPTIONS, "confident_scale": CONFIDENT_SCALE, "random_draws": RANDOM_DRAWS}
        golden = dict(
            reference="ZHZisZZ/dllm dllm/pipelines/dream/models: DreamModel.forward and "
                      "DreamGenerationMixin.diffusion_generate, float32",
            **common,
            tokenizer={"reference": "make_dream_golden.py Tokenizer.encode (NFC, Qwen2 split, GPT-2 bpe loop), "
                                    "special tokens parsed", "cases": [{"text": t, "ids": tokenizer.encode(t)}
                                                                      for t in TOKENIZER_TEXTS]},
            forward=[rec for name in CHECKPOINTS for rec in forward_cases(models[name], name)],
            cases=[run_generate(official, models[c["model"]], c) for c in GENERATE_CASES])
        write_json(os.path.join(DATA, "tiny-dream.golden.json"), golden, compact_lists=True)
        fast = dict(
            reference="ZHZisZZ/dllm dllm/pipelines/fastdllm/dream: FastdLLMDreamSampler.sample over "
                      "FastdLLMDreamModel, float32",
            **common,
            cases=[run_fast_case(official, fast_models[c["model"]], c) for c in FAST_CASES])
        write_json(os.path.join(DATA, "tiny-dream.fastdllm.golden.json"), fast, compact_lists=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
