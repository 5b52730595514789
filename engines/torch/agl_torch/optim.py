"""AdamW as both engines build it: decoupled weight decay on matrices only (not norms, biases), the TF.js engine's
rule; and the settings (`lr`, `beta1`, `beta2`, `eps`, `weightDecay`) changed in place between updates. Used for the
model's own optimizer (engine.py) and each LoRA adapter's (adapters.py)."""

from __future__ import annotations

import math

import torch


def make_adamw(params: list[tuple[str, torch.nn.Parameter]], config: dict) -> torch.optim.AdamW:
    """Group 0: the matrices (decayed); group 1: the rest."""
    decay = [p for _, p in params if p.dim() >= 2]
    plain = [p for _, p in params if p.dim() < 2]
    return torch.optim.AdamW([{'params': decay, 'weight_decay': config['weightDecay']}, {'params': plain, 'weight_decay': 0.0}],
                             lr=config['lr'], betas=(config['beta1'], config['beta2']), eps=config['eps'])


def set_optimizer(opt: torch.optim.Optimizer, config: dict, cfg: dict | None) -> dict:
    """Checks and applies `cfg` over `config` (known keys, finite numbers), then to `opt`'s groups; returns `config`."""
    for k, v in (cfg or {}).items():
        if k not in config:
            raise ValueError(f'unknown optimizer setting "{k}" (known: {", ".join(config)})')
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError(f'optimizer setting "{k}" must be a finite number, got {v!r}')
        config[k] = v
    for g in opt.param_groups:
        g['lr'] = config['lr']
        g['betas'] = (config['beta1'], config['beta2'])
        g['eps'] = config['eps']
    opt.param_groups[0]['weight_decay'] = config['weightDecay']  # group 0: the matrices
    return config
