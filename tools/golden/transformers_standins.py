"""The smallest stand-ins for the parts of Hugging Face `transformers` that the official LLaDA-MoE
and LLaDA2 modeling files import (no transformers package is reachable here), for
make_moe_golden.py. install_standins() registers them in sys.modules; each one says what it
stands for and why it is enough on the float32 CPU path the goldens take."""

import dataclasses
import logging
import sys
import types

import torch
from torch import nn

class PretrainedConfig:
    """configuration_utils.PretrainedConfig: the attributes the modeling files read from the base
    class, with transformers' defaults; every other keyword becomes an attribute, as in
    transformers. `_attn_implementation` is set by the caller (see Official.build)."""

    model_type = ""

    def __init__(self, **kwargs):
        self.output_attentions = kwargs.pop("output_attentions", False)
        self.output_hidden_states = kwargs.pop("output_hidden_states", False)
        self.return_dict = kwargs.pop("return_dict", True)
        self.torchscript = kwargs.pop("torchscript", False)
        self.tie_word_embeddings = kwargs.pop("tie_word_embeddings", True)
        self.pad_token_id = kwargs.pop("pad_token_id", None)
        self.bos_token_id = kwargs.pop("bos_token_id", None)
        self.eos_token_id = kwargs.pop("eos_token_id", None)
        self._attn_implementation = kwargs.pop("attn_implementation", None)
        for key, value in kwargs.items():
            setattr(self, key, value)

    @property
    def use_return_dict(self):
        return self.return_dict and not self.torchscript


def compute_default_rope_parameters(config=None, device=None, seq_len=None, **rope_kwargs):
    """modeling_rope_utils._compute_default_rope_parameters ('default' RoPE), as transformers
    computes it: dim = int(head_dim * partial_rotary_factor), head_dim = config.head_dim or
    hidden_size // num_attention_heads, inv_freq = 1 / theta^(arange(0, dim, 2) / dim)."""
    if rope_kwargs:
        base, dim = rope_kwargs["base"], rope_kwargs["dim"]
    else:
        base = config.rope_theta
        partial = config.partial_rotary_factor if hasattr(config, "partial_rotary_factor") else 1.0
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        dim = int(head_dim * partial)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float().to(device) / dim))
    return inv_freq, 1.0


def rope_config_validation(config, ignore_keys=None):
    """Checks only rope_scaling, which every config here leaves null (plain RoPE)."""
    if getattr(config, "rope_scaling", None) is not None:
        raise NotImplementedError("stand-in: only rope_scaling null is supported")


def dynamic_rope_update(forward):
    """Recomputes inv_freq only for 'dynamic'/'longrope' RoPE; a no-op for 'default'."""
    return forward


class ModelOutput:
    """utils.ModelOutput: attribute access, and integer/slice indexing over the fields that are
    not None, in declaration order (the modeling files use outputs[0])."""

    def to_tuple(self):
        return tuple(v for v in (getattr(self, f.name) for f in dataclasses.fields(self)) if v is not None)

    def __getitem__(self, key):
        return getattr(self, key) if isinstance(key, str) else self.to_tuple()[key]


@dataclasses.dataclass
class MoeModelOutputWithPast(ModelOutput):
    last_hidden_state: torch.Tensor = None
    past_key_values: object = None
    hidden_states: tuple = None
    attentions: tuple = None
    router_logits: tuple = None


@dataclasses.dataclass
class MoeCausalLMOutputWithPast(ModelOutput):
    loss: torch.Tensor = None
    aux_loss: torch.Tensor = None
    logits: torch.Tensor = None
    past_key_values: object = None
    hidden_states: tuple = None
    attentions: tuple = None
    router_logits: tuple = None


class PreTrainedModel(nn.Module):
    """modeling_utils.PreTrainedModel: keeps the config and exposes .device. post_init() (weight
    init and tying) does nothing: every weight is loaded from the checkpoint afterwards with
    strict=True, and no config here ties embeddings."""

    def __init__(self, config, *args, **kwargs):
        super().__init__()
        self.config = config

    def post_init(self):
        pass

    @property
    def device(self):
        return next(self.parameters()).device


class _ACT2FN(dict):
    """activations.ACT2FN: a fresh module per lookup; only SiLU ('silu'/'swish') is used."""

    def __getitem__(self, name):
        if name in ("silu", "swish"):
            return nn.SiLU()
        raise KeyError(f"stand-in ACT2FN has no {name!r}")


class _Unused:
    """A name the official files import but never use on the paths run here (KV cache classes other
    than DynamicCache: no other is made; AttentionMaskConverter: LLaDA-MoE runs without a mask;
    the Auto* classes). Using one is an error, so a stand-in can never silently stand in."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"stand-in {type(self).__name__} is not used on the golden paths")


class _DynamicCache:
    """transformers' DynamicCache as a forward that starts without one uses it. Dream's published
    config says use_cache true, so DreamModel.forward makes an empty cache at every call; each
    layer appends its keys and values and gets back what it gave (the cache was empty), so the
    result is the forward without a cache. diffusion_generate never passes it back in."""

    def __init__(self):
        self.key_cache, self.value_cache = [], []

    def get_seq_length(self, layer_idx=0):
        return self.key_cache[layer_idx].shape[-2] if layer_idx < len(self.key_cache) else 0

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        if layer_idx < len(self.key_cache):
            raise NotImplementedError("stand-in DynamicCache: a second forward through one cache is not used")
        if layer_idx != len(self.key_cache):
            raise NotImplementedError("stand-in DynamicCache: layers are expected in order")
        self.key_cache.append(key_states)
        self.value_cache.append(value_states)
        return key_states, value_states


def _prepare_4d_causal_attention_mask(*args, **kwargs):
    """Only reached by LLaDA2's eager path, which is not used (see Official.build)."""
    raise NotImplementedError("stand-in: eager mask preparation is not used")


def _prepare_4d_causal_attention_mask_for_sdpa(attention_mask, input_shape, inputs_embeds,
                                               past_key_values_length, sliding_window=None):
    """transformers returns None (no mask: full attention) for a missing mask without a cache,
    which is the only case reached here (4-D masks bypass this function in the SDPA path)."""
    if attention_mask is None and past_key_values_length == 0:
        return None
    raise NotImplementedError("stand-in: only a missing mask without cache is supported")


class _Unpack:
    """processing_utils.Unpack, used only in type annotations."""

    def __class_getitem__(cls, item):
        return item


class _Logger(logging.LoggerAdapter):
    def warning_once(self, *args, **kwargs):
        pass


def _identity_decorator_factory(*args, **kwargs):
    return lambda fn: fn


ALL_ATTENTION_FUNCTIONS = {}  # "sdpa" is filled in by Official, after the LLaDA2 file is imported


def install_standins():
    """Registers the stand-in `transformers` modules in sys.modules (no files, no package)."""

    def module(name, **attrs):
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        mod.__path__ = []  # importable as a package, so submodules resolve from sys.modules
        sys.modules[name] = mod
        return mod

    module("transformers", AutoConfig=_Unused, AutoModel=_Unused, AutoTokenizer=_Unused,
           AutoModelForMaskedLM=_Unused)
    module("transformers.activations", ACT2FN=_ACT2FN())
    module("transformers.cache_utils", Cache=_Unused, DynamicCache=_DynamicCache, StaticCache=_Unused)
    module("transformers.configuration_utils", PretrainedConfig=PretrainedConfig)
    module("transformers.generation")
    module("transformers.generation.utils", GenerationMixin=type("GenerationMixin", (), {}))
    module("transformers.modeling_attn_mask_utils", AttentionMaskConverter=_Unused,
           _prepare_4d_causal_attention_mask=_prepare_4d_causal_attention_mask,
           _prepare_4d_causal_attention_mask_for_sdpa=_prepare_4d_causal_attention_mask_for_sdpa)
    module("transformers.modeling_outputs", MoeModelOutputWithPast=MoeModelOutputWithPast,
           MoeCausalLMOutputWithPast=MoeCausalLMOutputWithPast)
    module("transformers.modeling_rope_utils",
           ROPE_INIT_FUNCTIONS={"default": compute_default_rope_parameters},
           rope_config_validation=rope_config_validation, dynamic_rope_update=dynamic_rope_update)
    module("transformers.modeling_utils", PreTrainedModel=PreTrainedModel,
           ALL_ATTENTION_FUNCTIONS=ALL_ATTENTION_FUNCTIONS)
    module("transformers.processing_utils", Unpack=_Unpack)
    module("transformers.pytorch_utils", ALL_LAYERNORM_LAYERS=[],
           is_torch_greater_or_equal_than_1_13=True)
    module("transformers.utils", TransformersKwargs=type("TransformersKwargs", (dict,), {}),
           add_start_docstrings=_identity_decorator_factory,
           add_start_docstrings_to_model_forward=_identity_decorator_factory,
           replace_return_docstrings=_identity_decorator_factory,
           is_flash_attn_2_available=lambda: False,
           is_flash_attn_greater_or_equal_2_10=lambda: False,
           logging=types.SimpleNamespace(get_logger=lambda name: _Logger(logging.getLogger(name), {})))
    module("transformers.utils.import_utils", is_torch_fx_available=lambda: False)

