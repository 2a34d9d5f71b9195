#!/usr/bin/env python3
"""Writes the hand-derived seeds of fuzz/corpus/ from the test data (tests/data): a small
safetensors file cut from the tiny-llada shard (its norm tensors, real bytes), indexes for the
sharded_index target's two scratch shards, config.json variants, tokenizer.json variants of the
llada-like tokenizer, conversations, and OpenAI/RPC requests. Deterministic; rerun by
fuzz/make_corpus.sh. Every seed stays small (the corpus is kept in the repository)."""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")


def write(corpus, target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors_seeds(corpus):
    path = os.path.join(DATA, "tiny-llada", "model-00001-of-00002.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        start = 8 + n
        keep = {k: v for k, v in header.items() if k != "__metadata__" and len(v["shape"]) == 1}
        out_header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
        for name, info in keep.items():
            b, e = info["data_offsets"]
            f.seek(start + b)
            blob = f.read(e - b)
            out_header[name] = {"dtype": info["dtype"], "shape": info["shape"], "data_offsets": [offset, offset + len(blob)]}
            blobs.append(blob)
            offset += len(blob)
    text = json.dumps(out_header, separators=(",", ":")).encode()
    write(corpus, "safetensors", "tiny-llada-norms.safetensors", struct.pack("<Q", len(text)) + text + b"".join(blobs))


def index_seeds(corpus):
    shard1, shard2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    good = {"metadata": {"total_size": 24}, "weight_map": {
        "model.transformer.wte.weight": shard1, "model.transformer.ln_f.weight": shard1,
        "model.transformer.ff_out.weight": shard2}}
    write(corpus, "sharded_index", "scratch-shards.json", json.dumps(good, indent=2))
    write(corpus, "sharded_index", "one-shard.json", json.dumps({"weight_map": {"model.transformer.wte.weight": shard1}}))
    with open(os.path.join(DATA, "tiny-llada", "model.safetensors.index.json")) as f:
        write(corpus, "sharded_index", "tiny-llada.index.json", f.read())


def config_seeds(corpus):
    with open(os.path.join(DATA, "tiny-llada", "config.json")) as f:
        text = f.read()
    write(corpus, "config_json", "tiny-llada.json", text)
    base = json.loads(text)
    gqa = dict(base, n_kv_heads=2, weight_tying=True, eot_token_id=126348)
    write(corpus, "config_json", "gqa-tied.json", json.dumps(gqa))
    ratio = {k: v for k, v in base.items() if k != "mlp_hidden_size"}
    write(corpus, "config_json", "mlp-ratio.json", json.dumps(ratio))
    minimal = {"d_model": 32, "n_heads": 2, "n_layers": 1, "vocab_size": 64, "mask_token_id": 63, "eos_token_id": 62}
    write(corpus, "config_json", "minimal.json", json.dumps(minimal))


def tokenizer_seeds(corpus):
    with open(os.path.join(DATA, "tokenizers", "llada-like.tokenizer.json")) as f:
        text = f.read()
    write(corpus, "tokenizer_json", "llada-like.json", text)
    base = json.loads(text)
    small_vocab = dict(list(base["model"]["vocab"].items())[:300])
    merges = []
    for m in base["model"]["merges"]:
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in small_vocab and b in small_vocab and a + b in small_vocab:
            merges.append(m)
    small = dict(base, model=dict(base["model"], vocab=small_vocab, merges=merges))
    small["added_tokens"] = [t for t in base["added_tokens"] if t["id"] < 300] + [
        {"id": 299, "content": "<|x|>", "single_word": True, "lstrip": True, "rstrip": True, "normalized": True, "special": False}]
    variants = {
        "normalizers": {"normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Replace", "pattern": {"String": "  "}, "content": " "},
            {"type": "Prepend", "prepend": "_"}, {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "StripAccents"}, {"type": "NFD"}]}},
        "pretokenizers": {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "\\d+|\\s+"}, "behavior": "Isolated", "invert": False},
            {"type": "Digits", "individual_digits": True}, {"type": "Punctuation", "behavior": "Contiguous"},
            {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]}},
        "decoders": {"decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}]}},
        "bytefallback": {"model": dict(small["model"], byte_fallback=True, unk_token="<unk>", fuse_unk=True,
                                       merges=[m.split(" ", 1) if isinstance(m, str) else m for m in merges])},
        "whitespace": {"pre_tokenizer": {"type": "Whitespace"}, "normalizer": {"type": "ByteLevel"}, "decoder": None},
    }
    write(corpus, "tokenizer_json", "small.json", json.dumps(small, ensure_ascii=False))
    for name, change in variants.items():
        write(corpus, "tokenizer_json", name + ".json", json.dumps(dict(small, **change), ensure_ascii=False))


SLOW_SEPARATOR = "\n~~~file~~~\n"  # slow_tokenizer_fuzz.cc's


def slow_tokenizer_seeds(corpus):
    """Dream's published layout (tests/data/tiny-dream: vocab.json, merges.txt,
    tokenizer_config.json, added_tokens.json), with the added tokens from the config or from
    added_tokens.json, and GPT-2's family."""
    def read(name):
        with open(os.path.join(DATA, "tiny-dream", name), encoding="utf-8") as f:
            return f.read()
    vocab, merges, config, added = (read(n) for n in ("vocab.json", "merges.txt", "tokenizer_config.json",
                                                      "added_tokens.json"))
    small_config = json.loads(config)
    small_config.pop("chat_template")
    write(corpus, "slow_tokenizer", "dream.txt", SLOW_SEPARATOR.join([vocab, merges, json.dumps(small_config)]))
    legacy = {"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|endoftext|>",
              "additional_special_tokens": ["<|mask|>"]}
    write(corpus, "slow_tokenizer", "added-tokens-json.txt",
          SLOW_SEPARATOR.join([vocab, merges, json.dumps(legacy), added]))
    gpt2 = {"tokenizer_class": "GPT2TokenizerFast", "add_prefix_space": True}
    write(corpus, "slow_tokenizer", "gpt2.txt", SLOW_SEPARATOR.join([vocab, merges, json.dumps(gpt2)]))


def chat_seeds(corpus):
    convs = {
        "one-user.txt": b"\x01user\x01Hello there",
        "system-first.txt": b"\x01system\x01You are a helpful assistant.\x00user\x01What is 2+2?",
        "multi-turn.txt": "\x00user\x01Bonjour, ça va ?\x00assistant\x01Oui ! 😀\x00user\x01  and <|eot_id|> inside  ".encode(),
        "bad-role.txt": b"\x01tool\x01x\x00user\x01y",
    }
    for name, data in convs.items():
        write(corpus, "chat_template", name, data)


def http_seeds(corpus):
    bodies = {
        "chat.json": {"model": "tiny", "messages": [{"role": "developer", "content": "Be brief."},
                      {"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                      "max_tokens": 32, "temperature": 0.5, "stream": True, "stream_options": {"include_usage": True},
                      "stop": ["\n\n", "END"], "seed": 7, "user": "u1"},
        "completion.json": {"model": "tiny", "prompt": "In the beginning", "max_tokens": 16, "steps": 16,
                            "block_length": 8, "sampler": "dual_cache+threshold", "threshold": 0.9,
                            "remasking": "random", "early_stop": False, "priority": 3, "n": 1},
        "ids.json": {"model": "tiny", "prompt": [1, 2, 3], "max_completion_tokens": 8, "factor": 1.5, "cfg_scale": 0.5,
                     "sampler": "prefix_cache+factor", "top_p": 1, "best_of": 1, "response_format": {"type": "text"}},
        "refused.json": {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "logprobs": True, "n": 2},
        "scoring.json": {"model": "tiny", "prompt": "In the beginning God", "max_tokens": 0, "echo": True,
                         "logprobs": 1, "temperature": 0},
        "likelihood.json": {"model": "tiny", "prompt": "In the beginning God", "seed": 3, "cfg_scale": 0.5,
                            "likelihood": {"continuation": " created", "mc_num": 32, "batch_size": 8,
                                           "rows_per_forward": 4, "check_greedy": True}},
        "prompt-logprobs.json": {"model": "tiny", "messages": [{"role": "user", "content": "x"}],
                                 "prompt_logprobs": 2, "max_tokens": 4},
        "likelihood-ids.json": {"model": "tiny", "prompt": [1, 2, 3, 4], "max_tokens": 0,
                                "likelihood": {"continuation_tokens": 2}},
        "tools.json": {"model": "tiny", "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d", "strict": True,
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "parallel_tool_calls": False},
    }
    for name, body in bodies.items():
        write(corpus, "http_request", name, json.dumps(body, ensure_ascii=False))


def tool_call_seeds(corpus):
    outputs = {
        "two-calls.txt": 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
                         '<tool_call>\n{"name": "no_args"}\n</tool_call>',
        "string-arguments.txt": '<tool_call>{"name": "f", "arguments": "{\\"x\\": [1, 2.5, null]}"}',
        "forced-rest.txt": '{"city": "Rome"}}\n</tool_call>',
        "broken.txt": '<tool_call>\n{"name": "f", "arguments": {"x": 1\n</tool_call> and <tool_ca',
        "text.txt": "The LORD is my shepherd; I shall not want. <tool",
    }
    for name, data in outputs.items():
        write(corpus, "tool_calls", name, data)


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fuzz", "corpus")
    safetensors_seeds(corpus)
    index_seeds(corpus)
    config_seeds(corpus)
    tokenizer_seeds(corpus)
    slow_tokenizer_seeds(corpus)
    chat_seeds(corpus)
    http_seeds(corpus)
    tool_call_seeds(corpus)


if __name__ == "__main__":
    main()
