"""The training losses, built from their description (protocol/engine.ts `TrainLoss`), the same definition the
TF.js engine implements (daemon/model/loss.ts):

  nll   token-mean negative log-likelihood over the whole batch (SFT)
  grpo  per completion token t of sequence i with advantage A_i:
          old_t = the sampler's log-prob (ratioBase 'sampler'), or this update's own, before the weights change
                  (ratioBase 'update': the update's numerics, so the ratio starts at exactly 1)
          r_t   = exp(logp_t - old_t)                          importanceSampling 'token'
                = exp(mean over i's tokens of (logp - old))    importanceSampling 'sequence' (GSPO)
          pg_t  = max(-A r_t, -A clip(r_t, 1 - lo, 1 + hi))       (lo, hi): epsilon(High), or sequenceEpsilon(High)
          w_t   = min(exp(old_t - sampler_t), tisCap)          ratioBase 'update' with tisCap: truncated importance
                                                               sampling for the sampler's other numerics (TRL's
                                                               vLLM correction, token_truncate), not differentiated
          kl_t  = exp(ref_t - logp_t) - (ref_t - logp_t) - 1   (k3, only when beta > 0)
          loss  = aggregate(w_t pg_t + beta kl_t):
            token-mean      sum over every token of the batch / tokens of the batch       (TRL 'dapo', 'bnpo')
            seq-mean        mean per sequence, then mean over sequences                   (TRL 'grpo')
            token-sum-norm  sum over every token / (lossNormTokens x sequences)          (Dr.GRPO)

A loss function gets one micro-batch and returns that micro-batch's share of the batch loss, so gradients summed
over micro-batches (and ranks) are the batch loss's gradients. Its statistics stay on the device until `stats()`
reads them once per step (no host synchronisation per micro-batch).
"""

from __future__ import annotations

import torch

from .messages import GrpoLoss, NllLoss, Pair

# A loss's running sums by name (STAT_KEYS), as numbers.
Stats = dict[str, float]

STAT_KEYS = ('tokens', 'clipped', 'klSum', 'entropySum', 'ratioSum', 'sequences', 'lossSum', 'gapSum', 'gapMax', 'tisCapped')


def _pad_rows(rows: list[list[float]], width: int, device: torch.device) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, r in enumerate(rows):
        r = r[:width]
        if r:
            out[i, : len(r)] = torch.tensor(r, dtype=torch.float32)
    return out.to(device)


class LossFn:
    """Call with (logp [B,T], mask [B,T], entropy [B,T], indices) -> this micro-batch's share of the batch loss."""

    def __init__(self, spec: NllLoss | GrpoLoss, pairs: list[Pair], device: torch.device):
        self.spec = spec
        self.device = device
        self._sums = torch.zeros(len(STAT_KEYS), dtype=torch.float64, device=device)
        self.gap_max = torch.zeros((), dtype=torch.float32, device=device)
        if isinstance(spec, NllLoss):
            self.total_tokens = sum(len(p.completion_ids) for p in pairs)
        else:
            self.total_tokens = sum(len(s.old_logprobs) for s in spec.samples)
            self.total_seqs = len(spec.samples)

    def _add(self, **values: torch.Tensor) -> None:
        upd = torch.stack([values[k].double() if k in values else torch.zeros((), dtype=torch.float64, device=self.device) for k in STAT_KEYS])
        self._sums += upd

    def stats(self) -> Stats:
        """The running sums as numbers (one device-to-host copy)."""
        out = dict(zip(STAT_KEYS, self._sums.tolist()))
        out['gapMax'] = float(self.gap_max)
        return out

    def raw(self) -> torch.Tensor:
        """The sums as one tensor (for an all-reduce over ranks); gapMax apart (a max, not a sum)."""
        return self._sums

    def __call__(self, logp: torch.Tensor, mask: torch.Tensor, entropy: torch.Tensor | None, indices: list[int]) -> torch.Tensor:
        if isinstance(self.spec, NllLoss):
            loss = -(logp * mask).sum() / max(1, self.total_tokens)
            self._add(tokens=mask.sum(), sequences=torch.tensor(float(len(indices)), device=self.device), lossSum=loss.detach())
            return loss
        return self._grpo(self.spec, logp, mask, entropy, indices)

    def _grpo(self, s: GrpoLoss, logp: torch.Tensor, mask: torch.Tensor, entropy: torch.Tensor | None, indices: list[int]) -> torch.Tensor:
        B, T = logp.shape
        mb = [s.samples[i] for i in indices]
        sampler = _pad_rows([x.old_logprobs for x in mb], T, logp.device)
        adv = torch.tensor([[float(x.advantage)] for x in mb], dtype=torch.float32, device=logp.device)
        old = logp.detach() if s.ratio_base == 'update' else sampler
        d = logp - old
        if s.importance_sampling == 'sequence':
            per_seq = (d * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True).clamp(min=1)
            d = per_seq * torch.ones_like(d)
        ratio = torch.exp(d)
        lo, hi = s.clip_range()
        clipped_ratio = torch.clamp(ratio, 1 - lo, 1 + hi)
        pg1 = -adv * ratio
        pg2 = -adv * clipped_ratio
        per_token = torch.maximum(pg1, pg2)
        m = mask > 0
        gap = (logp.detach() - sampler).abs() * mask
        extra: dict[str, torch.Tensor] = {}
        if s.ratio_base == 'update' and s.tis_cap is not None:
            w_raw = torch.exp(logp.detach() - sampler)
            w = torch.clamp(w_raw, max=s.tis_cap)
            per_token = per_token * w
            extra['tisCapped'] = ((w_raw > s.tis_cap) & m).sum()
        kl = None
        if s.beta > 0:
            ref = _pad_rows([x.ref_logprobs or [] for x in mb], T, logp.device)  # present: check_loss
            dr = ref - logp
            kl = torch.exp(dr) - dr - 1
            per_token = per_token + s.beta * kl
        masked = per_token * mask
        if s.loss_aggregation == 'token-mean':
            loss = masked.sum() / max(1, self.total_tokens)
        elif s.loss_aggregation == 'token-sum-norm':
            loss = masked.sum() / (max(1, self.total_seqs) * float(s.loss_norm_tokens or 1))  # present: check_loss
        else:
            loss = (masked.sum(1) / mask.sum(1).clamp(min=1)).sum() / max(1, self.total_seqs)
        with torch.no_grad():
            zero = torch.zeros((), device=logp.device)
            self._add(
                tokens=m.sum(),
                clipped=((pg2 > pg1) & m).sum(),
                ratioSum=ratio[m].sum(),
                entropySum=entropy[m].sum() if entropy is not None else zero,
                klSum=kl[m].sum() if kl is not None else zero,
                sequences=torch.tensor(float(B), device=logp.device),
                lossSum=loss.detach(),
                gapSum=gap.sum(),
                **extra,
            )
            self.gap_max = torch.maximum(self.gap_max, gap.max() if gap.numel() else zero)
        return loss
