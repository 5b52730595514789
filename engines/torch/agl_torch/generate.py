"""Batched generation: prompts left-padded into one batch and prefilled once, then one token per step for every
unfinished row, sampled on the device (sampling.py: a counter-based seed per row, so a row samples the same tokens
alone or in any batch, on either path). One small device-to-host copy per step brings the step's tokens and log-probs
back for end-of-sequence and stop-string checks and streaming. Rows that finish are compacted out of the batch.

Two paths, the same tokens and log-probs for the same seeds (engines/torch/tests/test_fastgen.py):
- lean (decode.py, the default for GPT-2 / Llama / Qwen2 / Mistral): the engine's own KV cache and a few tensor ops
  around the model's modules; on CUDA each decoding step (forward and sampling) is captured once per batch bucket and
  attention length as a CUDA graph and replayed (graphs.py).
- eager: transformers' own forward with its DynamicCache, for any other model (and as the reference).
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import torch

from .decode import LeanDecoder, bucket
from .sampling import Sampling, pick, row_seed

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from .graphs import DecodeGraphs


class Generation(TypedDict):
    """One prompt's completion (protocol/engine.ts EngineGeneration)."""

    tokenIds: list[int]
    logprobs: list[float]
    finishReason: Literal['stop', 'length']


class _Row(Generation):
    done: bool


# A streamed step: (row, token, log-prob) per row that got a token.
Event = tuple[int, int, float]
Decode = Callable[[list[int]], str]
Steps = tuple[torch.Tensor, torch.Tensor]


def cache_argument(model: PreTrainedModel) -> str:
    """The KV cache's name in forward() and its output: `cache` since transformers 5.2x, `past_key_values` before."""
    return 'cache' if 'cache' in inspect.signature(model.forward).parameters else 'past_key_values'


class Rows:
    """The host's view of the batch: each row's tokens so far, whether it is done, and which batch slot holds it."""

    def __init__(self, n: int, eos: list[int], stop: list[str], decode: Decode | None):
        self.out: list[_Row] = [{'tokenIds': [], 'logprobs': [], 'finishReason': 'length', 'done': False} for _ in range(n)]
        self.live = list(range(n))  # batch position -> row
        self.eos, self.stop, self.decode = set(eos), stop, decode

    def take(self, tokens: list[float], logprobs: list[float]) -> list[Event]:
        """Records one step's token per live row; returns the streamed events."""
        events: list[Event] = []
        for i, b in enumerate(self.live):
            o = self.out[b]
            if o['done']:  # finished earlier; still in a graph's batch until it halves
                continue
            t, lp = int(tokens[i]), float(logprobs[i])
            o['tokenIds'].append(t)
            o['logprobs'].append(lp)
            events.append((b, t, lp))
            if t in self.eos or (self.stop and self.decode and any(s in self.decode(o['tokenIds']) for s in self.stop)):
                o['done'], o['finishReason'] = True, 'stop'
        return events

    def keep(self) -> list[int]:
        """Batch positions of the rows still going."""
        return [i for i, b in enumerate(self.live) if not self.out[b]['done']]

    def result(self) -> list[Generation]:
        return [{'tokenIds': o['tokenIds'], 'logprobs': o['logprobs'], 'finishReason': o['finishReason']} for o in self.out]


def _left_padded(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    L = max(len(p) for p in prompts)
    left = torch.tensor([L - len(p) for p in prompts])
    ids = torch.zeros((len(prompts), L), dtype=torch.long)
    for b, p in enumerate(prompts):
        ids[b, L - len(p) :] = torch.tensor(p, dtype=torch.long)
    positions = (torch.arange(L)[None, :] - left[:, None]).clamp(min=0)
    return ids, left, positions, L


@torch.no_grad()
def generate(
    model: PreTrainedModel,
    prompts: list[list[int]],
    *,
    max_tokens: int,
    context_length: int,
    eos: list[int],
    device: torch.device,
    sampling: Sampling,
    stop: list[str] | None = None,
    seed: int | None = None,
    decode: Decode | None = None,
    on_step: Callable[[list[Event]], None] | None = None,
    lean: LeanDecoder | None = None,
    graphs: DecodeGraphs | None = None,
) -> list[Generation]:
    if not prompts:
        return []
    stop = [s for s in (stop or []) if s]
    ids, left, positions, L = _left_padded(prompts)
    max_new = min(int(max_tokens), context_length - L)
    seed = random.randrange(2**31) if seed is None else int(seed)
    seeds = torch.tensor([row_seed(seed, i) for i in range(len(prompts))], dtype=torch.int64, device=device)
    rows = Rows(len(prompts), eos, stop, decode)
    step: _LeanSteps | _EagerSteps
    if lean is not None:
        step = _LeanSteps(lean, graphs, ids, left, positions, L, max_new, device, sampling, seeds)
    else:
        step = _EagerSteps(model, ids, left, positions, L, device, sampling, seeds)
    tokens, logprobs = step.first()
    for k in range(max_new):
        host = torch.stack([tokens.to(torch.float32), logprobs]).cpu()  # the step's one device-to-host copy
        events = rows.take(host[0, : len(rows.live)].tolist(), host[1, : len(rows.live)].tolist())
        if on_step and events:
            on_step(events)
        keep = rows.keep()
        if not keep or k == max_new - 1:
            break
        if len(keep) < len(rows.live) and step.compact(keep, len(rows.live)):
            rows.live = [rows.live[i] for i in keep]  # else finished rows stay in the batch, skipped, until it shrinks
        tokens, logprobs = step.next(k + 1)
    return rows.result()


class _EagerSteps:
    """transformers' forward and DynamicCache (any model); the reference for the lean path."""

    def __init__(
        self,
        model: PreTrainedModel,
        ids: torch.Tensor,
        left: torch.Tensor,
        positions: torch.Tensor,
        L: int,
        device: torch.device,
        sampling: Sampling,
        seeds: torch.Tensor,
    ):
        self.model, self.device, self.sampling, self.seeds = model, device, sampling, seeds
        slots = torch.arange(L)
        self.attention = (slots[None, :] >= left[:, None]).long().to(device)
        self.positions = positions.to(device)
        self.ids = ids.to(device)
        self.cache_kw = cache_argument(model)
        self.cache: Any = None  # transformers' DynamicCache, from the model's output
        self.tokens: torch.Tensor

    def first(self) -> Steps:
        res = self.model(input_ids=self.ids, attention_mask=self.attention, position_ids=self.positions, use_cache=True, logits_to_keep=1)
        self.cache = getattr(res, self.cache_kw)
        self.next_pos = self.positions[:, -1] + 1
        self.tokens, lp = pick(res.logits[:, -1, :], self.sampling, self.seeds, 0)
        return self.tokens, lp

    def compact(self, keep: list[int], n: int) -> bool:
        if len(keep) > n * 0.75:
            return False
        idx = torch.tensor(keep, device=self.device)
        self.cache.batch_select_indices(idx)
        self.attention, self.next_pos, self.tokens, self.seeds = self.attention[idx], self.next_pos[idx], self.tokens[idx], self.seeds[idx]
        return True

    def next(self, k: int) -> Steps:
        self.attention = torch.cat([self.attention, torch.ones((self.attention.shape[0], 1), dtype=self.attention.dtype, device=self.device)], dim=1)
        res = self.model(
            input_ids=self.tokens.unsqueeze(-1),
            attention_mask=self.attention,
            position_ids=self.next_pos.unsqueeze(-1),
            use_cache=True,
            **{self.cache_kw: self.cache},
        )
        self.cache = getattr(res, self.cache_kw)
        self.next_pos = self.next_pos + 1
        self.tokens, lp = pick(res.logits[:, -1, :], self.sampling, self.seeds, k)
        return self.tokens, lp


class _LeanSteps:
    """The lean decoder: the engine's cache, one slot per step; decoding steps replayed from CUDA graphs when given."""

    def __init__(
        self,
        lean: LeanDecoder,
        graphs: DecodeGraphs | None,
        ids: torch.Tensor,
        left: torch.Tensor,
        positions: torch.Tensor,
        L: int,
        max_new: int,
        device: torch.device,
        sampling: Sampling,
        seeds: torch.Tensor,
    ):
        self.lean, self.graphs, self.device, self.sampling = lean, graphs, device, sampling
        self.B, self.L = ids.shape[0], L
        rows = bucket(self.B, 1) if graphs is not None else self.B
        lean.ensure_cache(rows, bucket(L + max_new))
        self.ids, self.left, self.positions = ids.to(device), left.to(device), positions.to(device)
        self.seeds = seeds

    def first(self) -> Steps:
        slot0 = torch.zeros((), dtype=torch.long, device=self.device)
        logits = self.lean.forward(self.ids, self.positions, self.left, slot0, bucket(self.L))
        tokens, lp = pick(logits, self.sampling, self.seeds, 0)
        self.state = {'tokens': tokens, 'positions': self.positions[:, -1] + 1, 'left': self.left, 'seeds': self.seeds}
        if self.graphs is not None:
            self.graphs.begin(self.lean, self.state, self.L, self.sampling)
        return tokens, lp

    def compact(self, keep: list[int], n: int) -> bool:
        if self.graphs is not None:
            return self.graphs.compact(keep, n)
        if len(keep) > n * 0.75:
            return False
        idx = torch.tensor(keep, device=self.device)
        self.lean.kv.keep(idx)
        self.state = {k: v[idx] for k, v in self.state.items()}
        return True

    def next(self, k: int) -> Steps:
        if self.graphs is not None:
            return self.graphs.step(k)
        s = self.state
        slot = torch.tensor([self.L + k - 1], device=self.device)
        logits = self.lean.forward(s['tokens'][:, None], s['positions'][:, None], s['left'], slot, bucket(self.L + k))
        s['tokens'], lp = pick(logits, self.sampling, s['seeds'], k)
        s['positions'] = s['positions'] + 1
        return s['tokens'], lp
