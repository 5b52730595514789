"""Picking the next token on the device, with a seed per row and no draw on the host.

Each row's uniform number for its k-th token is a hash of (row seed, k): a counter-based generator (a 32-bit
murmur3-style mix computed in int64 without overflow), the same bits on a CPU and a GPU, whatever the batch. So a
row samples the same tokens alone or in any batch, in the eager path and in a captured CUDA graph, and nothing is
drawn on the host between decoding steps. The row seeds are the TF.js engine's (`rowSeed`).

The log-prob returned for each token is the untempered model's (before temperature, top-k and top-p), as the
daemon records it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

M32 = 0xFFFFFFFF


def row_seed(seed: int, row: int) -> int:
    """The same per-row seed as the TF.js engine's rowSeed (32-bit arithmetic)."""
    return ((((seed ^ 0x9E3779B9) & M32) * 0x85EBCA6B) + (row + 1) * 0xC2B2AE35) & M32


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """(x * c) mod 2^32 for x < 2^32 held in int64, without an intermediate past 2^63."""
    hi, lo = x >> 16, x & 0xFFFF
    return ((((hi * c) & 0xFFFF) << 16) + lo * c) & M32


def uniform(seeds: torch.Tensor, counter: torch.Tensor | int) -> torch.Tensor:
    """[B] float32 in [0, 1): the hash of each row's seed and the token counter (24 bits of it)."""
    x = (seeds ^ _mul32(torch.as_tensor(counter, dtype=torch.int64, device=seeds.device) + 1, 0x9E3779B9)) & M32
    x = x ^ (x >> 16)
    x = _mul32(x, 0x85EBCA6B)
    x = x ^ (x >> 13)
    x = _mul32(x, 0xC2B2AE35)
    x = x ^ (x >> 16)
    return (x >> 8).to(torch.float32) * (1.0 / (1 << 24))


@dataclass(frozen=True)
class Sampling:
    """How a request samples: greedy (temperature 0), or temperature with optional top-k / top-p."""

    temperature: float
    top_k: int = 0
    top_p: float = 1.0

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0

    @property
    def filtered(self) -> bool:
        return self.top_k > 0 or self.top_p < 1


def probabilities(logits: torch.Tensor, s: Sampling, temperature: torch.Tensor | float) -> torch.Tensor:
    """[B, V] sampling probabilities: temperature, then top-k, then top-p (nucleus) on the sorted distribution."""
    x = logits / temperature
    V = x.shape[-1]
    if s.top_k and 0 < s.top_k < V:
        kth = torch.topk(x, s.top_k, dim=-1).values[:, -1:]
        x = x.masked_fill(x < kth, float('-inf'))
    if s.top_p < 1:
        sorted_x, order = torch.sort(x, dim=-1, descending=True)
        probs = torch.softmax(sorted_x, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass of the better tokens: keep while it is below top_p
        drop = before >= s.top_p
        drop[:, 0] = False
        sorted_x = sorted_x.masked_fill(drop, float('-inf'))
        x = torch.full_like(x, float('-inf')).scatter(-1, order, sorted_x)
    return torch.softmax(x, dim=-1)


def pick(
    logits: torch.Tensor, s: Sampling, seeds: torch.Tensor, counter: torch.Tensor | int, temperature: torch.Tensor | float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens [B] int64, log-probs [B] float32) for one decoding step: every op on the logits' device."""
    logits = logits.float()
    logp = torch.log_softmax(logits, dim=-1)
    if s.greedy:
        tokens = logits.argmax(dim=-1)
    else:
        probs = probabilities(logits, s, s.temperature if temperature is None else temperature)
        cdf = torch.cumsum(probs, dim=-1)
        u = uniform(seeds, counter)
        tokens = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(-1)).squeeze(-1).clamp(max=probs.shape[-1] - 1)
        # searchsorted may land on a zero-probability token when u hits a flat stretch of the cdf exactly
        zero = probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) <= 0
        tokens = torch.where(zero, probs.argmax(dim=-1), tokens)
    return tokens, logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
