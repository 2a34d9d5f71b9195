#!/usr/bin/env python3
"""Generates llada-like.tokenizer.json and llada-like.golden.json (Python 3 stdlib only).

llada-like.tokenizer.json is a small tokenizer in the exact Hugging Face tokenizer.json format
of the LLaDA-8B-Instruct tokenizer: byte-level BPE, a LLaMA-3 style Split pre-tokenizer followed by
ByteLevel(use_regex=false), a ByteLevel decoder, and LLaDA's special tokens at their real ids
(<|startoftext|> 126080 ... <|eot_id|> 126348). The vocabulary is the 256 byte characters plus
merges learned here on a small built-in corpus, so ids below 126080 mean nothing outside this file.

llada-like.golden.json holds texts and the ids a straightforward reference encoder written below
gives for them (special tokens split out first, the LLaMA-3 regex emulated with Python's `re`,
GPT-2's bpe() loop). It is an independent check of the C++ encoder.

Both files are committed; tests never run this script. Re-run it only to change the fixture:
    python3 tests/data/tokenizers/make_llada_like.py
"""

import collections
import json
import os
import re
import unicodedata

from bpe_reference import bpe, learn_merges

HERE = os.path.dirname(os.path.abspath(__file__))
NUM_MERGES = 1200

# The pre-tokenizer regex of LLaMA-3 (and of LLaDA's tokenizer.json).
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIAL_TOKENS = [  # (content, id) exactly as in LLaDA-8B-Instruct
    ("<|startoftext|>", 126080),
    ("<|endoftext|>", 126081),
    ("<|mdm_mask|>", 126336),
    ("<|start_header_id|>", 126346),
    ("<|end_header_id|>", 126347),
    ("<|eot_id|>", 126348),
]

CORPUS = """
The quick brown fox jumps over the lazy dog. A language model predicts the next token; a masked
diffusion language model instead starts from a fully masked answer and unmasks tokens step by step.
LLaDA is a large language diffusion model with an 8B parameter transformer. It was trained from
scratch on 2.3 trillion tokens and then fine-tuned on instruction data. In every step the model
predicts all masked positions at once, keeps the most confident predictions and remasks the rest.
What is the capital of France? The capital of France is Paris. How many hours are there in a day?
There are 24 hours in a day, 60 minutes in an hour and 3600 seconds in an hour.
It's a good day, isn't it? We're here, they'll come later, I'd say you've seen what she's done.
Please write a short poem about the sea. The sea is wide and the waves are high, under the sky.
user assistant system user assistant system The user asks a question and the assistant answers.
You are a helpful assistant. Answer the question of the user as well as you can.
Summarize the following text in one sentence. Translate the following sentence into French.
def fibonacci(n):
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)

for i in range(10):
    print(i, fibonacci(i))

int main(int argc, char** argv) {
  std::vector<int> values = {1, 2, 3};
  for (int v : values) std::cout << v << "\\n";
  return 0;
}
class Tokenizer:
    def __init__(self, path):
        self.path = path
    def encode(self, text):
        return [ord(c) for c in text]
Numbers: 1234567890 3.14159 2.71828 42 1000000 2024-01-01 12:30:45
Le café est très bon. Über den Wolken. El niño está aquí. Привет, мир! 日本語のテキスト 中文测试
"""


def bytes_to_unicode():
    """GPT-2's byte -> character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_TO_CHAR = bytes_to_unicode()


def char_class(prefix):
    """A regex class body matching every code point whose general category starts with prefix."""
    parts, start, prev = [], None, None
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if unicodedata.category(chr(cp)).startswith(prefix):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            parts.append("\\U%08x-\\U%08x" % (start, prev))
            start = None
    if start is not None:
        parts.append("\\U%08x-\\U%08x" % (start, prev))
    return "".join(parts)


L_CLASS = char_class("L")
N_CLASS = char_class("N")
# LLAMA3_PATTERN with \p{L} / \p{N} spelled out, since `re` has no Unicode property classes.
PY_PATTERN = re.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n" + L_CLASS + N_CLASS + r"]?[" + L_CLASS + r"]+|[" + N_CLASS +
    r"]{1,3}| ?[^\s" + L_CLASS + N_CLASS + r"]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def pre_tokenize(text):
    return ["".join(BYTE_TO_CHAR[b] for b in w.encode("utf-8")) for w in PY_PATTERN.findall(text)]


def train(corpus, num_merges):
    return learn_merges(collections.Counter(pre_tokenize(corpus)), num_merges)


def reference_encode(text, vocab, ranks, parse_special):
    specials = dict(SPECIAL_TOKENS) if parse_special else {}
    ids, pos, start = [], 0, 0
    segments = []
    while pos < len(text):
        hit = max((c for c in specials if text.startswith(c, pos)), key=len, default=None)
        if hit is None:
            pos += 1
            continue
        segments.append(text[start:pos])
        segments.append(specials[hit])
        pos += len(hit)
        start = pos
    segments.append(text[start:])
    for seg in segments:
        if isinstance(seg, int):
            ids.append(seg)
            continue
        for word in pre_tokenize(seg):
            ids.extend(vocab[t] for t in bpe(word, ranks))
    return ids


GOLDEN_TEXTS = [
    ("Hello world", True),
    ("The quick brown fox jumps over the lazy dog.", True),
    ("It's IT'S it'S we're WE'RE they'll I'd you've she's", True),
    ("Numbers 1234567890 and 3.14159, 42 and -7", True),
    ("line one\nline two\r\nline three\n\n\nend", True),
    ("  leading and trailing spaces  ", True),
    ("tabs\tand    runs     of spaces\t\t x", True),
    ("def f(x):\n    return x ** 2  # square\n", True),
    ("Le café est très bon. Über den Wolken. Привет, мир!", True),
    ("日本語のテキスト 中文测试，标点。", True),
    ("emoji 😀🚀 and ZWJ 👩\u200d👩\u200d👧", True),
    ("!!!???...,,,;;;::: <<>> ((x))", True),
    ("'s 'S 'sa ''s", True),
    ("<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n", True),
    ("a<|eot_id|>b<|mdm_mask|><|mdm_mask|> c <|endoftext|>", True),
    ("a<|eot_id|>b<|mdm_mask|> c <|endoftext|>", False),
    ("<|start_header_id|", True),
    ("", True),
]


def main():
    merges = train(CORPUS, NUM_MERGES)
    vocab = {BYTE_TO_CHAR[b]: b for b in range(256)}
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    for content, token_id in SPECIAL_TOKENS:
        vocab[content] = token_id
    ranks = {m: i for i, m in enumerate(merges)}

    tokenizer = collections.OrderedDict([
        ("version", "1.0"),
        ("truncation", None),
        ("padding", None),
        ("added_tokens", [
            {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for content, token_id in SPECIAL_TOKENS
        ]),
        ("normalizer", None),
        ("pre_tokenizer", {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        }),
        ("post_processor", {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}),
        ("decoder", {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}),
        ("model", collections.OrderedDict([
            ("type", "BPE"),
            ("dropout", None),
            ("unk_token", None),
            ("continuing_subword_prefix", None),
            ("end_of_word_suffix", None),
            ("fuse_unk", False),
            ("byte_fallback", False),
            ("ignore_merges", False),
            ("vocab", vocab),
            ("merges", [[a, b] for a, b in merges]),  # the newer pair form
        ])),
    ])
    with open(os.path.join(HERE, "llada-like.tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")

    cases = []
    for text, parse_special in GOLDEN_TEXTS:
        ids = reference_encode(text, vocab, ranks, parse_special)
        cases.append({"text": text, "parse_special_tokens": parse_special, "ids": ids})
    golden = {
        "tokenizer": "llada-like.tokenizer.json",
        "reference": "make_llada_like.py reference_encode (re-emulated LLaMA-3 split + GPT-2 bpe loop)",
        "cases": cases,
    }
    with open(os.path.join(HERE, "llada-like.golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%d merges, %d vocab entries, %d golden cases" % (len(merges), len(vocab), len(cases)))


if __name__ == "__main__":
    main()
