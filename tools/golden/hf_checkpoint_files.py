"""The files of a Hugging Face checkpoint as make_moe_golden.py writes them: safetensors shards
(writer and reader: 8-byte little-endian header length, JSON header, raw bytes) with their index,
config.json, and the tokenizer files (tokenizer.json, tokenizer_config.json with the Ling-2.0 chat
template), for the tiny vocabulary below."""

import json
import os
import re
import struct

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests", "data")
LLADA_LIKE_TOKENIZER = os.path.join(DATA, "tokenizers", "llada-like.tokenizer.json")

# ---------------------------------------------------------------------------------------------
# Vocabulary. The published models have 157184 rows (tokenizer of the Ling-2.0 family), EOS
# <|endoftext|> 156892 and mask <|mask|> 156895. Here: 512 rows; ids 0..465 are the byte-level
# BPE of tests/data/tokenizers/llada-like.tokenizer.json, 466..511 are unused rows except the
# special tokens below (<|endoftext|> and <|mask|> keep their offsets from 156891).
VOCAB_SIZE = 512
EOS_ID = 501
MASK_ID = 504
SPECIAL_TOKENS = [("<|endoftext|>", EOS_ID), ("<|mask|>", MASK_ID), ("<role>", 505),
                  ("</role>", 506), ("<|role_end|>", 507)]



def tensor_bytes(t):
    if t.dtype == torch.bfloat16:
        return "BF16", t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
    if t.dtype == torch.float32:
        return "F32", t.contiguous().numpy().astype("<f4").tobytes()
    raise ValueError(t.dtype)


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        dtype, raw = tensor_bytes(t)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32)
        elif info["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4")
        else:
            raise ValueError(info["dtype"])
        out[name] = torch.from_numpy(arr.copy()).reshape(info["shape"])
    return out


def save_checkpoint(folder, state, config):
    """Two shards split at half the bytes, in state_dict order, plus the index."""
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        if old.endswith(".safetensors") or old == "model.safetensors.index.json":
            os.remove(os.path.join(folder, old))
    sizes = {k: len(tensor_bytes(v)[1]) for k, v in state.items()}
    total, running, shards = sum(sizes.values()), 0, ({}, {})
    for name, t in state.items():
        shards[0 if running < total / 2 else 1][name] = t
        running += sizes[name]
    names = [f"model-0000{i + 1}-of-00002.safetensors" for i in range(2)]
    weight_map = {}
    for shard, name in zip(shards, names):
        write_safetensors(os.path.join(folder, name), shard)
        weight_map.update({k: name for k in shard})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    write_json(os.path.join(folder, "model.safetensors.index.json"), index)
    write_json(os.path.join(folder, "config.json"), config)


def load_checkpoint(folder):
    index = json.load(open(os.path.join(folder, "model.safetensors.index.json")))
    state = {}
    for shard in sorted(set(index["weight_map"].values())):
        state.update(read_safetensors(os.path.join(folder, shard)))
    return state


def write_json(path, obj, compact_lists=False):
    text = json.dumps(obj, indent=2)
    if compact_lists:  # one line per innermost list keeps the golden files readable
        text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


# =============================================================================================
# Tokenizer files.
# =============================================================================================

# The chat template of inclusionAI's Ling-2.0 models (tokenizer_config.json of Ling-1T as
# llama.cpp prints it), the family whose tokenizer LLaDA2.0 and LLaDA-MoE use; it renders the
# prompt format their model cards show:
#   <role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>{q}<|role_end|><role>ASSISTANT</role>
CHAT_TEMPLATE = r"""{% set thinking_option = 'off' %}
{{- '<role>SYSTEM</role>' }}
{%- if messages[0].role == 'system' %}
    {{- messages[0].content + '\n' }}
{%- endif %}
{%- if tools %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>\n" }}
{%- endif %}
{{- 'detailed thinking ' + thinking_option + '<|role_end|>' }}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if message.role == "user" %}
        {{- '<role>HUMAN</role>' + message.content + '<|role_end|>' }}
    {%- elif message.role == "system" and not loop.first %}
        {{- '<role>SYSTEM</role>' + message.content + '<|role_end|>' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if reasoning_content %}
                {{- '<role>ASSISTANT</role>' + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<role>ASSISTANT</role>' + content }}
            {%- endif %}
        {%- else %}
            {{- '<role>ASSISTANT</role>' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|role_end|>' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<role>OBSERVATION</role>' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|role_end|>' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<role>ASSISTANT</role>' }}
{%- endif %}"""


def write_tokenizer(folder):
    """tokenizer.json: llada-like.tokenizer.json's BPE (ids 0..465) with LLaDA's special tokens
    replaced by the Ling-style ones at the tiny ids above. tokenizer_config.json: the chat template,
    EOS/pad <|endoftext|>, mask <|mask|>, no BOS added."""
    tok = json.load(open(LLADA_LIKE_TOKENIZER))
    old_specials = {t["content"] for t in tok["added_tokens"]}
    vocab = {k: v for k, v in tok["model"]["vocab"].items() if k not in old_specials}
    assert sorted(vocab.values()) == list(range(len(vocab))) and len(vocab) <= min(i for _, i in SPECIAL_TOKENS)
    template = dict(tok["added_tokens"][0])
    tok["added_tokens"] = [dict(template, id=i, content=c) for c, i in SPECIAL_TOKENS]
    vocab.update({c: i for c, i in SPECIAL_TOKENS})
    tok["model"]["vocab"] = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
    config = {
        "add_bos_token": False,
        "add_eos_token": False,
        "added_tokens_decoder": {str(i): {k: v for k, v in dict(template, content=c).items() if k != "id"}
                                 for c, i in SPECIAL_TOKENS},
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|endoftext|>",
        "mask_token": "<|mask|>",
        "model_max_length": 32768,
        "pad_token": "<|endoftext|>",
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    write_json(os.path.join(folder, "tokenizer_config.json"), config)

