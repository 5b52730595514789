"""Batches of (prompt, completion) pairs laid out as the TF.js engine lays them out (daemon/model/train-step.ts):
prompts left-padded to a common end P, completions right-padded to T, L = P + T - 1 slots; the hidden state at
slot P-1+t predicts completion token t, so the completion log-probs are the last T positions' logits. Positions
start after each row's left padding (pads get position 0), so a pair scores the same alone or in any batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


def check_pairs(pairs: list[dict], context_length: int) -> None:
    """The errors the TF.js engine gives for the same input, raised before any work (and before ranks are involved)."""
    if not pairs:
        raise ValueError('trainStep: no sequences given')
    for i, p in enumerate(pairs):
        prompt, completion = p.get('promptIds'), p.get('completionIds')
        if not isinstance(prompt, list) or not isinstance(completion, list):
            raise ValueError(f'pair {i}: promptIds and completionIds must be lists of token ids')
        if len(prompt) == 0:
            raise ValueError(f'pair {i}: promptIds is empty (need at least one token to predict from)')
        if len(prompt) + len(completion) > context_length:
            raise ValueError(f'pair {i}: {len(prompt)}+{len(completion)} tokens exceed the context of {context_length}')


def fitting_chunks(pairs: list[dict], n: int, context_length: int) -> list[list[int]]:
    """Consecutive micro-batches (as index lists) of at most n pairs that fit the context once padded (as fittingChunks in TS)."""
    out: list[list[int]] = []
    cur: list[int] = []
    P, T = 0, 1
    for i, p in enumerate(pairs):
        lp, lc = len(p['promptIds']), len(p['completionIds'])
        nP, nT = max(P, lp), max(T, lc)
        if cur and (len(cur) >= n or nP + nT - 1 > context_length):
            out.append(cur)
            cur, P, T = [], lp, max(1, lc)
        else:
            P, T = nP, nT
        cur.append(i)
    if cur:
        out.append(cur)
    return out


@dataclass
class Batch:
    ids: torch.Tensor  # [B, L] int64
    attention: torch.Tensor  # [B, L] 1 for prompt and completion tokens, 0 for pads
    positions: torch.Tensor  # [B, L]
    targets: torch.Tensor  # [B, T] completion ids (0 in padding)
    mask: torch.Tensor  # [B, T] float 1 for real completion tokens
    T: int


def build_batch(pairs: list[dict], device: torch.device) -> Batch:
    P = max(len(p['promptIds']) for p in pairs)
    T = max(1, max(len(p['completionIds']) for p in pairs))
    L = P + T - 1
    B = len(pairs)
    ids = torch.zeros((B, L), dtype=torch.long)
    attention = torch.zeros((B, L), dtype=torch.long)
    positions = torch.zeros((B, L), dtype=torch.long)
    targets = torch.zeros((B, T), dtype=torch.long)
    mask = torch.zeros((B, T), dtype=torch.float32)
    for b, p in enumerate(pairs):
        prompt, completion = p['promptIds'], p['completionIds']
        pad = P - len(prompt)
        seq = (list(prompt) + list(completion))[: L - pad]
        if seq:
            ids[b, pad:pad + len(seq)] = torch.tensor(seq, dtype=torch.long)
            attention[b, pad:pad + len(seq)] = 1
        positions[b] = (torch.arange(L) - pad).clamp(min=0)
        if completion:
            targets[b, :len(completion)] = torch.tensor(completion, dtype=torch.long)
            mask[b, :len(completion)] = 1
    return Batch(ids.to(device), attention.to(device), positions.to(device), targets.to(device), mask.to(device), T)


def completion_logprobs(model, batch: Batch, with_entropy: bool):
    """Differentiable [B, T] log-probs of the completion tokens, and their entropy [B, T] (not differentiated)."""
    out = model(input_ids=batch.ids, attention_mask=batch.attention, position_ids=batch.positions, use_cache=False,
                logits_to_keep=batch.T)
    logits = out.logits[:, -batch.T:, :].float()
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy
