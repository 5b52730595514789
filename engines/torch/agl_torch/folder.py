"""Model folders in the layout both engines read and write (daemon/model/model-folder.ts):

  config.json              the Hugging Face config (built-in models: a GPT-2 config + "agl_tokenizer": "bytes")
  model.safetensors        the weights under their transformers names (tied heads stored once)
  optimizer.safetensors    AdamW moments "m.<name>", "v.<name>" in the weights' own on-disk layout;
                           metadata: step, config (JSON: lr, beta1, beta2, eps, weightDecay, gradClip,
                           microBatchSize), layout "disk"
  tokenizer.json, tokenizer_config.json, chat_template.jinja, ...   copied through (HF models)

Built-in models are GPT-2s (GPT2LMHeadModel opens them as they are); Llama, Qwen2 and Mistral folders open with
their transformers classes. Older TF.js checkpoints of Llama-family models kept moments of linear weights
transposed ([in, out]); they have no "layout" metadata and are turned around on load.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from .messages import OptimizerSettings, wire

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# config.json as read: the Hugging Face config (its keys are the family's).
HfConfig = dict[str, Any]
# AdamW's moments per parameter name: (m, v).
Moments = dict[str, tuple[torch.Tensor, torch.Tensor]]


@dataclass
class AdamState:
    """A trainable's AdamW state as a folder holds it: its update count and its moments."""

    step: int
    moments: Moments


SIDE_FILES = ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'generation_config.json', 'special_tokens_map.json']
FAMILIES = {'gpt2': 'gpt', 'llama': 'llama', 'qwen2': 'llama', 'mistral': 'llama'}
BYTE_SPECIALS = ['<|endoftext|>', '<|system|>', '<|user|>', '<|assistant|>', '<|tool|>', '<|end|>', '<tool_call>', '</tool_call>']
_LINEAR = re.compile(r'(_proj\.weight|^lm_head\.weight)$')


class FolderError(Exception):
    """A model folder that cannot be used, with what to do about it."""


def read_config(folder: str) -> HfConfig:
    path = os.path.join(folder, 'config.json')
    if not os.path.isfile(path):
        raise FolderError(f'{folder} has no config.json: is it a model folder?')
    try:
        with open(path, encoding='utf-8') as f:
            config = json.load(f)
    except json.JSONDecodeError as e:
        raise FolderError(f'{path} is not valid JSON: {e}') from e
    if not isinstance(config, dict):
        raise FolderError(f'{path} is not a JSON object')
    return config


def family_of(hf: HfConfig) -> str:
    t = str(hf.get('model_type', ''))
    if t not in FAMILIES:
        raise FolderError(f'config.json: model_type "{t}" is not supported (use llama, qwen2, mistral or gpt2)')
    return FAMILIES[t]


def context_length_of(hf: HfConfig) -> int:
    if hf.get('model_type') == 'gpt2':
        return int(hf.get('n_positions') or hf.get('n_ctx') or 1024)
    return min(int(hf.get('max_position_embeddings', 2048)), 32768)


def load_model(folder: str, dtype: torch.dtype, attn: str, keep_float32: bool = False) -> tuple[HfConfig, PreTrainedModel, dict[str, torch.Tensor] | None]:
    """The folder's model through transformers' AutoModelForCausalLM, or a FolderError saying why not. With
    `keep_float32` and a lower `dtype`, it loads in float32 and returns those float32 values too ({name: tensor}, the
    optimizer's masters: a bfloat16 run resumed from a float32 folder keeps every bit the folder has)."""
    import transformers
    from transformers import AutoModelForCausalLM

    hf = read_config(folder)
    family_of(hf)
    extra: dict[str, int] = {}
    if hf.get('agl_tokenizer') == 'bytes':
        # Built-in models: their byte tokenizer's <|endoftext|> / <|end|>. Their configs name no special ids, so
        # GPT2Config's defaults (GPT-2's 50256, outside a 264-token vocabulary) draw a warning while it loads.
        extra = {'bos_token_id': hf.get('bos_token_id', 256), 'eos_token_id': hf.get('eos_token_id', 261)}
        transformers.logging.set_verbosity(logging.ERROR)
    masters = keep_float32 and dtype != torch.float32
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32 if masters else dtype, attn_implementation=attn, **extra)
    except Exception as e:  # transformers raises many kinds: say which folder and library failed
        raise FolderError(f'transformers {transformers.__version__} cannot open the model folder {folder}: {type(e).__name__}: {e}') from e
    model.train(False)  # eval mode, no dropout: the policy is trained as it samples (as the TF.js engine, which has none)
    float32 = None
    if masters:
        float32 = {n: p.detach() for n, p in model.named_parameters()}
        moved(model, dtype)  # new lower-precision parameters; the float32 tensors stay with `float32`
    return hf, model, float32


def moved(model: PreTrainedModel, to: torch.dtype | torch.device) -> PreTrainedModel:
    """model.to(...), in place (it returns the model)."""
    # transformers declares PreTrainedModel.to through functools.wraps(torch.nn.Module.to), and the stub of wraps makes
    # its first parameter `self`: mypy reads model.to(dtype) as passing a dtype for the model.
    out: PreTrainedModel = model.to(to)  # type: ignore[arg-type]
    return out


def parameter_names(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    """Trainable parameters under their transformers names, each once (a tied head shares the embedding)."""
    return list(model.named_parameters())


def _is_linear(family: str, name: str) -> bool:
    return family == 'llama' and bool(_LINEAR.search(name))


def save_folder(folder: str, hf: HfConfig, weights: dict[str, torch.Tensor], source: str | None, adam: tuple[AdamState, OptimizerSettings] | None) -> None:
    """`weights` ({transformers name: tensor}, float32 masters when training in a lower precision), and AdamW's state
    with the configured settings it was trained under."""
    from safetensors.torch import save_file

    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, 'config.json'), 'w', encoding='utf-8') as f:
        json.dump(_with_dtype(hf, weights), f, indent=2)
    tensors = {name: t.detach().to('cpu').contiguous() for name, t in weights.items()}
    save_file(tensors, os.path.join(folder, 'model.safetensors'), metadata={'format': 'pt'})
    if source and os.path.abspath(source) != os.path.abspath(folder):
        for name in SIDE_FILES:
            if os.path.isfile(os.path.join(source, name)):
                shutil.copyfile(os.path.join(source, name), os.path.join(folder, name))
    if adam is not None:
        state, settings = adam
        moments = {}
        for name, (m, v) in state.moments.items():
            moments[f'm.{name}'] = m.detach().to('cpu', torch.float32).contiguous()
            moments[f'v.{name}'] = v.detach().to('cpu', torch.float32).contiguous()
        meta = {'step': str(state.step), 'config': json.dumps(wire(settings)), 'layout': 'disk'}
        save_file(moments, os.path.join(folder, 'optimizer.safetensors'), metadata=meta)


def _with_dtype(hf: HfConfig, weights: dict[str, torch.Tensor]) -> HfConfig:
    """The config with its dtype keys (where it has them) naming what the weights file holds."""
    dtypes = {str(t.dtype).replace('torch.', '') for t in weights.values()}
    if len(dtypes) != 1:
        return hf
    (dtype,) = dtypes
    return {**hf, **{k: dtype for k in ('torch_dtype', 'dtype') if k in hf}}


def read_optimizer(folder: str, family: str, shapes: dict[str, torch.Size]) -> AdamState | None:
    """AdamW's state from optimizer.safetensors, or None when the folder has none (its saved settings are the daemon's to
    read: it gives the engine its configured settings)."""
    from safetensors import safe_open

    path = os.path.join(folder, 'optimizer.safetensors')
    if not os.path.isfile(path):
        return None
    moments: Moments = {}
    with safe_open(path, framework='pt') as f:
        meta = f.metadata() or {}
        keys = set(f.keys())
        turn = meta.get('layout') != 'disk'
        for name, shape in shapes.items():
            if f'm.{name}' not in keys or f'v.{name}' not in keys:
                raise FolderError(f'{path}: optimizer state "m.{name}" / "v.{name}" is missing')
            m, v = f.get_tensor(f'm.{name}').float(), f.get_tensor(f'v.{name}').float()
            if turn and _is_linear(family, name):
                m, v = m.t().contiguous(), v.t().contiguous()
            if m.shape != shape:
                raise FolderError(f'{path}: optimizer state "m.{name}" has shape {list(m.shape)}, the weight has {list(shape)}')
            moments[name] = (m, v)
    return AdamState(int(meta.get('step', 0)), moments)


def byte_decoder() -> Callable[[list[int]], str]:
    """Decodes ids of the built-in byte tokenizer (daemon/model/byte-tokenizer.ts): bytes, then the specials."""

    def decode(ids: list[int]) -> str:
        out: list[str] = []
        buf = bytearray()
        for i in ids:
            if 0 <= i < 256:
                buf.append(i)
                continue
            if buf:
                out.append(buf.decode('utf-8', errors='replace'))
                buf = bytearray()
            k = i - 256
            out.append(BYTE_SPECIALS[k] if 0 <= k < len(BYTE_SPECIALS) else '')
        if buf:
            out.append(buf.decode('utf-8', errors='replace'))
        return ''.join(out)

    return decode


def decoder_for(folder: str, hf: HfConfig) -> Callable[[list[int]], str] | None:
    """ids -> text, for stop strings: the byte tokenizer or the folder's tokenizer.json."""
    if hf.get('agl_tokenizer') == 'bytes':
        return byte_decoder()
    path = os.path.join(folder, 'tokenizer.json')
    if not os.path.isfile(path):
        return None
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    return lambda ids: tok.decode(ids, skip_special_tokens=False)
