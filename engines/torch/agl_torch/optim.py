"""What one trainable policy owns: its parameters, AdamW over float32 masters of them, its configured settings and
update count. The model's own weights (engine.py) and each LoRA adapter (adapters.py) are one of these each.

Settings: the configured ones (the daemon gives them, all of them, at start or add_adapter; it holds the defaults) are
what an update without settings of its own uses; an update's own settings hold for that update only (`apply`).

Mixed precision: when the parameters are not float32 (the model loaded in bfloat16 / float16), the optimizer keeps a
float32 master copy of each and float32 moments, and steps those; the parameters (what forward passes read) are the
masters rounded after each update. An update smaller than half a bfloat16 step therefore still accumulates in the
master instead of vanishing, and norms move as matrices do. Bytes per trained parameter: 2 (bf16 weight) + 2 (bf16
gradient) + 4 (master) + 8 (moments) = 16, the same as float32 training (4 + 4 + 8) without its float32 compute.
float16 gradients underflow without scaling: the loss is scaled (dynamically: halved on overflow, doubled after 200
clean updates) and the gradients unscaled into the masters.

AdamW as both engines build it: decoupled weight decay on matrices only (not norms, biases), the TF.js engine's rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .messages import OptimizerSettings

# AdamW's moments per parameter name: (m, v).
Moments = dict[str, tuple[torch.Tensor, torch.Tensor]]


def _same(name: str) -> str:
    return name


class NonFiniteStep(RuntimeError):
    """The loss or the gradient was NaN or infinite: the update was refused, weights and moments are unchanged."""


class Trainable:
    """Named parameters trained by one AdamW; `config` its configured settings; `step` counts its updates."""

    def __init__(self, params: list[tuple[str, torch.nn.Parameter]], config: OptimizerSettings, step: int = 0, masters: dict[str, torch.Tensor] | None = None):
        self.params = params
        self.config = config
        self.step = step
        device = params[0][1].device if params else torch.device('cpu')
        needs_master = any(p.dtype != torch.float32 for _, p in params)
        self.masters: list[torch.Tensor] | None = None
        if needs_master:
            given = masters or {}
            self.masters = [(given[n] if n in given else p.detach()).to(device=device, dtype=torch.float32).clone() for n, p in params]
        self.loss_scale = 2.0**16 if any(p.dtype == torch.float16 for _, p in params) else 1.0
        self.sharded = any(_is_dtensor(p) for _, p in params)
        self._clean_steps = 0
        self.opt = _adamw(params, self.masters, config, device)

    # -- settings ----------------------------------------------------------------------------------------------
    def _use(self, settings: OptimizerSettings) -> None:
        """AdamW's groups set to one update's settings (set again for every update, so none outlives its update)."""
        if settings.lr is None:
            raise ValueError('optimizer.lr: an update needs a learning rate')
        for g in self.opt.param_groups:
            g['lr'] = settings.lr
            g['betas'] = (settings.beta1, settings.beta2)
            g['eps'] = settings.eps
        self.opt.param_groups[0]['weight_decay'] = settings.weight_decay  # group 0: the matrices

    # -- state in and out --------------------------------------------------------------------------------------
    def _optimized(self) -> list[torch.Tensor]:
        return self.masters if self.masters is not None else [p for _, p in self.params]

    def restore_moments(self, moments: Moments, key: Callable[[str], str] = _same) -> None:
        """AdamW's moments from a saved folder (float32, whatever the parameters' dtype), at the saved step."""
        for (n, _), q in zip(self.params, self._optimized()):
            saved = moments.get(key(n))
            if saved is None:
                continue
            m, v = (_like(t, q) for t in saved)
            fused = bool(self.opt.defaults.get('fused'))  # fused AdamW keeps its step count on the device
            self.opt.state[q] = {
                'step': torch.tensor(float(self.step), dtype=torch.float32, device=q.device if fused else 'cpu'),
                'exp_avg': m,
                'exp_avg_sq': v,
            }

    def moments(self, key: Callable[[str], str] = _same) -> Moments:
        """{saved name: (m, v)} as float32 CPU tensors (zeros before the first update). Sharded: gathered (every rank
        calls this, in the same order)."""
        out: Moments = {}
        for (n, _), q in zip(self.params, self._optimized()):
            st = self.opt.state.get(q) or {}
            m = st.get('exp_avg', torch.zeros_like(q, dtype=torch.float32))
            v = st.get('exp_avg_sq', torch.zeros_like(q, dtype=torch.float32))
            out[key(n)] = (_full(m).to('cpu', torch.float32).contiguous(), _full(v).to('cpu', torch.float32).contiguous())
        return out

    def weights(self) -> dict[str, torch.Tensor]:
        """The trained values to save: the float32 masters when there are, else the parameters (sharded: gathered)."""
        return {n: _full(q) for (n, _), q in zip(self.params, self._optimized())}

    # -- one update ----------------------------------------------------------------------------------------------
    def zero_grad(self) -> None:
        for _, p in self.params:
            p.grad = None
        if self.masters is not None:
            for q in self.masters:
                q.grad = None

    def apply(self, settings: OptimizerSettings) -> torch.Tensor:
        """Clips the gradients by global norm and steps AdamW with this update's `settings`. Returns the norm before
        clipping (a device tensor). Raises NonFiniteStep (nothing changed) when a gradient is NaN or infinite; float16
        first retries smaller scales through the caller (`overflowed`)."""
        grads = [_local(p.grad) for _, p in self.params if p.grad is not None]
        if not grads:
            return torch.zeros(())
        norm: torch.Tensor = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
        if self.sharded:  # each rank holds a part of every gradient: the norm of all of them
            sq = norm.double() ** 2
            torch.distributed.all_reduce(sq)
            norm = sq.sqrt().float()
        if self.loss_scale != 1.0:
            norm = norm / self.loss_scale
        if not bool(torch.isfinite(norm)):
            self.zero_grad()
            raise NonFiniteStep(f'the gradient norm is {float(norm)}')
        clip = settings.grad_clip
        factor = (clip / norm).clamp(max=1.0) if clip > 0 else torch.ones(())
        factor = factor / self.loss_scale
        if self.masters is None:
            torch._foreach_mul_(grads, factor)
        else:
            for (_, p), q in zip(self.params, self.masters):
                q.grad = None if p.grad is None else p.grad.float().mul_(factor)
                p.grad = None
        self._use(settings)
        self.opt.step()
        if self.masters is not None:
            with torch.no_grad():
                for (_, p), q in zip(self.params, self.masters):
                    p.copy_(q)
        self.step += 1
        self._grow_scale()
        return norm

    def overflowed(self) -> bool:
        """float16: halves the loss scale after an overflow; True when a retry can help."""
        if self.loss_scale <= 1.0:
            return False
        self.loss_scale /= 2.0
        self._clean_steps = 0
        return self.loss_scale >= 1.0

    def _grow_scale(self) -> None:
        if self.loss_scale == 1.0 and not any(p.dtype == torch.float16 for _, p in self.params):
            return
        self._clean_steps += 1
        if self._clean_steps >= 200 and self.loss_scale < 2.0**24:
            self.loss_scale *= 2.0
            self._clean_steps = 0


def _is_dtensor(t: torch.Tensor) -> bool:
    from torch.distributed.tensor import DTensor

    return isinstance(t, DTensor)


def _local(t: torch.Tensor) -> torch.Tensor:
    """This rank's part of a sharded (FSDP) tensor; a plain tensor itself."""
    from torch.distributed.tensor import DTensor

    return t.to_local() if isinstance(t, DTensor) else t


def _full(t: torch.Tensor) -> torch.Tensor:
    """The whole of a sharded tensor (a collective: every rank calls it); a plain tensor itself."""
    from torch.distributed.tensor import DTensor

    if not isinstance(t, DTensor):
        return t.detach()
    full: torch.Tensor = t.full_tensor()
    return full.detach().clone()  # a gathered tensor can be a view into a padded buffer, which safetensors will not write


def _like(saved: torch.Tensor, param: torch.Tensor) -> torch.Tensor:
    """A saved float32 moment laid out as its parameter is: on its device, sharded as it is."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(param, DTensor):
        return distribute_tensor(saved.to(param.device, torch.float32), param.device_mesh, param.placements)
    return saved.to(device=param.device, dtype=torch.float32)


def _adamw(
    params: list[tuple[str, torch.nn.Parameter]], masters: list[torch.Tensor] | None, config: OptimizerSettings, device: torch.device
) -> torch.optim.AdamW:
    """Group 0: the matrices (decayed); group 1: the rest. Fused on CUDA (one kernel for every tensor)."""
    tensors = masters if masters is not None else [p for _, p in params]
    decay = [q for (_, p), q in zip(params, tensors) if p.dim() >= 2]
    plain = [q for (_, p), q in zip(params, tensors) if p.dim() < 2]
    extra = {'fused': True} if device.type == 'cuda' else {}
    groups: list[dict[str, Any]] = [{'params': decay, 'weight_decay': config.weight_decay}, {'params': plain, 'weight_decay': 0.0}]
    # The rate here is a placeholder: every update sets its own (`_use`).
    return torch.optim.AdamW(groups, lr=config.lr or 0.0, betas=(config.beta1, config.beta2), eps=config.eps, **extra)
