"""The policy engine: one transformers model, its AdamW state, and the contract's operations
(daemon/model/policy-contract.ts): generate, score, train_step, save.

Data-parallel: under torchrun every rank holds the same model (DDP broadcasts rank 0's weights at the start);
train_step gives each rank every world-th micro-batch, DDP all-reduces the gradients once at the end of the
rank's micro-batches (no_sync before), and every rank applies the same clipped AdamW update. DDP averages
gradients over ranks; each micro-batch's loss is the batch loss's share, so the loss is scaled by the world size
to keep the gradient the batch loss's (the same as one rank summing every micro-batch). Generation and scoring
run on rank 0 alone.
"""
from __future__ import annotations

import contextlib
import os
import time

import torch
import torch.distributed as dist

from . import folder as fold
from .adapters import Adapters
from .batch import Batch, build_batch, check_pairs, completion_logprobs, fitting_chunks
from .generate import generate
from .loss import LossFn, check_loss
from .optim import make_adamw, set_optimizer

DTYPES = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}


class Engine:
    def __init__(self, model_dir: str, *, device: torch.device, dtype: str = 'float32', attn: str = 'sdpa',
                 optimizer: dict | None = None, name: str | None = None, rank: int = 0, world: int = 1):
        if dtype not in DTYPES:
            raise ValueError(f'--dtype must be one of {", ".join(DTYPES)}, got {dtype}')
        self.device, self.dtype_name, self.rank, self.world = device, dtype, rank, world
        self.source = model_dir
        self.name = name or os.path.basename(os.path.abspath(model_dir))
        self.hf, model = fold.load_model(model_dir, DTYPES[dtype], attn)
        self.family = fold.family_of(self.hf)
        self.context_length = fold.context_length_of(self.hf)
        self.model = model.to(device)
        self.decode = fold.decoder_for(model_dir, self.hf)
        self.params = fold.parameter_names(self.model)
        self.config = dict(fold.DEFAULT_OPTIMIZER)
        saved = fold.read_optimizer(model_dir, self.family, {n: p.shape for n, p in self.params})
        if saved and saved['config']:
            self.config.update({k: v for k, v in saved['config'].items() if k in self.config})
        self.config.update({k: v for k, v in (optimizer or {}).items() if k in self.config and v is not None})
        # AdamW: decoupled weight decay on matrices only (not norms, biases), as the TF.js engine.
        self.opt = make_adamw(self.params, self.config)
        self.step = 0
        if saved:
            self.step = saved['step']
            for n, p in self.params:
                m, v = saved['moments'][n]
                self.opt.state[p] = {'step': torch.tensor(float(self.step)), 'exp_avg': m.to(device), 'exp_avg_sq': v.to(device)}
        self.adapters = Adapters(self.model, os.path.abspath(model_dir), self.config)
        self.ddp = None
        if world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP
            self.ddp = DDP(self.model, device_ids=[device.index] if device.type == 'cuda' else None)

    # -- information ---------------------------------------------------------------------------------------
    def describe(self) -> dict:
        return {
            'name': self.name, 'family': self.family, 'modelType': self.hf.get('model_type'),
            'parameters': sum(p.numel() for _, p in self.params), 'contextLength': self.context_length,
            'vocabSize': int(self.hf.get('vocab_size', 0)), 'dtype': self.dtype_name, 'optimizer': self.config, 'step': self.step,
            'adapters': {n: {'step': a.step, 'parameters': sum(q.numel() for _, q in a.params)} for n, a in self.adapters.by_name.items()},
        }

    def add_adapter(self, p: dict) -> dict:
        """A LoRA adapter on the (then frozen) base: a policy of its own, served and trained by naming it."""
        if self.world > 1:
            raise ValueError('LoRA adapters run on one rank for now (engine.procs 1): several ranks train full weights')
        try:
            return self.adapters.add(p)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - peft's own failures (a target module it cannot wrap...) as an answer
            raise ValueError(f'add_adapter: {type(e).__name__}: {e}') from e

    def set_optimizer(self, cfg: dict) -> dict:
        return set_optimizer(self.opt, self.config, cfg)

    # -- sampling and scoring (rank 0) ---------------------------------------------------------------------
    def generate(self, p: dict, on_step=None) -> list[dict]:
        self.adapters.check_name(p.get('adapter'))
        with self.adapters.using(p.get('adapter')):
            return self._generate(p, on_step)

    def _generate(self, p: dict, on_step=None) -> list[dict]:
        return generate(self.model, p['prompts'], max_tokens=int(p['maxTokens']), context_length=self.context_length,
                        eos=list(p.get('eos') or []), device=self.device, temperature=float(p.get('temperature', 1.0)),
                        top_p=float(p.get('topP') or 1.0), top_k=int(p.get('topK') or 0), stop=p.get('stop'), seed=p.get('seed'),
                        decode=self.decode, on_step=on_step)

    def score(self, pairs: list[dict], adapter: str | None = None) -> list[list[float]]:
        self.adapters.check_name(adapter)
        with self.adapters.using(adapter):
            return self._score(pairs)

    @torch.inference_mode()
    def _score(self, pairs: list[dict]) -> list[list[float]]:
        for i, p in enumerate(pairs):
            if not p.get('promptIds'):
                raise ValueError(f'pair {i}: promptIds is empty (need at least one token to predict from)')
            if len(p['promptIds']) + len(p['completionIds']) > self.context_length:
                raise ValueError(f"pair {i}: {len(p['promptIds'])}+{len(p['completionIds'])} tokens exceed the context of {self.context_length}")
        out: list[list[float]] = [None] * len(pairs)  # type: ignore[list-item]
        for chunk in fitting_chunks(pairs, int(self.config['microBatchSize']), self.context_length):
            group = [pairs[i] for i in chunk]
            b = build_batch(group, self.device)
            logp, _ = completion_logprobs(self.model, b, False)
            rows = logp.tolist()
            for j, i in enumerate(chunk):
                out[i] = rows[j][:len(pairs[i]['completionIds'])]
        return out

    # -- training (every rank) -----------------------------------------------------------------------------
    def validate_train(self, p: dict) -> None:
        """Everything that can be wrong with a train_step request, checked on rank 0 before any rank starts it."""
        check_pairs(p.get('pairs') or [], self.context_length)
        check_loss(p.get('loss') or {}, p['pairs'])
        self.adapters.check_name(p.get('adapter'))
        if self.adapters and p.get('adapter') is None:
            raise ValueError('the base model is frozen under LoRA adapters: name the adapter to train')
        if p.get('optimizer'):
            probe = dict(self.config)
            for k, v in p['optimizer'].items():
                if k not in probe:
                    raise ValueError(f'unknown optimizer setting "{k}" (known: {", ".join(probe)})')

    def train_step(self, p: dict) -> dict:
        adapter = p.get('adapter')
        if adapter is None:
            return self._train_step(p, self.params, self.opt, self.config, self.set_optimizer, 'step', self)
        a = self.adapters.get(adapter)
        with self.adapters.using(adapter):
            return self._train_step(p, a.params, a.opt, a.config, a.set_optimizer, 'step', a)

    def _train_step(self, p: dict, params, opt, config: dict, set_optimizer, counter: str, owner) -> dict:
        """One clipped AdamW update of `params` (the model's, or an adapter's) with `opt`; `owner.<counter>` counts it."""
        started = time.perf_counter()
        pairs = p['pairs']
        if p.get('optimizer'):
            set_optimizer(p['optimizer'])
        loss_fn = LossFn(p['loss'], pairs)
        chunks = fitting_chunks(pairs, int(config['microBatchSize']), self.context_length)
        mine = chunks[self.rank::self.world]
        net = self.ddp or self.model
        scale = float(self.world)  # DDP averages over ranks; the batch loss's gradient is the sum over micro-batches
        opt.zero_grad(set_to_none=True)
        for k, chunk in enumerate(mine):
            last = k == len(mine) - 1
            sync = contextlib.nullcontext() if (self.ddp is None or last) else self.ddp.no_sync()
            with sync:
                b = build_batch([pairs[i] for i in chunk], self.device)
                logp, entropy = completion_logprobs(net, b, True)
                loss = loss_fn(logp, b.mask, entropy, chunk)
                (loss * scale).backward()
        if not mine and self.ddp is not None:
            # More ranks than micro-batches: this rank still joins the gradient all-reduce, with a zero contribution.
            b = build_batch([{'promptIds': [0], 'completionIds': [0]}], self.device)
            logp, _ = completion_logprobs(net, b, False)
            (logp.sum() * 0.0).backward()
        grads = [p_.grad for _, p_ in params if p_.grad is not None]
        norm = float(torch.sqrt(sum((g.float() ** 2).sum() for g in grads))) if grads else 0.0
        clip = float(config['gradClip'])
        if clip > 0 and norm > clip:
            torch._foreach_mul_(grads, clip / norm)
        opt.step()
        setattr(owner, counter, getattr(owner, counter) + 1)
        stats = loss_fn.stats
        if self.world > 1:
            keys = sorted(stats)
            t = torch.tensor([stats[k] for k in keys], dtype=torch.float64, device=self.device)
            dist.all_reduce(t)
            stats = dict(zip(keys, t.tolist()))
        tokens = sum(len(x['promptIds']) + len(x['completionIds']) for x in pairs)
        return {'loss': stats['lossSum'], 'gradNorm': norm, 'tokens': tokens, 'seconds': time.perf_counter() - started, 'stats': stats}

    def save(self, target: str, adapter: str | None = None) -> None:
        if self.rank != 0:
            return
        if adapter is not None:
            self.adapters.save(adapter, target)
            return
        if self.adapters:
            raise ValueError('the base model is frozen under LoRA adapters: save an adapter (name it)')
        moments = {}
        for n, p in self.params:
            st = self.opt.state.get(p) or {}
            m = st.get('exp_avg', torch.zeros_like(p))
            v = st.get('exp_avg_sq', torch.zeros_like(p))
            moments[n] = (m, v)
        fold.save_folder(target, self.hf, self.model, self.source, {'step': self.step, 'config': self.config, 'moments': moments})
