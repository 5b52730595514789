"""LoRA adapters on one frozen base (peft): what `engine.lora` runs (one adapter per role policy, or one for the run).

The engine's model stays the transformers model; the first adapter wraps it in a peft PeftModel, which injects the
LoRA layers into it, so the engine's forward passes (generate, score, train) run through the same module with
whichever adapter is active. Each adapter has its own AdamW over its own LoRA matrices, its own settings and step
count. The base weights never get a gradient (peft freezes them); requests that name no adapter run the base with
every adapter switched off (the default policy, and the KL reference of every adapter).

An adapter's folder (save / init):
  adapter_config.json        peft's LoraConfig (base_model_name_or_path: the base folder)
  adapter_model.safetensors  its LoRA matrices under peft's names without the adapter's name (as peft saves them)
  optimizer.safetensors      AdamW moments "m.<name>", "v.<name>" under the same names; metadata: step, config
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from . import messages as msg
from .folder import AdamState
from .optim import Trainable

if TYPE_CHECKING:
    from peft import PeftModel
    from transformers import PreTrainedModel

ADAPTER_CONFIG = 'adapter_config.json'
ADAPTER_WEIGHTS = 'adapter_model.safetensors'
OPTIMIZER = 'optimizer.safetensors'


def is_adapter_folder(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, ADAPTER_CONFIG))


def frozen_base(action: str, adapters: Adapters) -> str:
    """Why a request that names no adapter cannot train or save the base model."""
    if adapters:
        return f'the base model is frozen under LoRA adapters: name the adapter to {action} (adapters: {", ".join(adapters.by_name)})'
    return f'this engine trains no full weights (started with --trainable adapters or none): name an adapter to {action}'


class Adapter(Trainable):
    """One LoRA adapter: a Trainable over its own LoRA matrices, with its name."""

    def __init__(self, name: str, params: list[tuple[str, torch.nn.Parameter]], config: msg.OptimizerSettings, step: int):
        super().__init__(params, config, step)
        self.name = name

    def saved_name(self, param_name: str) -> str:
        """peft's saved name of one of its parameters: its module path without the adapter's name."""
        return re.sub(rf'(\.lora_\w+)\.{re.escape(self.name)}\.', r'\1.', param_name)


class Adapters:
    """The adapters on one engine's model (none until the first add)."""

    def __init__(self, model: PreTrainedModel, base_source: str):
        self.model = model  # the transformers model; peft injects its LoRA layers into it
        self.base_source = base_source
        self.peft: PeftModel | None = None
        self.peft = None
        self.by_name: dict[str, Adapter] = {}
        self._active: str | None = None

    def __bool__(self) -> bool:
        return bool(self.by_name)

    @property
    def active(self) -> str | None:
        """The adapter forward passes use now (None: the base, every adapter off)."""
        return self._active

    def get(self, name: str) -> Adapter:
        a = self.by_name.get(name)
        if a is None:
            raise msg.RequestError(f'no adapter "{name}" (adapters: {", ".join(self.by_name) or "none"})')
        return a

    def check_name(self, adapter: str | None) -> None:
        """A request's adapter: None (the base) or the name of one added."""
        if adapter is not None:
            self.get(adapter)

    def _wrapped(self) -> PeftModel:
        """The peft model around the base (there is one once an adapter was added)."""
        if self.peft is None:
            raise msg.RequestError('no adapter was added to this engine')
        return self.peft

    def add(self, p: msg.AddAdapterParams) -> dict[str, Any]:
        from peft import LoraConfig, get_peft_model, set_peft_model_state_dict

        name, init, lora = p.name, p.init, p.lora
        if name in self.by_name:
            raise msg.RequestError(f'params.name: adapter "{name}" exists already')
        saved: SavedAdapter | None = None
        if init is not None:
            if not is_adapter_folder(init):
                raise msg.RequestError(
                    f'params.init: {init} is not an adapter folder (no {ADAPTER_CONFIG}): with LoRA, a policy starts from '
                    'the base model or from an adapter a LoRA run saved'
                )
            cfg = LoraConfig.from_pretrained(init)
            saved = read_adapter(init)
        else:
            cfg = LoraConfig(
                r=lora.rank,
                lora_alpha=lora.alpha,  # type: ignore[arg-type]  # peft annotates an int; any number works (scaling = alpha / r)
                lora_dropout=lora.dropout,
                target_modules=list(lora.target_modules) if lora.target_modules else None,
                task_type='CAUSAL_LM',
                bias='none',
            )
        cfg.base_model_name_or_path = self.base_source
        cfg.inference_mode = False
        try:
            if self.peft is None:
                self.peft = get_peft_model(self.model, cfg, adapter_name=name)
            else:
                self.peft.add_adapter(name, cfg)
        except ValueError as e:  # peft's own refusals (a target module it cannot wrap...), as an answer
            raise msg.RequestError(f'add_adapter: {e}') from e
        peft = self._wrapped()
        if saved:
            result = set_peft_model_state_dict(peft, saved.weights, adapter_name=name)
            unexpected = [k for k in getattr(result, 'unexpected_keys', []) if 'lora_' in k]
            if unexpected:
                raise msg.RequestError(f'params.init: {init}: weights that fit no layer of this base: {unexpected[:3]}')
        mine = re.compile(rf'\.lora_\w+\.{re.escape(name)}\.')
        params = [(n, q) for n, q in peft.named_parameters() if mine.search(n)]
        if not params:
            raise msg.RequestError(f'params.lora.targetModules: {sorted(cfg.target_modules or [])} matched no layer of this model')
        # Its configured settings: the daemon's (the engine's under what the folder saved under those asked for).
        a = Adapter(name, params, p.optimizer, saved.state.step if saved else 0)
        if saved and saved.state.moments:
            a.restore_moments(saved.state.moments, key=a.saved_name)
        self.by_name[name] = a
        self.activate(None)
        return {
            'name': name,
            'parameters': sum(q.numel() for _, q in params),
            'step': a.step,
            'rank': int(cfg.r),
            'targetModules': sorted(cfg.target_modules or []),
            'optimizer': msg.wire(p.optimizer),
        }

    def activate(self, name: str | None) -> None:
        """Makes `name` the adapter forward passes use (and the only one with gradients); None: no adapter."""
        if self.peft is None:
            return
        if name is not None:
            self.peft.set_adapter(name)
        for a in self.by_name.values():
            for _, q in a.params:
                q.requires_grad_(a.name == name)

    @contextlib.contextmanager
    def using(self, name: str | None) -> Iterator[None]:
        """Forward passes inside run with adapter `name`, or with every adapter off (the base) for None."""
        if self.peft is None:
            if name is not None:
                raise msg.RequestError(f'no adapter "{name}" (adapters: none)')
            yield
            return
        if name is None:
            with self.peft.disable_adapter():
                yield
            return
        self.get(name)
        self.activate(name)
        self._active = name
        try:
            yield
        finally:
            self._active = None
            self.activate(None)

    def save(self, name: str, target: str) -> None:
        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file

        a = self.get(name)
        peft = self._wrapped()
        os.makedirs(target, exist_ok=True)
        peft.peft_config[name].save_pretrained(target)
        weights = get_peft_model_state_dict(peft, adapter_name=name)
        save_file({k: t.detach().to('cpu').contiguous() for k, t in weights.items()}, os.path.join(target, ADAPTER_WEIGHTS), metadata={'format': 'pt'})
        moments: dict[str, torch.Tensor] = {}
        for key, (m, v) in a.moments(key=a.saved_name).items():
            moments[f'm.{key}'], moments[f'v.{key}'] = m, v
        meta = {'step': str(a.step), 'config': json.dumps(msg.wire(a.config)), 'adapter': name}
        save_file(moments, os.path.join(target, OPTIMIZER), metadata=meta)


@dataclass
class SavedAdapter:
    """An adapter folder's LoRA matrices (peft's saved names) and AdamW state (its saved settings are the daemon's)."""

    weights: dict[str, torch.Tensor]
    state: AdamState


def read_adapter(folder: str) -> SavedAdapter:
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = os.path.join(folder, ADAPTER_WEIGHTS)
    if not os.path.isfile(path):
        raise msg.RequestError(f'{folder} has {ADAPTER_CONFIG} but no {ADAPTER_WEIGHTS}')
    out = SavedAdapter(load_file(path), AdamState(0, {}))
    opt = os.path.join(folder, OPTIMIZER)
    if os.path.isfile(opt):
        with safe_open(opt, framework='pt') as f:
            meta = f.metadata() or {}
            keys = set(f.keys())
            for k in keys:
                if k.startswith('m.') and f'v.{k[2:]}' in keys:
                    out.state.moments[k[2:]] = (f.get_tensor(k).float(), f.get_tensor(f'v.{k[2:]}').float())
        out.state.step = int(meta.get('step', 0))
    return out
