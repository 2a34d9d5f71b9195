"""The tiny Dream checkpoints' vocabulary, tokenizer files and chat template, for
make_dream_golden.py (see its docstring and tests/data/dream-golden.md): Qwen2.5's added tokens and
Dream's two at their published offsets from <|endoftext|>, byte-level BPE merges learned with
Qwen2's pre-tokenizer (tests/data/tokenizers/bpe_reference.py), and a reference encoder. The files
are those Dream-v0-Instruct-7B publishes (a slow DreamTokenizer, no tokenizer.json): vocab.json,
merges.txt, added_tokens.json, special_tokens_map.json and tokenizer_config.json, with the same
keys and values as published (tiny ids) and its chat template."""

import collections
import json
import os
import re
import sys
import unicodedata

from hf_checkpoint_files import DATA, write_json

sys.path.insert(0, os.path.join(DATA, "tokenizers"))
import bpe_reference  # noqa: E402  (the merge learning and GPT-2's bpe() loop)
import make_llada_like as llada_like  # noqa: E402  (byte table, \p{L}/\p{N} classes, corpus)

# =============================================================================================
# Vocabulary. Published Dream-v0 (Qwen2.5 tokenizer + two tokens): 152064 rows, <|endoftext|>
# 151643 (EOS = pad = config bos), <|im_start|> 151644, <|im_end|> 151645, <|beginoftext|> 151665,
# <|mask|> 151666. Here 512 rows: ids 0..479 are a byte-level BPE learned below; the special
# tokens keep their offsets from <|endoftext|> (151643 -> 480).
# =============================================================================================
VOCAB_SIZE = 512
SPECIAL_BASE = 480
EOS_ID = SPECIAL_BASE + 0          # <|endoftext|>  151643
IM_START_ID = SPECIAL_BASE + 1     # <|im_start|>   151644
IM_END_ID = SPECIAL_BASE + 2       # <|im_end|>     151645
BOT_ID = SPECIAL_BASE + 22         # <|beginoftext|> 151665
MASK_ID = SPECIAL_BASE + 23        # <|mask|>       151666
PAD_ID = EOS_ID
# (content, special) of Qwen2.5's 22 added tokens (151643..151664) and Dream-v0's two (151665,
# 151666), in id order: tiny id = SPECIAL_BASE + (published id - 151643).
ADDED_TOKENS = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True), ("<|box_start|>", True), ("<|box_end|>", True), ("<|quad_start|>", True),
    ("<|quad_end|>", True), ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False), ("</tool_call>", False),
    ("<|fim_prefix|>", False), ("<|fim_middle|>", False), ("<|fim_suffix|>", False), ("<|fim_pad|>", False),
    ("<|repo_name|>", False), ("<|file_sep|>", False), ("<|beginoftext|>", True), ("<|mask|>", True),
]
SPECIAL_TOKENS = [(c, SPECIAL_BASE + i) for i, (c, _) in enumerate(ADDED_TOKENS)]
IS_SPECIAL = dict(ADDED_TOKENS)
PUBLISHED_IDS = {c: 151643 + i for i, (c, _) in enumerate(ADDED_TOKENS)}
assert dict(SPECIAL_TOKENS)["<|mask|>"] == MASK_ID and dict(SPECIAL_TOKENS)["<|beginoftext|>"] == BOT_ID
NUM_MERGES = SPECIAL_BASE - 256

# Qwen2's pre-tokenizer regex (Dream's tokenization_dream.py PRETOKENIZE_REGEX): like LLaMA-3's
# but single digits (\p{N}, not \p{N}{1,3}).
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
L, N = llada_like.L_CLASS, llada_like.N_CLASS
PY_QWEN2 = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n" + L + N + r"]?[" + L + r"]+|[" + N +
                      r"]| ?[^\s" + L + N + r"]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Dream-v0-Instruct-7B's chat template as published in its tokenizer_config.json (Qwen2.5-Instruct's,
# with the default system message "You are a helpful assistant.").
CHAT_TEMPLATE = (
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    "    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- \"\\n\" }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are a helpful assistant."
    "<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n"
    "            {{- '\\n' + message.content }}\n"
    "        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n"
    "            {%- endif %}\n"
    "            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n"
    "            {{- tool_call.name }}\n"
    "            {{- '\", \"arguments\": ' }}\n"
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n"
    "        {%- endfor %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n")
DEFAULT_SYSTEM = "You are a helpful assistant."


def render_chat(user):
    """What the template above renders for [{"role": "user", "content": user}] with
    add_generation_prompt=True (no tools, no system message)."""
    return (f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


# =============================================================================================
# Tokenizer files.
# =============================================================================================

def pre_tokenize(text):
    return ["".join(llada_like.BYTE_TO_CHAR[b] for b in w.encode("utf-8")) for w in PY_QWEN2.findall(text)]


def train_merges(corpus, num_merges):
    """Greedy byte-level BPE on the corpus (most frequent pair, ties by the pair's text)."""
    words = collections.Counter(pre_tokenize(unicodedata.normalize("NFC", corpus)))
    return bpe_reference.learn_merges(words, num_merges)


class Tokenizer:
    def __init__(self):
        self.merges = train_merges(llada_like.CORPUS, NUM_MERGES)
        # byte tokens in GPT-2's bytes_to_unicode order, as Qwen2's vocab has them ("!" 0, "Ġ" 220)
        vocab = {char: i for i, char in enumerate(llada_like.BYTE_TO_CHAR.values())}
        for a, b in self.merges:
            if a + b not in vocab:
                vocab[a + b] = len(vocab)
        assert len(vocab) <= SPECIAL_BASE, len(vocab)
        self.vocab = vocab
        self.ranks = {m: i for i, m in enumerate(self.merges)}

    def encode(self, text):
        """Reference encoder: special tokens split out first (they are not normalized), NFC on the
        rest, Qwen2's regex, GPT-2's bpe() loop."""
        specials = dict(SPECIAL_TOKENS)
        ids, pos, start, segments = [], 0, 0, []
        while pos < len(text):
            hit = max((c for c in specials if text.startswith(c, pos)), key=len, default=None)
            if hit is None:
                pos += 1
                continue
            segments += [text[start:pos], specials[hit]]
            pos += len(hit)
            start = pos
        segments.append(text[start:])
        for seg in segments:
            if isinstance(seg, int):
                ids.append(seg)
                continue
            for word in pre_tokenize(unicodedata.normalize("NFC", seg)):
                ids.extend(self.vocab[t] for t in bpe_reference.bpe(word, self.ranks))
        return ids

    def write(self, folder):
        """The files Dream-v0-Instruct-7B publishes for its tokenizer, with tiny ids; any
        tokenizer.json from an earlier layout is removed."""
        stale = os.path.join(folder, "tokenizer.json")
        if os.path.exists(stale):
            os.remove(stale)
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(dict(sorted(self.vocab.items())), f, ensure_ascii=False, indent=2)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in self.merges))
        write_json(os.path.join(folder, "added_tokens.json"), dict(sorted(SPECIAL_TOKENS)))
        entry = {"lstrip": False, "normalized": False, "rstrip": False, "single_word": False}
        named = collections.OrderedDict([
            ("additional_special_tokens", ["<|beginoftext|>", "<|mask|>"]),
            ("bos_token", dict(content="<|beginoftext|>", **entry)),
            ("eos_token", dict(content="<|endoftext|>", **entry)),
            ("mask_token", dict(content="<|mask|>", **entry)),
            ("pad_token", dict(content="<|endoftext|>", **entry)),
        ])
        write_json(os.path.join(folder, "special_tokens_map.json"), named)
        config = collections.OrderedDict([
            ("add_bos_token", False),
            ("add_prefix_space", False),
            ("added_tokens_decoder", {str(i): dict(content=c, **entry, special=IS_SPECIAL[c])
                                      for c, i in SPECIAL_TOKENS}),
            ("additional_special_tokens", ["<|beginoftext|>", "<|mask|>"]),
            ("auto_map", {"AutoTokenizer": ["tokenization_dream.DreamTokenizer", None]}),
            ("bos_token", "<|beginoftext|>"),
            ("chat_template", CHAT_TEMPLATE),
            ("clean_up_tokenization_spaces", False),
            ("eos_token", "<|endoftext|>"),
            ("errors", "replace"),
            ("mask_token", "<|mask|>"),
            ("model_max_length", 131072),
            ("pad_token", "<|endoftext|>"),
            ("split_special_tokens", False),
            ("tokenizer_class", "DreamTokenizer"),
            ("unk_token", None),
        ])
        write_json(os.path.join(folder, "tokenizer_config.json"), config)


def write_generation_config(folder):
    """generation_config.json as published for Dream-v0-Instruct-7B (tiny ids). Note its
    mask_token_id is null: diffusion_generate() never reads this file (see dream-golden.md)."""
    write_json(os.path.join(folder, "generation_config.json"), collections.OrderedDict([
        ("_from_model_config", True), ("alg", "origin"), ("alg_temp", None), ("bos_token_id", EOS_ID),
        ("eos_token_id", EOS_ID), ("eps", 0.001), ("mask_token_id", None), ("output_history", False),
        ("pad_token_id", PAD_ID), ("steps", 512), ("temperature", 0.0), ("top_k", None), ("top_p", None),
        ("transformers_version", "4.46.2")]))


TOKENIZER_TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "It's IT'S we're they'll I'd you've",
    "Numbers 1234567890 and 3.14159, 42",
    "line one\nline two\r\n\n  indented  ",
    "Cafe\u0301 na\u0308ive",  # decomposed: NFC composes before the split
    "def f(x):\n    return x ** 2\n",
    "\u65e5\u672c\u8a9e \u4e2d\u6587 \u041f\u0440\u0438\u0432\u0435\u0442",
    "a<|mask|><|mask|>b <|endoftext|>",
    "<tool_call>\n{\"name\": \"f\"}\n</tool_call><|beginoftext|>",
    render_chat("What is the capital of France?"),
]
