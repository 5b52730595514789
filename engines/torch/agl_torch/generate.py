"""Batched generation with a KV cache (transformers' DynamicCache), as daemon/model/sampling.ts does it: prompts
left-padded into one batch and prefilled once, then one token per step for every unfinished row; finished rows
are dropped from the batch and the cache once they are a quarter of it. Each row samples with a PRNG of its own,
seeded from (seed, row), so a row samples the same tokens alone or in any batch. The log-prob returned for each
token is the untempered model's (before temperature, top-k and top-p).
"""

from __future__ import annotations

import inspect
import random

import torch

M32 = 0xFFFFFFFF


def row_seed(seed: int, row: int) -> int:
    """The same per-row seed as the TF.js engine's rowSeed (32-bit arithmetic)."""
    return ((((seed ^ 0x9E3779B9) & M32) * 0x85EBCA6B) + (row + 1) * 0xC2B2AE35) & M32


def cache_argument(model) -> str:
    """The KV cache's name in forward() and its output: `cache` since transformers 5.2x, `past_key_values` before."""
    return 'cache' if 'cache' in inspect.signature(model.forward).parameters else 'past_key_values'


def _filter(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """Sampling probabilities [R, V]: temperature, then top-k, then top-p (nucleus) on the sorted distribution."""
    x = logits / temperature
    V = x.shape[-1]
    if top_k and 0 < top_k < V:
        kth = torch.topk(x, top_k, dim=-1).values[:, -1:]
        x = x.masked_fill(x < kth, float('-inf'))
    if top_p < 1:
        sorted_x, order = torch.sort(x, dim=-1, descending=True)
        probs = torch.softmax(sorted_x, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass of the better tokens: keep while it is below top_p
        drop = before >= top_p
        drop[:, 0] = False
        sorted_x = sorted_x.masked_fill(drop, float('-inf'))
        x = torch.full_like(x, float('-inf')).scatter(-1, order, sorted_x)
    return torch.softmax(x, dim=-1)


@torch.inference_mode()
def generate(
    model,
    prompts: list[list[int]],
    *,
    max_tokens: int,
    context_length: int,
    eos: list[int],
    device: torch.device,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
    stop: list[str] | None = None,
    seed: int | None = None,
    decode=None,
    on_step=None,
) -> list[dict]:
    if not prompts:
        return []
    for i, p in enumerate(prompts):
        if not p:
            raise ValueError(f'prompt {i} is empty: give at least one token')
    L = max(len(p) for p in prompts)
    if context_length <= L:
        raise ValueError(f'prompt of {L} tokens does not fit the context of {context_length}')
    stop = [s for s in (stop or []) if s]
    if stop and decode is None:
        raise ValueError('stop strings need a tokenizer to decode with (this model folder has no tokenizer.json)')
    max_new = min(int(max_tokens), context_length - L)
    seed = random.randrange(2**31) if seed is None else int(seed)
    gens = [torch.Generator().manual_seed(row_seed(seed, i)) for i in range(len(prompts))]
    eos_set = set(eos)
    B = len(prompts)
    left = torch.tensor([L - len(p) for p in prompts])
    ids = torch.zeros((B, L), dtype=torch.long)
    for b, p in enumerate(prompts):
        ids[b, L - len(p) :] = torch.tensor(p, dtype=torch.long)
    slots = torch.arange(L)
    attention = (slots[None, :] >= left[:, None]).long()
    positions = (slots[None, :] - left[:, None]).clamp(min=0)
    out = [{'tokenIds': [], 'logprobs': [], 'finishReason': 'length', 'done': False} for _ in prompts]
    rows = list(range(B))
    attention, positions = attention.to(device), positions.to(device)
    cache_kw = cache_argument(model)
    res = model(input_ids=ids.to(device), attention_mask=attention, position_ids=positions, use_cache=True, logits_to_keep=1)
    cache = getattr(res, cache_kw)
    logits = res.logits[:, -1, :]
    next_pos = positions[:, -1] + 1
    for step in range(max_new):
        logits = logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        if temperature <= 0:
            tokens = logits.argmax(dim=-1)
        else:
            probs = _filter(logits, temperature, top_k, top_p)
            u = torch.stack([torch.rand((), generator=gens[b]) for b in rows]).to(device=probs.device, dtype=probs.dtype)
            cdf = torch.cumsum(probs, dim=-1)
            tokens = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(-1)).squeeze(-1).clamp(max=probs.shape[-1] - 1)
            # searchsorted may land on a zero-probability token when u hits a flat stretch of the cdf exactly
            zero = probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) <= 0
            if bool(zero.any()):
                tokens = torch.where(zero, probs.argmax(dim=-1), tokens)
        picked = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        tok_list, lp_list = tokens.tolist(), picked.tolist()
        events = []
        for i, b in enumerate(rows):
            o = out[b]
            if o['done']:
                continue
            t, lp = tok_list[i], lp_list[i]
            o['tokenIds'].append(t)
            o['logprobs'].append(lp)
            events.append((b, t, lp))
            if t in eos_set:
                o['done'], o['finishReason'] = True, 'stop'
            elif stop:
                text = decode(o['tokenIds'])
                if any(s in text for s in stop):
                    o['done'], o['finishReason'] = True, 'stop'
        if on_step and events:
            on_step(events)
        keep = [i for i, b in enumerate(rows) if not out[b]['done']]
        if not keep or step == max_new - 1:
            break
        if len(keep) <= len(rows) * 0.75:
            idx = torch.tensor(keep, device=device)
            cache.batch_select_indices(idx)
            attention, next_pos, tokens = attention[idx], next_pos[idx], tokens[idx]
            rows = [rows[i] for i in keep]
        attention = torch.cat([attention, torch.ones((len(rows), 1), dtype=attention.dtype, device=device)], dim=1)
        res = model(input_ids=tokens.unsqueeze(-1), attention_mask=attention, position_ids=next_pos.unsqueeze(-1), use_cache=True, **{cache_kw: cache})
        cache = getattr(res, cache_kw)
        logits = res.logits[:, -1, :]
        next_pos = next_pos + 1
    return [{'tokenIds': o['tokenIds'], 'logprobs': o['logprobs'], 'finishReason': o['finishReason']} for o in out]
