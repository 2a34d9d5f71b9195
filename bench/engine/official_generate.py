#!/usr/bin/python3
"""The official LLaDA generate() loop, in eager PyTorch, as the baseline unmask's reference mode is
timed against (bench/engine/bench_official.sh).

Written here from the published algorithm (the LLaDA paper and its reference sampler): a plain
eager forward of the LLaDA architecture (RMSNorm, RoPE, full bidirectional attention through
scaled_dot_product_attention where
PyTorch has it, SwiGLU) and the semi-autoregressive low-confidence-remasking loop,
which at every step runs the model over the whole sequence, takes float64 softmax probabilities
of all [L, vocab] logits, and unmasks the most confident masked tokens of the current block.
Greedy only (temperature 0, no classifier-free guidance), float32.

Reads a Hugging Face LLaDA checkpoint directory (config.json + *.safetensors, bf16/fp16/fp32),
prints one JSON line: {"ids": [...], "seconds": s, "steps": n, "threads": t}.

  official_generate.py --model DIR --prompt-ids 1,2,3 --gen-length 64 --block-length 32 --steps 64
"""
import argparse
import glob
import json
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}


def load_safetensors(path):
    """{name: float32 tensor} from one .safetensors file (8-byte header length, JSON, raw data)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        if meta["dtype"] not in DTYPES:
            sys.exit(f"{path}: tensor {name} has dtype {meta['dtype']}, not one of {sorted(DTYPES)}")
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[meta["dtype"]])
        out[name] = t.reshape(meta["shape"]).float()
    return out


def attention(q, k, v):
    """Full bidirectional attention (scaled_dot_product_attention where PyTorch has it, >= 2.0)."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=False)
    scores = torch.matmul(q, k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
    return torch.matmul(F.softmax(scores, dim=-1), v)


class Llada:
    def __init__(self, directory):
        with open(os.path.join(directory, "config.json")) as f:
            self.c = json.load(f)
        self.w = {}
        for path in sorted(glob.glob(os.path.join(directory, "*.safetensors"))):
            self.w.update(load_safetensors(path))
        c = self.c
        self.heads, self.kv_heads = c["n_heads"], c.get("n_kv_heads") or c["n_heads"]
        self.head_dim = c["d_model"] // self.heads
        self.eps = c.get("rms_norm_eps", 1e-5)
        self.theta = c.get("rope_theta", 10000.0)
        p = "model.transformer."
        self.head = self.w[p + "wte.weight"] if c.get("weight_tying") else self.w[p + "ff_out.weight"]

    def rms_norm(self, x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight

    def rope(self, x, length):
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        freqs = torch.outer(torch.arange(length, dtype=torch.float32), inv_freq)
        pos = torch.cat([freqs, freqs], -1)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * pos.cos() + rotated * pos.sin()

    def forward(self, ids):
        p = "model.transformer."
        b, length = ids.shape
        x = F.embedding(ids, self.w[p + "wte.weight"])
        for i in range(self.c["n_layers"]):
            blk = f"{p}blocks.{i}."
            h = self.rms_norm(x, self.w[blk + "attn_norm.weight"])
            q = F.linear(h, self.w[blk + "q_proj.weight"]).view(b, length, self.heads, self.head_dim).transpose(1, 2)
            k = F.linear(h, self.w[blk + "k_proj.weight"]).view(b, length, self.kv_heads, self.head_dim).transpose(1, 2)
            v = F.linear(h, self.w[blk + "v_proj.weight"]).view(b, length, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = self.rope(q, length), self.rope(k, length)
            if self.kv_heads != self.heads:
                k = k.repeat_interleave(self.heads // self.kv_heads, 1)
                v = v.repeat_interleave(self.heads // self.kv_heads, 1)
            a = attention(q, k, v)
            x = x + F.linear(a.transpose(1, 2).reshape(b, length, -1), self.w[blk + "attn_out.weight"])
            h = self.rms_norm(x, self.w[blk + "ff_norm.weight"])
            gate = F.silu(F.linear(h, self.w[blk + "ff_proj.weight"]))
            x = x + F.linear(gate * F.linear(h, self.w[blk + "up_proj.weight"]), self.w[blk + "ff_out.weight"])
        return F.linear(self.rms_norm(x, self.w[p + "ln_f.weight"]), self.head)


def transfer_counts(masked_in_block, steps):
    """Tokens to unmask at each step of a block: an even split, the remainder to the first steps."""
    total = masked_in_block.sum(dim=1, keepdim=True)
    counts = torch.zeros(total.size(0), steps, dtype=torch.int64) + total // steps
    remainder = total % steps
    for row in range(total.size(0)):
        counts[row, : remainder[row]] += 1
    return counts


@torch.no_grad()
def generate(model, prompt, gen_length, block_length, steps, mask_id):
    x = torch.full((1, prompt.shape[1] + gen_length), mask_id, dtype=torch.long)
    x[:, : prompt.shape[1]] = prompt
    blocks = gen_length // block_length
    steps_per_block = steps // blocks
    for n in range(blocks):
        start = prompt.shape[1] + n * block_length
        end = start + block_length
        counts = transfer_counts(x[:, start:end] == mask_id, steps_per_block)
        for i in range(steps_per_block):
            masked = x == mask_id
            logits = model.forward(x)
            x0 = torch.argmax(logits, dim=-1)
            probs = F.softmax(logits.to(torch.float64), dim=-1)
            confidence = torch.gather(probs, -1, x0.unsqueeze(-1)).squeeze(-1)
            confidence[:, end:] = -float("inf")
            x0 = torch.where(masked, x0, x)
            confidence = torch.where(masked, confidence, torch.tensor(-float("inf"), dtype=confidence.dtype))
            chosen = torch.zeros_like(x0, dtype=torch.bool)
            for row in range(confidence.shape[0]):
                _, picked = torch.topk(confidence[row], k=int(counts[row, i]))
                chosen[row, picked] = True
            x[chosen] = x0[chosen]
    return x[:, prompt.shape[1]:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--gen-length", type=int, default=64)
    ap.add_argument("--block-length", type=int, default=32)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="0: one per core")
    a = ap.parse_args()
    if a.gen_length % a.block_length or a.steps % (a.gen_length // a.block_length):
        sys.exit("gen-length must be a multiple of block-length, and steps a multiple of the number of blocks")
    torch.set_num_threads(a.threads or os.cpu_count())
    model = Llada(a.model)
    prompt = torch.tensor([[int(t) for t in a.prompt_ids.split(",")]], dtype=torch.long)
    start = time.perf_counter()
    out = generate(model, prompt, a.gen_length, a.block_length, a.steps, model.c.get("mask_token_id", 126336))
    seconds = time.perf_counter() - start
    print(json.dumps({"ids": out[0].tolist(), "seconds": seconds, "steps": a.steps, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
