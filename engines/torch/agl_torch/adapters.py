"""One LoRA adapter per policy on one frozen base (peft): what `engine.lora` with `policies:` runs.

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

import torch

from .optim import make_adamw, set_optimizer

ADAPTER_CONFIG = 'adapter_config.json'
ADAPTER_WEIGHTS = 'adapter_model.safetensors'
OPTIMIZER = 'optimizer.safetensors'
NAME = re.compile(r'^[A-Za-z0-9_-]{1,64}$')


def is_adapter_folder(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, ADAPTER_CONFIG))


class Adapter:
    def __init__(self, name: str, params: list[tuple[str, torch.nn.Parameter]], config: dict, step: int):
        self.name, self.params, self.config, self.step = name, params, config, step
        self.opt = make_adamw(params, config)

    def set_optimizer(self, cfg: dict) -> dict:
        return set_optimizer(self.opt, self.config, cfg)


class Adapters:
    """The adapters on one engine's model (none until the first add)."""

    def __init__(self, model, base_source: str, default_optimizer: dict):
        self.model = model  # the transformers model; peft injects its LoRA layers into it
        self.base_source = base_source
        self.default_optimizer = default_optimizer
        self.peft = None
        self.by_name: dict[str, Adapter] = {}

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def get(self, name: str) -> Adapter:
        a = self.by_name.get(name)
        if a is None:
            raise ValueError(f'no adapter "{name}" (adapters: {", ".join(self.by_name) or "none"})')
        return a

    def check_name(self, adapter) -> None:
        """A request's adapter: None (the base) or the name of one added."""
        if adapter is not None:
            if not isinstance(adapter, str):
                raise ValueError(f'adapter must be a name or null, got {adapter!r}')
            self.get(adapter)

    def add(self, p: dict) -> dict:
        from peft import LoraConfig, get_peft_model, set_peft_model_state_dict

        name, init, lora = p.get('name'), p.get('init'), p.get('lora') or {}
        if not isinstance(name, str) or not NAME.match(name):
            raise ValueError(f'add_adapter: name must be 1-64 letters, digits, _ or -, got {name!r}')
        if name in self.by_name:
            raise ValueError(f'add_adapter: adapter "{name}" exists already')
        saved = None
        if init is not None:
            if not isinstance(init, str) or not is_adapter_folder(init):
                raise ValueError(f'add_adapter: {init} is not an adapter folder (no {ADAPTER_CONFIG}): with LoRA, a role policy starts from '
                                 'the base model or from an adapter a LoRA run saved')
            cfg = LoraConfig.from_pretrained(init)
            saved = read_adapter(init)
        else:
            targets = lora.get('targetModules')
            cfg = LoraConfig(r=int(lora.get('rank', 8)), lora_alpha=float(lora.get('alpha', 16)), lora_dropout=float(lora.get('dropout', 0.0)),
                             target_modules=list(targets) if targets else None, task_type='CAUSAL_LM', bias='none')
        cfg.base_model_name_or_path = self.base_source
        cfg.inference_mode = False
        if self.peft is None:
            self.peft = get_peft_model(self.model, cfg, adapter_name=name)
        else:
            self.peft.add_adapter(name, cfg)
        if saved:
            result = set_peft_model_state_dict(self.peft, saved['weights'], adapter_name=name)
            unexpected = [k for k in getattr(result, 'unexpected_keys', []) if 'lora_' in k]
            if unexpected:
                raise ValueError(f'add_adapter: {init}: weights that fit no layer of this base: {unexpected[:3]}')
        mine = re.compile(rf'\.lora_\w+\.{re.escape(name)}\.')
        params = [(n, q) for n, q in self.peft.named_parameters() if mine.search(n)]
        if not params:
            raise ValueError(f'add_adapter: LoRA targets {sorted(cfg.target_modules or [])} matched no layer of this model')
        config = dict(self.default_optimizer)
        if saved and saved['config']:
            config.update({k: v for k, v in saved['config'].items() if k in config})
        config.update({k: v for k, v in (p.get('optimizer') or {}).items() if k in config and v is not None})
        a = Adapter(name, params, config, saved['step'] if saved else 0)
        if saved and saved['moments']:
            for n, q in params:
                key = _saved_key(n, name)
                if key in saved['moments']:
                    m, v = saved['moments'][key]
                    a.opt.state[q] = {'step': torch.tensor(float(a.step)), 'exp_avg': m.to(q.device), 'exp_avg_sq': v.to(q.device)}
        self.by_name[name] = a
        self.activate(None)
        return {'name': name, 'parameters': sum(q.numel() for _, q in params), 'step': a.step, 'rank': int(cfg.r),
                'targetModules': sorted(cfg.target_modules or []), 'optimizer': config}

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
    def using(self, name: str | None):
        """Forward passes inside run with adapter `name`, or with every adapter off (the base) for None."""
        if self.peft is None:
            if name is not None:
                raise ValueError(f'no adapter "{name}" (adapters: none)')
            yield
            return
        if name is None:
            with self.peft.disable_adapter():
                yield
            return
        self.get(name)
        self.activate(name)
        try:
            yield
        finally:
            self.activate(None)

    def save(self, name: str, target: str) -> None:
        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file

        a = self.get(name)
        os.makedirs(target, exist_ok=True)
        self.peft.peft_config[name].save_pretrained(target)
        weights = get_peft_model_state_dict(self.peft, adapter_name=name)
        save_file({k: t.detach().to('cpu').contiguous() for k, t in weights.items()}, os.path.join(target, ADAPTER_WEIGHTS), metadata={'format': 'pt'})
        moments = {}
        for n, q in a.params:
            st = a.opt.state.get(q) or {}
            key = _saved_key(n, name)
            moments[f'm.{key}'] = st.get('exp_avg', torch.zeros_like(q)).detach().to('cpu', torch.float32).contiguous()
            moments[f'v.{key}'] = st.get('exp_avg_sq', torch.zeros_like(q)).detach().to('cpu', torch.float32).contiguous()
        meta = {'step': str(a.step), 'config': json.dumps(a.config), 'adapter': name}
        save_file(moments, os.path.join(target, OPTIMIZER), metadata=meta)


def _saved_key(param_name: str, adapter: str) -> str:
    """peft's saved name of an adapter parameter: its module path without the adapter's name."""
    return re.sub(rf'(\.lora_\w+)\.{re.escape(adapter)}\.', r'\1.', param_name)


def read_adapter(folder: str) -> dict:
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = os.path.join(folder, ADAPTER_WEIGHTS)
    if not os.path.isfile(path):
        raise ValueError(f'{folder} has {ADAPTER_CONFIG} but no {ADAPTER_WEIGHTS}')
    out = {'weights': load_file(path), 'moments': {}, 'step': 0, 'config': None}
    opt = os.path.join(folder, OPTIMIZER)
    if os.path.isfile(opt):
        with safe_open(opt, framework='pt') as f:
            meta = f.metadata() or {}
            keys = set(f.keys())
            for k in keys:
                if k.startswith('m.') and f'v.{k[2:]}' in keys:
                    out['moments'][k[2:]] = (f.get_tensor(k).float(), f.get_tensor(f'v.{k[2:]}').float())
        out['step'] = int(meta.get('step', 0))
        out['config'] = json.loads(meta['config']) if meta.get('config') else None
    return out
