"""The training losses, built from their description (protocol/engine.ts `TrainLoss`), the same definition the
TF.js engine implements (daemon/model/loss.ts):

  nll   token-mean negative log-likelihood over the whole batch (SFT)
  grpo  per completion token t of sequence i with advantage A_i:
          r_t   = exp(logp_t - old_t)                          importanceSampling 'token'
                = exp(mean over i's tokens of (logp - old))    importanceSampling 'sequence' (GSPO)
          pg_t  = max(-A r_t, -A clip(r_t, 1 - clipLow, 1 + clipHigh))
          kl_t  = exp(ref_t - logp_t) - (ref_t - logp_t) - 1   (k3, only when beta > 0)
          loss  = aggregate(pg_t + beta kl_t):
            token-mean      sum over every token of the batch / tokens of the batch       (TRL 'dapo', 'bnpo')
            seq-mean        mean per sequence, then mean over sequences                   (TRL 'grpo')
            token-sum-norm  sum over every token / (normTokens x sequences)              (TRL 'dr_grpo')

A loss function gets one micro-batch and returns that micro-batch's share of the batch loss, so gradients summed
over micro-batches (and ranks) are the batch loss's gradients; it also fills running statistics.
"""
from __future__ import annotations

import torch


def _stats() -> dict:
    return {'tokens': 0.0, 'clipped': 0.0, 'klSum': 0.0, 'entropySum': 0.0, 'ratioSum': 0.0, 'sequences': 0.0, 'lossSum': 0.0}


def _pad_rows(rows: list[list[float]], width: int, device) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, r in enumerate(rows):
        r = r[:width]
        if r:
            out[i, :len(r)] = torch.tensor(r, dtype=torch.float32)
    return out.to(device)


def check_loss(spec: dict, pairs: list[dict]) -> None:
    kind = spec.get('kind')
    if kind == 'nll':
        return
    if kind != 'grpo':
        raise ValueError(f'loss.kind must be "nll" or "grpo", got {kind!r}')
    samples = spec.get('samples')
    if not isinstance(samples, list) or len(samples) != len(pairs):
        raise ValueError(f'loss.samples must have one entry per pair ({len(pairs)}), got {len(samples) if isinstance(samples, list) else samples!r}')
    if spec.get('aggregation') not in ('token-mean', 'seq-mean', 'token-sum-norm'):
        raise ValueError(f"loss.aggregation must be token-mean, seq-mean or token-sum-norm, got {spec.get('aggregation')!r}")
    if spec['aggregation'] == 'token-sum-norm' and not spec.get('normTokens'):
        raise ValueError('loss.aggregation token-sum-norm needs normTokens (the generation budget per call)')
    if spec.get('importanceSampling', 'token') not in ('token', 'sequence'):
        raise ValueError(f"loss.importanceSampling must be token or sequence, got {spec.get('importanceSampling')!r}")
    if float(spec.get('beta', 0)) > 0 and any(s.get('refLogprobs') is None for s in samples):
        raise ValueError('GRPO with beta > 0 needs reference log-probs for every sequence')


class LossFn:
    """Call with (logp [B,T], mask [B,T], entropy [B,T], indices) -> this micro-batch's share of the batch loss."""

    def __init__(self, spec: dict, pairs: list[dict]):
        check_loss(spec, pairs)
        self.spec = spec
        self.kind = spec['kind']
        self.stats = _stats()
        if self.kind == 'nll':
            self.total_tokens = sum(len(p['completionIds']) for p in pairs)
        else:
            self.samples = spec['samples']
            self.total_tokens = sum(len(s['oldLogprobs']) for s in self.samples)
            self.total_seqs = len(self.samples)

    def __call__(self, logp: torch.Tensor, mask: torch.Tensor, entropy: torch.Tensor | None, indices: list[int]) -> torch.Tensor:
        if self.kind == 'nll':
            loss = -(logp * mask).sum() / max(1, self.total_tokens)
            self.stats['tokens'] += float(mask.sum())
            self.stats['sequences'] += len(indices)
            self.stats['lossSum'] += float(loss.detach())
            return loss
        s = self.spec
        B, T = logp.shape
        mb = [self.samples[i] for i in indices]
        old = _pad_rows([x['oldLogprobs'] for x in mb], T, logp.device)
        adv = torch.tensor([[float(x['advantage'])] for x in mb], dtype=torch.float32, device=logp.device)
        d = logp - old
        if s.get('importanceSampling', 'token') == 'sequence':
            per_seq = (d * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True).clamp(min=1)
            d = per_seq * torch.ones_like(d)
        ratio = torch.exp(d)
        clipped_ratio = torch.clamp(ratio, 1 - float(s['clipLow']), 1 + float(s['clipHigh']))
        pg1 = -adv * ratio
        pg2 = -adv * clipped_ratio
        per_token = torch.maximum(pg1, pg2)
        kl = None
        beta = float(s.get('beta', 0))
        if beta > 0:
            ref = _pad_rows([x['refLogprobs'] for x in mb], T, logp.device)
            dr = ref - logp
            kl = torch.exp(dr) - dr - 1
            per_token = per_token + beta * kl
        masked = per_token * mask
        agg = s['aggregation']
        if agg == 'token-mean':
            loss = masked.sum() / max(1, self.total_tokens)
        elif agg == 'token-sum-norm':
            loss = masked.sum() / (max(1, self.total_seqs) * float(s['normTokens']))
        else:
            loss = (masked.sum(1) / mask.sum(1).clamp(min=1)).sum() / max(1, self.total_seqs)
        with torch.no_grad():
            m = mask > 0
            st = self.stats
            st['tokens'] += float(m.sum())
            st['clipped'] += float(((pg2 > pg1) & m).sum())
            st['ratioSum'] += float(ratio[m].sum())
            if entropy is not None:
                st['entropySum'] += float(entropy[m].sum())
            if kl is not None:
                st['klSum'] += float(kl[m].sum())
            st['sequences'] += B
            st['lossSum'] += float(loss.detach())
        return loss
