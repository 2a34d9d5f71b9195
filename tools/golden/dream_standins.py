"""Stand-ins that the official Dream files (ZHZisZZ/dllm dllm/pipelines/dream/models/* and the
Fast-dLLM Dream variant dllm/pipelines/fastdllm/dream/*) need on top of transformers_standins.py,
for make_dream_golden.py. install_dream_standins() installs the shared stand-ins first and then
adds to (never changes) the modules they registered, so the other golden scripts are unaffected:
nothing here is imported by them. Each stand-in says what it stands for and why it is enough on
the float32 CPU path the goldens take."""

import dataclasses
import math
import sys

import torch

import transformers_standins as base


@dataclasses.dataclass
class BaseModelOutput(base.ModelOutput):
    """modeling_outputs.BaseModelOutput (field order as in transformers: the Fast-dLLM file calls
    its __init__ positionally)."""
    last_hidden_state: torch.Tensor = None
    hidden_states: tuple = None
    attentions: tuple = None


@dataclasses.dataclass
class MaskedLMOutput(base.ModelOutput):
    """modeling_outputs.MaskedLMOutput."""
    loss: torch.Tensor = None
    logits: torch.Tensor = None
    hidden_states: tuple = None
    attentions: tuple = None


class PreTrainedModel(base.PreTrainedModel):
    """modeling_utils.PreTrainedModel for Dream: transformers' post_init() ends in tie_weights(),
    which, when config.tie_word_embeddings is true, makes the output embedding share the input
    embedding's Parameter (`lm_head.weight = embed_tokens.weight`). That is the only part of
    post_init that matters here (weight init is skipped: every weight is loaded afterwards)."""

    def get_output_embeddings(self):
        return None

    def post_init(self):
        output = self.get_output_embeddings()
        if output is not None and getattr(self.config, "tie_word_embeddings", True):
            output.weight = self.get_input_embeddings().weight


class GenerationConfig:
    """generation.configuration_utils.GenerationConfig: only what DreamGenerationConfig and
    DreamGenerationMixin use. DreamGenerationConfig defines its own __init__ and validate.
    from_model_config follows transformers (model config dict without None values, then
    cls(**dict, _from_model_config=True)); the dict is the config object's attributes, which here
    hold exactly the config.json fields (transformers' PretrainedConfig would add its global
    generation defaults: the goldens pass every generation parameter explicitly, so none is read).
    update() sets the attributes that exist and returns the others, as transformers does."""

    @classmethod
    def from_model_config(cls, model_config):
        config_dict = {k: v for k, v in vars(model_config).items()
                       if v is not None and not k.startswith("_")}
        return cls(**config_dict, _from_model_config=True)

    def update(self, **kwargs):
        unused = {}
        for key, value in kwargs.items():
            if hasattr(self, key):
                setattr(self, key, value)
            else:
                unused[key] = value
        self.validate()
        return unused


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """torch.nn.functional.scaled_dot_product_attention (torch >= 2.0; torch 1.13 has none), as its
    math reference computes it in torch 2.5 (the version Dream's README pins): a boolean mask
    keeps the keys where it is True (others get -inf), a float mask is added, softmax over keys,
    and a query row whose keys are all masked gets weights 0 (torch 2.5's _safe_softmax) instead
    of NaN. Dream's padded batches produce such rows (a pad query sees no key); their outputs never
    reach a real row, they only must stay finite. The mask must broadcast to [B, H, Lq, Lk], as in
    torch (a shape mismatch raises)."""
    if dropout_p != 0.0 or is_causal:
        raise NotImplementedError("stand-in: no dropout, no is_causal")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    probs = torch.softmax(scores, dim=-1)
    dead = torch.isneginf(scores).all(dim=-1, keepdim=True)
    probs = probs.masked_fill(dead, 0.0)
    return torch.matmul(probs, value)


def install_dream_standins():
    """Registers the shared stand-ins, then adds the Dream-specific names to them."""
    base.install_standins()
    tf = sys.modules["transformers"]
    tf.__version__ = "4.46.2"  # the version Dream's README pins (only copied into configs)
    tf.PretrainedConfig = base.PretrainedConfig
    tf.PreTrainedModel = PreTrainedModel
    tf.PreTrainedTokenizer = base._Unused  # dllm's BaseSampler annotation only
    sys.modules["transformers.modeling_utils"].PreTrainedModel = PreTrainedModel
    outputs = sys.modules["transformers.modeling_outputs"]
    outputs.BaseModelOutput = BaseModelOutput
    outputs.MaskedLMOutput = MaskedLMOutput
    gen = sys.modules["transformers.generation"]
    cfg_mod = type(gen)("transformers.generation.configuration_utils")
    cfg_mod.GenerationConfig = GenerationConfig
    sys.modules["transformers.generation.configuration_utils"] = cfg_mod
    gen.configuration_utils = cfg_mod
    utils = sys.modules["transformers.utils"]
    utils.ModelOutput = base.ModelOutput
    utils.is_torchdynamo_compiling = lambda: False
    # Always the stand-in (also on a torch that has one), so the goldens are one defined formula.
    torch.nn.functional.scaled_dot_product_attention = scaled_dot_product_attention
