#!/usr/bin/env python3
"""Times the OFFICIAL LLaDA generate() over the OFFICIAL LLaDA modeling code, the baseline that
unmask's LLaDA generation is compared with on a GPU (and, as a dry run, on the CPU).

What runs: ML-GSAI/LLaDA's generate.py `generate()` (temperature 0, cfg_scale 0,
remasking 'low_confidence', its default mask id) over `LLaDAModelLM` from the LLaDA modeling file
as ZHZisZZ/dllm ships it (dllm/pipelines/llada/models/{modeling,configuration}_llada.py), eager
PyTorch, no changes. The official code is never copied into the project: tools/gpu/stage_official.sh
stages it from the local git mirrors into .device/official/ (ignored by git, carried to the GPU
machine), with a SOURCES file naming repository, commit and path of each file; this script imports
it from there (--official) and copies SOURCES into its JSON.

How the model is built (the official from_pretrained path pins init_device="cuda" and would first
initialise 8 B random float32 parameters): LLaDAConfig(**config.json), then the official
create_model_config_from_pretrained_config() with init_device="meta", LLaDAModel(that,
init_params=False) and LLaDAModelLM(config, model=it) -- the official constructor's own `model`
argument -- so no parameter memory is touched; then .to(dtype) (free on meta), .to_empty(device),
and every parameter is copied from the checkpoint's safetensors shards (the `safetensors` package
when importable, else a small reader here), each checkpoint tensor matched to the state_dict key
of the same name (a name without the base-model prefix `model.` is accepted too). A tensor with no
parameter, a parameter with no tensor, or a shape mismatch is an error naming the tensor. Works
on torch 1.13 (CPU) and torch 2.x (CUDA) alike. Attention: the official defaults are kept (its
F.scaled_dot_product_attention unless config flash_attention is set and flash_attn is importable);
the JSON records which path the blocks take, the SDPA backend switches, and (per spec) the
attention kernels/ops one profiled forward of that length ran.

For each --runs spec GEN_LENGTH:STEPS:BLOCK: one untimed warm-up generate(), then --repeat timed
ones (time.perf_counter, torch.cuda.synchronize around on cuda), model forward calls counted with
a forward pre-hook, peak CUDA memory reset per spec and read after it. Writes --out after every
spec (so a run cut short keeps what it finished) and prints one summary line per spec.

transformers: the GPU machine has it (the modeling file imports it). On a machine without it (the
CPU dry run here), --standins registers the project's stand-ins (tools/golden/
transformers_standins.py install_standins()) plus the few more this modeling file imports, defined
below (and, on a torch without one, a math scaled_dot_product_attention).

  tools/gpu/stage_official.sh          # here, before carrying .device/ to the GPU machine
  PYTHONUNBUFFERED=1 bench/gpu/official_llada.py --model /path/LLaDA-8B-Instruct --device cuda \\
      --dtype bf16 --prompt-ids 126080,... --runs 256:256:32 1024:256:32 --repeat 2 --out off.json
  # CPU dry run (torch 1.13, no transformers), on the tiny test checkpoint:
  /usr/bin/python3 bench/gpu/official_llada.py --standins --device cpu --dtype fp32 \\
      --model tests/data/tiny-llada --prompt-ids 1,2,3,4,5,6,7,8 --runs 64:64:32 --repeat 1
"""
import argparse
import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import re
import statistics
import struct
import sys
import time
import types

import torch
import torch.backends.cuda
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
# safetensors dtype codes this reader takes; BF16 is read as int16 and viewed as bfloat16.
ST_DTYPES = {"BF16": (torch.int16, torch.bfloat16), "F16": (torch.float16, None), "F32": (torch.float32, None)}
ATTENTION_OP = re.compile(r"flash|fmha|attention|sdp|efficient|cudnn|softmax", re.IGNORECASE)


class Fail(Exception):
    """An error the user can fix (a file, tensor or argument); printed without a traceback."""


def log(msg):
    print(msg, flush=True)


# ----------------------------------------------------------------------------------------------
# Stand-ins for the CPU dry run (no transformers package there).

def install_standins(fixups):
    """tools/golden/transformers_standins.install_standins(), then the names the official LLaDA
    modeling/configuration files import that those stand-ins lack. Only for a machine without
    transformers; every addition is the least the LLaDA path run here uses:
      - transformers.PretrainedConfig / PreTrainedModel (top-level imports of the two files): the
        shared stand-ins from transformers.configuration_utils / modeling_utils (attribute config,
        .device, no weight init: every weight is loaded from the checkpoint afterwards).
      - transformers.modeling_outputs.CausalLMOutputWithPast: LLaDAModelLM.forward's return type;
        a dataclass with transformers' field order (generate() reads .logits).
      - transformers.models.auto.AutoModel: imported, never used on this path (the shared _Unused
        stand-in, which raises if it is ever constructed).
      - transformers.cache_utils.Cache: already a stand-in (only a type annotation here).
      - torch.nn.functional.scaled_dot_product_attention, only where torch has none (1.13): the
        math definition softmax(q k^T / sqrt(d) + mask) v, which is what torch's math backend
        computes; no dropout/is_causal (generate() passes neither).
      - torch.backends.cuda.enable_flash_sdp / enable_mem_efficient_sdp, only where torch has none
        (1.13 lacks the second): LLaDAModel.__init__ calls both; they only switch CUDA SDPA
        backends, so on a CPU run a no-op is exact."""
    sys.path.insert(0, os.path.join(REPO, "tools", "golden"))
    try:
        import transformers_standins as base
    except ImportError as e:
        raise Fail(f"--standins: cannot import tools/golden/transformers_standins.py ({e})")
    base.install_standins()

    @dataclasses.dataclass
    class CausalLMOutputWithPast(base.ModelOutput):
        loss: torch.Tensor = None
        logits: torch.Tensor = None
        past_key_values: object = None
        hidden_states: tuple = None
        attentions: tuple = None

    tf = sys.modules["transformers"]
    tf.__version__ = "standins"
    tf.PretrainedConfig = sys.modules["transformers.configuration_utils"].PretrainedConfig
    tf.PreTrainedModel = sys.modules["transformers.modeling_utils"].PreTrainedModel
    sys.modules["transformers.modeling_outputs"].CausalLMOutputWithPast = CausalLMOutputWithPast
    for name, attrs in (("transformers.models", {}), ("transformers.models.auto", {"AutoModel": base._Unused})):
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        mod.__path__ = []
        sys.modules[name] = mod
    tf.models = sys.modules["transformers.models"]
    tf.models.auto = sys.modules["transformers.models.auto"]

    if not hasattr(F, "scaled_dot_product_attention"):
        def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False):
            if dropout_p != 0.0 or is_causal:
                raise NotImplementedError("stand-in scaled_dot_product_attention: no dropout, no is_causal")
            scores = torch.matmul(query, key.transpose(-2, -1)) / (query.shape[-1] ** 0.5)
            if attn_mask is not None:
                scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool \
                    else scores + attn_mask
            return torch.matmul(torch.softmax(scores, dim=-1), value)
        F.scaled_dot_product_attention = scaled_dot_product_attention
        fixups.append("stand-in torch.nn.functional.scaled_dot_product_attention (math formula; "
                      f"torch {torch.__version__} has none)")
    for name in ("enable_flash_sdp", "enable_mem_efficient_sdp"):
        if not hasattr(torch.backends.cuda, name):
            setattr(torch.backends.cuda, name, lambda enabled: None)
            fixups.append(f"stand-in no-op torch.backends.cuda.{name} (torch {torch.__version__} has none)")


# ----------------------------------------------------------------------------------------------
# The official code.

def import_official(directory, fixups):
    """(modeling module, configuration module, generate function, SOURCES text)."""
    directory = os.path.abspath(directory)
    needed = ["SOURCES", "generate.py", "llada_official/__init__.py", "llada_official/modeling_llada.py",
              "llada_official/configuration_llada.py"]
    for rel in needed:
        if not os.path.isfile(os.path.join(directory, rel)):
            raise Fail(f"--official {directory}: no {rel} (run tools/gpu/stage_official.sh first)")
    with open(os.path.join(directory, "SOURCES")) as f:
        sources = f.read()
    try:
        import transformers
    except ImportError:
        raise Fail("the official modeling file imports transformers, which is not installed here "
                   "(use --standins for a CPU dry run)")
    if not hasattr(transformers, "PretrainedConfig") and hasattr(transformers, "PreTrainedConfig"):
        # configuration_llada.py does `from transformers import PretrainedConfig`; transformers 5
        # renamed the class PreTrainedConfig (and may drop the old alias).
        transformers.PretrainedConfig = transformers.PreTrainedConfig
        fixups.append("transformers.PretrainedConfig aliased to transformers.PreTrainedConfig")
    sys.path.insert(0, directory)
    try:
        configuration = importlib.import_module("llada_official.configuration_llada")
        modeling = importlib.import_module("llada_official.modeling_llada")
        spec = importlib.util.spec_from_file_location("llada_official_generate", os.path.join(directory, "generate.py"))
        gen_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen_module)
    finally:
        sys.path.remove(directory)
    generate = getattr(gen_module, "generate", None)
    if generate is None:
        raise Fail(f"{directory}/generate.py defines no generate()")
    params = inspect.signature(generate).parameters
    missing = [p for p in ("model", "prompt", "steps", "gen_length", "block_length", "temperature",
                           "cfg_scale", "remasking", "mask_id") if p not in params]
    if missing:
        raise Fail(f"{directory}/generate.py: generate() has no parameter(s) {missing}: not the expected LLaDA file")
    for name in ("LLaDAModelLM", "LLaDAModel", "create_model_config_from_pretrained_config"):
        if not hasattr(modeling, name):
            raise Fail(f"{directory}/llada_official/modeling_llada.py defines no {name}")
    return modeling, configuration, generate, sources


# ----------------------------------------------------------------------------------------------
# Checkpoint.

def shard_map(model_dir):
    """{shard file: [tensor names]} from model.safetensors.index.json, or a lone model.safetensors."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.isfile(index):
        try:
            with open(index) as f:
                weight_map = json.load(f)["weight_map"]
        except (ValueError, KeyError) as e:
            raise Fail(f"{index}: not a safetensors index ({e})")
        shards = {}
        for name, shard in weight_map.items():
            shards.setdefault(os.path.join(model_dir, shard), []).append(name)
        for shard in shards:
            if not os.path.isfile(shard):
                raise Fail(f"{index} names shard {os.path.basename(shard)}, which is not in {model_dir}")
        return shards
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.isfile(single):
        return {single: None}
    raise Fail(f"--model {model_dir}: neither model.safetensors.index.json nor model.safetensors")


def read_header(path):
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise Fail(f"{path}: too short for a safetensors file")
        (n,) = struct.unpack("<Q", head)
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise Fail(f"{path}: bad safetensors header ({e})")
    return 8 + n, header


def own_reader(path, names):
    """Yields (name, CPU tensor) from one safetensors file: 8-byte little-endian header length,
    JSON header {name: {dtype, shape, data_offsets}}, raw little-endian data."""
    start, header = read_header(path)
    header.pop("__metadata__", None)
    for name in names if names is not None else list(header):
        if name not in header:
            raise Fail(f"{path}: the index places tensor {name} here, but the shard has no such tensor")
    size = os.path.getsize(path) - start
    data = bytearray(size)  # writable, so torch.frombuffer shares it without a warning
    with open(path, "rb") as f:
        f.seek(start)
        if f.readinto(data) != size:
            raise Fail(f"{path}: short read")
    for name in names if names is not None else list(header):
        meta = header[name]
        if meta.get("dtype") not in ST_DTYPES:
            raise Fail(f"{path}: tensor {name} has dtype {meta.get('dtype')}, not one of {sorted(ST_DTYPES)}")
        storage, view = ST_DTYPES[meta["dtype"]]
        begin, end = meta["data_offsets"]
        count = 1
        for d in meta["shape"]:
            count *= d
        if end - begin != count * torch.tensor([], dtype=storage).element_size() or end > size:
            raise Fail(f"{path}: tensor {name}: data_offsets {begin}..{end} do not fit shape {meta['shape']}")
        t = torch.frombuffer(data, dtype=storage, count=count, offset=begin) if count else torch.empty(0, dtype=storage)
        if view is not None:
            t = t.view(view)
        yield name, t.reshape(meta["shape"])


def package_reader(path, names):
    from safetensors import safe_open
    with safe_open(path, framework="pt", device="cpu") as f:
        keys = set(f.keys())
        for name in names if names is not None else sorted(keys):
            if name not in keys:
                raise Fail(f"{path}: the index places tensor {name} here, but the shard has no such tensor")
            yield name, f.get_tensor(name)


def load_weights(model, model_dir):
    """Copies every checkpoint tensor into the parameter of the same state_dict name."""
    try:
        importlib.import_module("safetensors")
        reader, reader_name = package_reader, "safetensors package"
    except ImportError:
        reader, reader_name = own_reader, "own safetensors reader"
    state = model.state_dict(keep_vars=True)  # the parameters themselves (and persistent buffers)
    loaded = set()
    with torch.no_grad():
        for shard, names in shard_map(model_dir).items():
            for name, tensor in reader(shard, names):
                key = name if name in state else ("model." + name if "model." + name in state else None)
                if key is None:
                    example = next(iter(state), "?")
                    raise Fail(f"{shard}: checkpoint tensor {name} has no parameter in LLaDAModelLM "
                               f"(its state_dict names look like {example})")
                if key in loaded:
                    raise Fail(f"{shard}: checkpoint tensor {name} appears twice")
                target = state[key]
                if tuple(tensor.shape) != tuple(target.shape):
                    raise Fail(f"{shard}: checkpoint tensor {name} has shape {list(tensor.shape)}, "
                               f"the model's {key} has {list(target.shape)}")
                target.copy_(tensor)
                loaded.add(key)
    missing = [k for k in state if k not in loaded]
    if missing:
        raise Fail(f"--model {model_dir}: no checkpoint tensor for the model's {missing[0]}"
                   + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    return reader_name, len(loaded)


def build_model(modeling, configuration, model_dir, device, dtype, fixups):
    path = os.path.join(model_dir, "config.json")
    try:
        with open(path) as f:
            config_json = json.load(f)
    except OSError as e:
        raise Fail(f"--model: cannot read {path} ({e.strerror})")
    except ValueError as e:
        raise Fail(f"{path}: not JSON ({e})")
    config = configuration.LLaDAConfig(**config_json)
    # transformers 5 pops the generation parameters (use_cache among them) out of a config's
    # keyword arguments; LLaDAModelLM.forward reads config.use_cache when generate() passes none.
    if not hasattr(config, "use_cache"):
        config.use_cache = bool(config_json.get("use_cache", False))
        fixups.append(f"config.use_cache missing after LLaDAConfig(**config.json) (set to {config.use_cache})")
    # The official create_model_config_from_pretrained_config reads every ModelConfig field off
    # the config; give back any field a transformers version dropped, from config.json (or the
    # ModelConfig default), and say so.
    for field in dataclasses.fields(configuration.ModelConfig):
        if not hasattr(config, field.name):
            value = config_json.get(field.name, getattr(configuration.ModelConfig(), field.name))
            setattr(config, field.name, value)
            fixups.append(f"config.{field.name} missing after LLaDAConfig(**config.json) (set to {value!r})")
    model_config = modeling.create_model_config_from_pretrained_config(config)
    for key, value in config_json.items():
        if hasattr(model_config, key) and key != "init_device" and getattr(model_config, key) != value:
            fixups.append(f"ModelConfig.{key} came out {getattr(model_config, key)!r} from LLaDAConfig, "
                          f"config.json has {value!r}: set to config.json's")
            setattr(model_config, key, value)
    model_config.init_device = "meta"
    inner = modeling.LLaDAModel(model_config, init_params=False)
    model = modeling.LLaDAModelLM(config, model=inner)
    model.to(dtype=dtype)
    model.to_empty(device=device)
    reader_name, count = load_weights(model, model_dir)
    model.eval()
    return model, config, model_config, reader_name, count


def attention_info(model, model_config):
    flash = [b for b in model.modules() if getattr(b, "flash_attn_func", None) is not None]
    info = {
        "config_flash_attention": bool(getattr(model_config, "flash_attention", False)),
        "path": ("flash_attn.flash_attn_func (official LLaDABlock, config flash_attention and flash_attn importable)"
                 if flash else
                 "torch.nn.functional.scaled_dot_product_attention (official LLaDABlock default)"),
        "sdpa_function": f"{getattr(F.scaled_dot_product_attention, '__module__', '?')}."
                         f"{getattr(F.scaled_dot_product_attention, '__name__', '?')}"
                         if hasattr(F, "scaled_dot_product_attention") else None,
    }
    backends = {}
    for name in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled"):
        fn = getattr(torch.backends.cuda, name, None)
        if fn is not None:
            try:
                backends[name] = bool(fn())
            except Exception as e:  # noqa: BLE001 - a switch this torch cannot read is just unrecorded
                backends[name] = f"unreadable: {e}"
    info["sdp_backends"] = backends
    return info


def profiled_attention_ops(model, length, device):
    """Names of the attention-related ops/kernels one forward over `length` tokens ran."""
    try:
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return None
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    x = torch.full((1, length), int(getattr(model.config, "mask_token_id", None) or 126336),
                   dtype=torch.long, device=device)
    try:
        with torch.no_grad(), profile(activities=activities) as prof:
            model(x)
            if device.type == "cuda":
                torch.cuda.synchronize()
        return sorted({e.key[:300] for e in prof.key_averages() if ATTENTION_OP.search(e.key)})
    except Exception as e:  # noqa: BLE001 - detection is best effort; the benchmark goes on
        return [f"profiler failed: {e}"]


# ----------------------------------------------------------------------------------------------

def parse_runs(specs):
    runs = []
    for spec in specs:
        parts = spec.split(":")
        try:
            gen, steps, block = (int(p) for p in parts)
        except ValueError:
            raise Fail(f"--runs {spec!r}: want GEN_LENGTH:STEPS:BLOCK, three integers")
        if min(gen, steps, block) <= 0:
            raise Fail(f"--runs {spec!r}: every number must be positive")
        if gen % block:
            raise Fail(f"--runs {spec!r}: gen_length {gen} is not a multiple of block_length {block}")
        if steps % (gen // block):
            raise Fail(f"--runs {spec!r}: steps {steps} is not a multiple of the {gen // block} blocks")
        if steps // (gen // block) > block:
            raise Fail(f"--runs {spec!r}: {steps // (gen // block)} steps per block exceed the block's {block} tokens")
        runs.append((gen, steps, block))
    return runs


def parse_prompt(text):
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise Fail(f"--prompt-ids {text!r}: want comma-separated integers")
    if not ids:
        raise Fail("--prompt-ids: empty")
    return ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--official", default=os.path.join(REPO, ".device", "official"),
                    help="staged official code (tools/gpu/stage_official.sh); default .device/official")
    ap.add_argument("--model", required=True, help="Hugging Face LLaDA checkpoint directory")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids, e.g. 1,2,3")
    ap.add_argument("--runs", nargs="+", required=True, metavar="GEN:STEPS:BLOCK",
                    help="one or more GEN_LENGTH:STEPS:BLOCK specs, e.g. 256:256:32 1024:256:32")
    ap.add_argument("--repeat", type=int, default=2, help="timed runs per spec after one untimed warm-up (default 2)")
    ap.add_argument("--out", help="write the JSON here")
    ap.add_argument("--standins", action="store_true",
                    help="CPU dry run without transformers: use the project's stand-ins")
    a = ap.parse_args()
    if a.repeat < 1:
        raise Fail("--repeat must be at least 1")
    runs = parse_runs(a.runs)
    prompt_ids = parse_prompt(a.prompt_ids)
    if not os.path.isdir(a.model):
        raise Fail(f"--model {a.model}: not a directory")
    if a.device == "cuda" and not torch.cuda.is_available():
        raise Fail("--device cuda: torch sees no CUDA device")
    device = torch.device(a.device)
    dtype = DTYPES[a.dtype]
    torch.manual_seed(0)

    fixups = []
    if a.standins:
        install_standins(fixups)
    modeling, configuration, generate, sources = import_official(a.official, fixups)
    import transformers
    tf_version = "standins" if a.standins else getattr(transformers, "__version__", "unknown")

    t0 = time.perf_counter()
    model, config, model_config, reader_name, count = build_model(modeling, configuration, a.model, device, dtype, fixups)
    if device.type == "cuda":
        torch.cuda.synchronize()
    load_seconds = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    vocab = model.get_input_embeddings().weight.shape[0]
    mask_id = inspect.signature(generate).parameters["mask_id"].default
    for t in prompt_ids:
        if not 0 <= t < vocab:
            raise Fail(f"--prompt-ids: {t} is outside the vocabulary (0..{vocab - 1})")
        if t == mask_id:
            raise Fail(f"--prompt-ids: {t} is the mask id generate() uses; the prompt would be generated over")
    attention = attention_info(model, model_config)
    config_mask = getattr(model_config, "mask_token_id", None)
    if config_mask is not None and config_mask != mask_id:
        log(f"warning: config.json mask_token_id {config_mask} differs from generate()'s mask_id {mask_id} (used)")
    for line in fixups:
        log(f"fixup: {line}")
    log(f"model {a.model}: {n_params / 1e6:.1f} M parameters ({weight_bytes / 2**30:.2f} GiB {a.dtype}) from "
        f"{count} tensors via {reader_name} in {load_seconds:.1f} s on {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "")
        + f"; torch {torch.__version__}, transformers {tf_version}; attention: {attention['path']}")

    calls = [0]
    model.register_forward_pre_hook(lambda module, args: calls.__setitem__(0, calls[0] + 1))
    prompt = torch.tensor([prompt_ids], dtype=torch.long, device=device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def one(gen, steps, block):
        calls[0] = 0
        sync()
        start = time.perf_counter()
        out = generate(model, prompt, steps=steps, gen_length=gen, block_length=block, temperature=0.,
                       cfg_scale=0., remasking="low_confidence")
        sync()
        return time.perf_counter() - start, calls[0], out[0, len(prompt_ids):].tolist()

    result = {
        "model": a.model,
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda if device.type == "cuda" else None,
        "transformers": tf_version,
        "official": sources,
        "dtype": a.dtype,
        "prompt_ids": prompt_ids,
        "mask_id": mask_id,
        "config_mask_token_id": config_mask,
        "parameters": n_params,
        "weight_bytes": weight_bytes,
        "weights_loader": reader_name,
        "load_seconds": load_seconds,
        "memory_allocated_after_load_bytes": torch.cuda.memory_allocated(device) if device.type == "cuda" else None,
        "cpu_threads": torch.get_num_threads(),
        "construction": "LLaDAModelLM(LLaDAConfig(**config.json), model=LLaDAModel(official ModelConfig with "
                        "init_device='meta', init_params=False)); .to(dtype); .to_empty(device); checkpoint copied in",
        "attention": attention,
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32) if device.type == "cuda" else None,
        "fixups": fixups,
        "generate_args": {"temperature": 0.0, "cfg_scale": 0.0, "remasking": "low_confidence"},
        "runs": [],
    }

    def write():
        if a.out:
            tmp = a.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(result, f, indent=1)
                f.write("\n")
            os.replace(tmp, a.out)

    for gen, steps, block in runs:
        ops = profiled_attention_ops(model, len(prompt_ids) + gen, device)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        warm_seconds, warm_calls, ids = one(gen, steps, block)
        log(f"  gen={gen} steps={steps} block={block}: warm-up {warm_seconds:.3f} s, {warm_calls} forwards")
        seconds, stable = [], True
        for r in range(a.repeat):
            s, n, run_ids = one(gen, steps, block)
            if n != warm_calls:
                raise Fail(f"gen={gen}: {n} forward calls in run {r + 1}, {warm_calls} in the warm-up")
            stable = stable and run_ids == ids
            seconds.append(s)
            log(f"  gen={gen} steps={steps} block={block}: run {r + 1}/{a.repeat} {s:.3f} s")
        entry = {
            "gen_length": gen, "steps": steps, "block_length": block,
            "seconds": seconds, "warmup_seconds": warm_seconds,
            "forward_calls": warm_calls,
            "ids": ids, "ids_same_every_run": stable,
            "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
            "max_memory_reserved_bytes": torch.cuda.max_memory_reserved(device) if device.type == "cuda" else None,
            "attention_ops": ops,
        }
        result["runs"].append(entry)
        write()
        mem = (f", peak {entry['max_memory_allocated_bytes'] / 2**30:.2f} GiB allocated / "
               f"{entry['max_memory_reserved_bytes'] / 2**30:.2f} GiB reserved" if device.type == "cuda" else "")
        mean = statistics.mean(seconds)
        log(f"gen={gen} steps={steps} block={block}: {mean:.3f} s mean of {len(seconds)} (min {min(seconds):.3f}), "
            f"{warm_calls} forwards, {1000 * mean / max(warm_calls, 1):.1f} ms/forward, "
            f"{gen / mean:.1f} tokens/s{mem}" + ("" if stable else ", IDS DIFFER BETWEEN RUNS"))
    write()
    if a.out:
        log(f"wrote {a.out}")


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        print(f"official_llada.py: error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
