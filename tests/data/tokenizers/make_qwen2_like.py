#!/usr/bin/env python3
"""Generates qwen2-like.tokenizer.json and qwen2-like.golden.json (Python 3 stdlib only).

qwen2-like.tokenizer.json is a small tokenizer in the exact Hugging Face tokenizer.json layout that
Qwen2 / Qwen2.5 publish and Dream-v0 (a Qwen2.5 derivative) reuses:
  normalizer      NFC
  pre_tokenizer   Sequence[Split(Qwen2 regex, Isolated, invert false),
                           ByteLevel(add_prefix_space false, trim_offsets false, use_regex false)]
  post_processor  ByteLevel(false, false, false)     decoder  ByteLevel(false, false, false)
  model           BPE, unk_token null, continuing_subword_prefix "", end_of_word_suffix "",
                  fuse_unk false, byte_fallback false, ignore_merges false, merges as "a b" strings
  added_tokens    Qwen2.5's 22 tokens at 151643..151664 (<|endoftext|> .. <|video_pad|> special,
                  <tool_call> .. <|file_sep|> not special), all normalized false, plus Dream-v0's
                  <|beginoftext|> 151665 and <|mask|> 151666.
The vocabulary is the 256 byte characters (ids in GPT-2's bytes_to_unicode order, so "!" is 0 and
"Ġ" is 220) plus merges learned here on a small built-in corpus; ids below 151643 mean nothing
outside this file.

qwen2-like.golden.json holds texts, the ids a straightforward reference encoder written below gives
for them, and the text those ids decode to. The reference follows tokenizers' pipeline step by step:
added tokens split out of the raw text (longest match; special ones only when parsing them),
unicodedata NFC on the rest, the Qwen2 regex emulated with Python's `re` (\\p{L}, \\p{N} and \\s
spelled out as explicit classes: \\s as Oniguruma's, U+0009..U+000D, U+0085 and categories Zs, Zl,
Zp; Python's own \\s would also take U+001C..U+001F), the matches and the gaps between them kept
(Isolated), GPT-2's byte-to-character map, and GPT-2's bpe() loop. It is an independent check of
the C++ encoder. Every decoded text equals NFC(text) (asserted below).

Both files are committed; tests never run this script. Re-run it only to change the fixture, with
the system Python 3.11 (stdlib only; deterministic; unicodedata 14.0.0):
    /usr/bin/python3 tests/data/tokenizers/make_qwen2_like.py
"""

import collections
import json
import os
import re
import unicodedata

from bpe_reference import bpe, learn_merges

HERE = os.path.dirname(os.path.abspath(__file__))
NUM_MERGES = 1500

# The Split pre-tokenizer regex of Qwen2 / Qwen2.5 (\p{N} one digit at a time, unlike LLaMA-3).
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# (content, id, special) as in Qwen2.5's tokenizer.json, then Dream-v0's two additions.
ADDED_TOKENS = [
    ("<|endoftext|>", 151643, True),
    ("<|im_start|>", 151644, True),
    ("<|im_end|>", 151645, True),
    ("<|object_ref_start|>", 151646, True),
    ("<|object_ref_end|>", 151647, True),
    ("<|box_start|>", 151648, True),
    ("<|box_end|>", 151649, True),
    ("<|quad_start|>", 151650, True),
    ("<|quad_end|>", 151651, True),
    ("<|vision_start|>", 151652, True),
    ("<|vision_end|>", 151653, True),
    ("<|vision_pad|>", 151654, True),
    ("<|image_pad|>", 151655, True),
    ("<|video_pad|>", 151656, True),
    ("<tool_call>", 151657, False),
    ("</tool_call>", 151658, False),
    ("<|fim_prefix|>", 151659, False),
    ("<|fim_middle|>", 151660, False),
    ("<|fim_suffix|>", 151661, False),
    ("<|fim_pad|>", 151662, False),
    ("<|repo_name|>", 151663, False),
    ("<|file_sep|>", 151664, False),
    ("<|beginoftext|>", 151665, True),  # Dream-v0 bos
    ("<|mask|>", 151666, True),  # Dream-v0 mask_token_id
]

CORPUS = """
The quick brown fox jumps over the lazy dog. A language model predicts the next token; a masked
diffusion language model instead starts from a fully masked answer and unmasks tokens step by step.
Dream is a diffusion language model initialized from Qwen2.5 with a 7B parameter transformer. It was
trained on 580 billion tokens. In every step the model predicts the masked positions at once, keeps
the most confident predictions and remasks the rest.
<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
What is the capital of France?<|im_end|>
<|im_start|>assistant
The capital of France is Paris.<|im_end|>
<|im_start|>user
How many hours are there in a day?<|im_end|>
<|im_start|>assistant
There are 24 hours in a day, 60 minutes in an hour and 3600 seconds in an hour.<|im_end|>
It's a good day, isn't it? We're here, they'll come later, I'd say you've seen what she's done.
IT'S A GOOD DAY, ISN'T IT? WE'RE HERE, THEY'LL COME LATER, I'D SAY YOU'VE SEEN WHAT SHE'S DONE.
I'm sure I'M SURE. Don't DON'T won't WON'T.
Please write a short poem about the sea. The sea is wide and the waves are high, under the sky.
Summarize the following text in one sentence. Translate the following sentence into French.
line one\r\nline two\r\nline three\r\n\r\nline four\r\n  indented\r\n\r\n\r\n
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
<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris"}}
</tool_call>
Numbers: 1234567890 3.14159 2.71828 42 1000000 2024-01-01 12:30:45
Le café est très bon. Über den Wolken. El niño está aquí. Ångström. Привет, мир! Ελληνικά.
日本語のテキストです。中文测试，标点符号。你好，世界！今天天气很好。한국어 텍스트 안녕하세요.
emoji 😀😀 🚀🚀 👍👍 🎉🎉 trailing spaces   \nend   \n
Mongolian: ᠬᠠᠨ \u180eᠠ ᠬᠠᠨ \u180eᠠ ᠬᠠᠨ \u180eᠠ (U+180E is no white space to Oniguruma).
A masked diffusion model reads the whole sequence at once. The prompt stays fixed while the answer
starts as a row of mask tokens; at each step the model scores every masked position, the sampler
commits the positions it is most confident about, and the others stay masked for the next step.
With fewer steps than tokens several tokens are committed per step, which is faster but can hurt
quality. The serving system batches requests, shares the prompt's key and value cache, and streams
the committed tokens to the client as soon as a block is finished.
她说今天天气很好，我们一起去公园散步吧。他说好的，我们下午三点在公园门口见面。
東京は日本の首都です。今日はいい天気ですね。明日も晴れるでしょう。
"""


def bytes_to_unicode():
    """GPT-2's byte -> character table, in GPT-2's order (printable bytes first)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]


BYTE_ORDER = bytes_to_unicode()
BYTE_TO_CHAR = dict(BYTE_ORDER)
CHAR_TO_BYTE = {c: b for b, c in BYTE_ORDER}


def char_class(test):
    """A regex class body matching every code point for which test(code point) holds."""
    parts, start, prev = [], None, None
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if test(cp):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            parts.append("\\U%08x-\\U%08x" % (start, prev))
            start = None
    if start is not None:
        parts.append("\\U%08x-\\U%08x" % (start, prev))
    return "".join(parts)


L = char_class(lambda cp: unicodedata.category(chr(cp)).startswith("L"))
N = char_class(lambda cp: unicodedata.category(chr(cp)).startswith("N"))
# Oniguruma's \s (what tokenizers' Split regex uses): 0009-000D, 0085, Zs, Zl, Zp.
S = char_class(lambda cp: 9 <= cp <= 13 or cp == 0x85 or unicodedata.category(chr(cp)) in ("Zs", "Zl", "Zp"))
# QWEN2_PATTERN with every class spelled out.
PY_PATTERN = re.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
    r"|[^\r\n" + L + N + r"]?[" + L + r"]+"
    r"|[" + N + r"]"
    r"| ?[^" + S + L + N + r"]+[\r\n]*"
    r"|[" + S + r"]*[\r\n]+"
    r"|[" + S + r"]+(?![^" + S + r"])"
    r"|[" + S + r"]+")


def split_isolated(text):
    """Split(behavior Isolated): every match is a piece, and so is every gap between matches."""
    pieces, last = [], 0
    for m in PY_PATTERN.finditer(text):
        if m.start() > last:
            pieces.append(text[last:m.start()])
        if m.end() > m.start():
            pieces.append(m.group())
        last = m.end()
    if last < len(text):
        pieces.append(text[last:])
    return pieces


def pre_tokenize(text):
    """NFC, the Qwen2 split, then ByteLevel(use_regex=false): bytes as GPT-2 characters."""
    return ["".join(BYTE_TO_CHAR[b] for b in w.encode("utf-8"))
            for w in split_isolated(unicodedata.normalize("NFC", text))]


def split_added(text, parse_special):
    """Raw text -> str segments and int ids of added tokens (longest match at the leftmost position)."""
    tokens = {c: i for c, i, special in ADDED_TOKENS if parse_special or not special}
    out, pos, start = [], 0, 0
    while pos < len(text):
        hit = max((c for c in tokens if text.startswith(c, pos)), key=len, default=None)
        if hit is None:
            pos += 1
            continue
        out.append(text[start:pos])
        out.append(tokens[hit])
        pos += len(hit)
        start = pos
    out.append(text[start:])
    return [s for s in out if s != ""]


def train(corpus, num_merges):
    words = collections.Counter()
    for seg in split_added(corpus, True):
        if isinstance(seg, str):
            words.update(pre_tokenize(seg))
    return learn_merges(words, num_merges)


def reference_encode(text, vocab, ranks, parse_special):
    ids = []
    for seg in split_added(text, parse_special):
        if isinstance(seg, int):
            ids.append(seg)
            continue
        for word in pre_tokenize(seg):
            ids.extend(vocab[t] for t in bpe(word, ranks))
    return ids


def reference_decode(ids, id_to_token):
    """ByteLevel decoder: each token's characters back to bytes (a token with a character outside
    the byte map, none here, would pass through as its UTF-8), then lossy UTF-8."""
    data = bytearray()
    for i in ids:
        token = id_to_token[i]
        if all(c in CHAR_TO_BYTE for c in token):
            data.extend(CHAR_TO_BYTE[c] for c in token)
        else:
            data.extend(token.encode("utf-8"))
    return data.decode("utf-8", errors="replace")


QWEN2_TEXTS = [
    # Digits: \p{N} takes one digit at a time, whatever the script (No and Nl included).
    ("1234567890", True),
    ("Numbers 1234567890 and 3.14159, 42 and -7, 2024-01-01 12:30:45", True),
    ("x² + y³ = z½, Ⅻ ① ٣٤٥ ５６ ๑๒", True),
    # Contractions: (?i:...) takes them in any case; 'ſ (long s) folds to 's.
    ("IT'S WE'RE THEY'LL I'D YOU'VE SHE'S I'M DON'T", True),
    ("It'S wE'Re tHeY'lL i'D yOu'Ve", True),
    ("'s 'S 'sa ''s 'ſ 'ST", True),
    # CJK, Hangul, emoji.
    ("日本語のテキストです。中文测试，标点符号。你好，世界！", True),
    ("한국어 텍스트 안녕하세요. カタカナ ｶﾀｶﾅ", True),
    ("emoji 😀🚀 and ZWJ 👩\u200d👩\u200d👧 flag 🇯🇵 skin 👍🏽", True),
    # NFC: combining sequences composed, singletons replaced, reordered, not NFKC.
    ("Cafe\u0301 nai\u0308ve A\u030angstro\u0308m", True),
    ("\u212b \u2126 \u1100\u1161\u11a8 \u0041\u0301", True),
    ("q\u0303 a\u0323\u0302 a\u0302\u0323 e\u0301\u0301", True),
    ("ﬁ ﬀ ² ｈｅｌｌｏ \u00e9 \u0065\u0301", True),
    # \r\n runs and trailing whitespace.
    ("line one\r\nline two\r\n\r\n\r\nend\r\n", True),
    ("a\r\rb\n\r\nc \r\n  d\n\n", True),
    ("  \r\n\r\n  x  \r\n", True),
    ("trailing spaces   ", True),
    ("tabs and spaces \t \t", True),
    ("end \n  ", True),
    # Unicode whitespace as Oniguruma sees it: NEL and NBSP are \s; U+180E and U+001F are not.
    ("a\u0085 b\u00a0 c\u3000\u3000d\u2003 \u2028e !\u0085", True),
    ("x\u180e y \u180e\u180e z\u001f w\u001c ", True),
    ("ᠬᠠᠨ \u180eᠠ x \u180ey", True),
    # Special tokens inside text.
    ("<|im_start|>user\nhi<|im_end|>", True),
    ("<|im_start|>user\nhi<|im_end|>", False),
    ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
     "What is 2+2? Answer in one word.<|im_end|>\n<|im_start|>assistant\nFour.<|im_end|>\n"
     "<|im_start|>user\nIt's 4, isn't it?<|im_end|>\n<|im_start|>assistant\n", True),
    ("<|beginoftext|>The answer is <|mask|><|mask|><|mask|>.<|endoftext|>", True),
    ("<|mask|><|mask|> x <|endoftext|>", False),
    # Non-special added tokens are found with special-token parsing off too.
    ("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", True),
    ("<tool_call>\n{\"name\": \"f\"}\n</tool_call><|im_end|>", False),
    ("<|fim_prefix|>def f(x):\n    <|fim_suffix|>\n    return y<|fim_middle|>", False),
    ("<|repo_name|>unmask\n<|file_sep|>main.cc\nint main() {}\n", True),
    ("<|im_start|<|im_start|><|im_end|><|im_start|>", True),
    ("<|vision_start|><|image_pad|><|image_pad|><|vision_end|>Describe it.", True),
]


def golden_texts():
    with open(os.path.join(HERE, "..", "gpt2", "gpt2.golden.json"), encoding="utf-8") as f:
        gpt2 = json.load(f)
    return [(c["text"], True) for c in gpt2["cases"]] + QWEN2_TEXTS


def main():
    merges = train(CORPUS, NUM_MERGES)
    vocab = {c: i for i, (_, c) in enumerate(BYTE_ORDER)}
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    ranks = {m: i for i, m in enumerate(merges)}
    id_to_token = {i: t for t, i in vocab.items()}
    id_to_token.update({i: c for c, i, _ in ADDED_TOKENS})

    byte_level = collections.OrderedDict(
        [("type", "ByteLevel"), ("add_prefix_space", False), ("trim_offsets", False), ("use_regex", False)])
    tokenizer = collections.OrderedDict([
        ("version", "1.0"),
        ("truncation", None),
        ("padding", None),
        ("added_tokens", [
            collections.OrderedDict([("id", token_id), ("content", content), ("single_word", False),
                                     ("lstrip", False), ("rstrip", False), ("normalized", False),
                                     ("special", special)])
            for content, token_id, special in ADDED_TOKENS
        ]),
        ("normalizer", {"type": "NFC"}),
        ("pre_tokenizer", collections.OrderedDict([
            ("type", "Sequence"),
            ("pretokenizers", [
                collections.OrderedDict([("type", "Split"), ("pattern", {"Regex": QWEN2_PATTERN}),
                                         ("behavior", "Isolated"), ("invert", False)]),
                byte_level,
            ]),
        ])),
        ("post_processor", byte_level),
        ("decoder", byte_level),
        ("model", collections.OrderedDict([
            ("type", "BPE"),
            ("dropout", None),
            ("unk_token", None),
            ("continuing_subword_prefix", ""),
            ("end_of_word_suffix", ""),
            ("fuse_unk", False),
            ("byte_fallback", False),
            ("ignore_merges", False),
            ("vocab", vocab),
            ("merges", ["%s %s" % (a, b) for a, b in merges]),  # Qwen2's "a b" string form
        ])),
    ])
    with open(os.path.join(HERE, "qwen2-like.tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")

    cases = []
    for text, parse_special in golden_texts():
        ids = reference_encode(text, vocab, ranks, parse_special)
        decoded = reference_decode(ids, id_to_token)
        assert decoded == unicodedata.normalize("NFC", text), (text, decoded)
        cases.append(collections.OrderedDict(
            [("text", text), ("parse_special_tokens", parse_special), ("ids", ids), ("decoded", decoded)]))
    golden = {
        "tokenizer": "qwen2-like.tokenizer.json",
        "reference": "make_qwen2_like.py reference_encode (added-token split, NFC, re-emulated Qwen2 split with "
                     "Oniguruma's \\s, GPT-2 bpe loop) and reference_decode",
        "cases": cases,
    }
    with open(os.path.join(HERE, "qwen2-like.golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%d merges, %d vocab entries, %d golden cases" % (len(merges), len(vocab), len(cases)))


if __name__ == "__main__":
    main()
