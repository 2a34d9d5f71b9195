"""The byte-level BPE both fixture scripts (make_llada_like.py, make_qwen2_like.py) and
tools/golden/make_dream_golden.py use: merges learned greedily (the most frequent pair, ties by
the pair's text, stopping below a count of 2), and GPT-2's bpe() loop to apply them. Python 3
stdlib only; the scripts' pre-tokenizers differ, so they pass the pre-tokenized words in."""

import collections


def merge_pair(symbols, a, b):
    """`symbols` with every adjacent (a, b) merged into a + b, left to right."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def learn_merges(words, num_merges):
    """Greedy BPE over `words` (a Counter of pre-tokenized words, each a string of byte-level
    characters): up to num_merges pairs, most frequent first, ties by the pair's text."""
    words = collections.Counter(words)
    splits = {w: list(w) for w in words}
    merges = []
    for _ in range(num_merges):
        pairs = collections.Counter()
        for w, count in words.items():
            s = splits[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += count
        if not pairs:
            break
        (a, b), count = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if count < 2:
            break
        merges.append((a, b))
        for w in words:
            splits[w] = merge_pair(splits[w], a, b)
    return merges


def bpe(word, ranks):
    """openai/gpt-2 encoder.py's bpe(): merge the lowest-ranked pair everywhere, repeat."""
    sym = list(word)
    while len(sym) > 1:
        pairs = [(ranks[p], p) for p in zip(sym, sym[1:]) if p in ranks]
        if not pairs:
            break
        _, (a, b) = min(pairs)
        sym = merge_pair(sym, a, b)
    return sym
