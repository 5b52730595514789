"""Batches of (prompt, completion) pairs laid out as the TF.js engine lays them out (daemon/model/train-step.ts):
prompts left-padded to a common end P, completions right-padded to T, L = P + T - 1 slots; the hidden state at
slot P-1+t predicts completion token t. Positions start after each row's left padding (pads get position 0), so a
pair scores the same alone or in any batch.

The log-probs of the completion tokens come from the decoder's hidden states through the output head over the real
completion tokens only (no padding), in chunks of tokens whose float32 logits are recomputed in the backward pass
instead of kept: no [tokens x vocabulary] float32 tensor exists for a whole micro-batch (152k-token vocabularies make
that several GB). With `checkpoint_layers` each decoder layer's activations are recomputed in the backward pass too
(gradient checkpointing: memory of one layer instead of all, for about a third more compute).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.checkpoint import checkpoint

from .messages import Pair

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# Log-probs [B, T] of a batch's completion tokens, and their entropy (when asked for).
LogProbs = tuple[torch.Tensor, torch.Tensor | None]

# Float32 logits of one chunk of tokens stay under this many bytes (the chunk is at least 64 tokens).
CHUNK_BYTES = 256 * 2**20


def fitting_chunks(pairs: list[Pair], n: int, context_length: int, by_length: bool = False) -> list[list[int]]:
    """Micro-batches (as index lists) of at most n pairs that fit the context once padded: consecutive (as fittingChunks
    in TS), or `by_length`: pairs sorted by prompt then completion length first, so that a micro-batch holds pairs of
    about one length and little padding (a sum over micro-batches does not depend on how the pairs are grouped)."""
    out: list[list[int]] = []
    cur: list[int] = []
    P, T = 0, 1
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i].prompt_ids), len(pairs[i].completion_ids))) if by_length else list(range(len(pairs)))
    for i in order:
        p = pairs[i]
        lp, lc = len(p.prompt_ids), len(p.completion_ids)
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
    rows: torch.Tensor  # [n] the row and column of each real completion token (made on the host: no sync to find them)
    cols: torch.Tensor
    n: int


def build_batch(pairs: list[Pair], device: torch.device) -> Batch:
    P = max(len(p.prompt_ids) for p in pairs)
    T = max(1, max(len(p.completion_ids) for p in pairs))
    L = P + T - 1
    B = len(pairs)
    ids = torch.zeros((B, L), dtype=torch.long)
    attention = torch.zeros((B, L), dtype=torch.long)
    positions = torch.zeros((B, L), dtype=torch.long)
    targets = torch.zeros((B, T), dtype=torch.long)
    mask = torch.zeros((B, T), dtype=torch.float32)
    for b, p in enumerate(pairs):
        prompt, completion = p.prompt_ids, p.completion_ids
        pad = P - len(prompt)
        seq = (list(prompt) + list(completion))[: L - pad]
        if seq:
            ids[b, pad : pad + len(seq)] = torch.tensor(seq, dtype=torch.long)
            attention[b, pad : pad + len(seq)] = 1
        positions[b] = (torch.arange(L) - pad).clamp(min=0)
        if completion:
            targets[b, : len(completion)] = torch.tensor(completion, dtype=torch.long)
            mask[b, : len(completion)] = 1
    rows, cols = (mask > 0).nonzero(as_tuple=True)
    pin = device.type == 'cuda'
    ids, attention, positions, targets, mask, on_rows, on_cols = (
        t.pin_memory().to(device, non_blocking=True) if pin else t.to(device) for t in (ids, attention, positions, targets, mask, rows, cols)
    )
    return Batch(ids, attention, positions, targets, mask, T, on_rows, on_cols, int(rows.shape[0]))


def decoder_of(model: PreTrainedModel) -> torch.nn.Module:
    """The transformers decoder under the causal-LM head (Llama/Qwen2/Mistral: .model, GPT-2: .transformer)."""
    return model.base_model


def output_head(model: PreTrainedModel) -> torch.nn.Module:
    """The causal LM's output head (its lm_head)."""
    head = model.get_output_embeddings()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
    if not isinstance(head, torch.nn.Module):
        raise ValueError(f'{type(model).__name__} has no output head (lm_head)')
    return head


def decoder_layers(model: PreTrainedModel) -> torch.nn.ModuleList:
    dec = decoder_of(model)
    layers = getattr(dec, 'layers', None) or getattr(dec, 'h', None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ValueError(f'{type(dec).__name__}: no decoder layers found (.layers or .h) for gradient checkpointing')
    return layers


def enable_layer_checkpointing(model: PreTrainedModel) -> None:
    """Each decoder layer recomputes its activations in the backward pass (only while gradients are recorded). The
    layer's own forward is replaced on the instance (its __dict__: a module's attributes are its parameters and
    submodules), and marked so that it is replaced once."""
    for layer in decoder_layers(model):
        own = vars(layer)
        if own.get('_agl_checkpointed'):
            continue
        inner = layer.forward

        def forward(*args: Any, _inner: Callable[..., Any] = inner, **kwargs: Any) -> Any:
            if torch.is_grad_enabled():
                return checkpoint(_inner, *args, use_reentrant=False, **kwargs)
            return _inner(*args, **kwargs)

        own['forward'] = forward
        own['_agl_checkpointed'] = True


def _head_logprobs(head: torch.nn.Module, h: torch.Tensor, targets: torch.Tensor, with_entropy: bool) -> LogProbs:
    logits = head(h).float()
    logz = torch.logsumexp(logits, dim=-1)
    logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logz
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = logz - (torch.softmax(logits, dim=-1) * logits).sum(-1)
    return logp, entropy


class PolicyForward(torch.nn.Module):
    """log-probs [B, T] of each completion token (and their entropy, not differentiated) for a Batch. The module DDP
    wraps, so that its gradient hooks see every parameter the forward uses."""

    def __init__(self, model: PreTrainedModel):
        super().__init__()
        self.model = model

    def forward(
        self,
        ids: torch.Tensor,
        attention: torch.Tensor,
        positions: torch.Tensor,
        targets: torch.Tensor,
        mask: torch.Tensor,
        rows: torch.Tensor,
        cols: torch.Tensor,
        with_entropy: bool = False,
    ) -> LogProbs:
        hidden = decoder_of(self.model)(input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=False).last_hidden_state
        T = targets.shape[1]
        h = hidden[:, -T:, :][rows, cols]  # [n, D]: the hidden states that predict real completion tokens
        tgt = targets[rows, cols]
        head = output_head(self.model)
        weight = head.weight
        if not isinstance(weight, torch.Tensor):
            raise ValueError(f'{type(head).__name__}: the output head has no weight matrix')
        vocab = weight.shape[0]
        size = max(64, CHUNK_BYTES // (4 * vocab))
        parts: list[torch.Tensor] = []
        ents: list[torch.Tensor | None] = []
        for s in range(0, h.shape[0], size):
            hs, ts = h[s : s + size], tgt[s : s + size]
            if torch.is_grad_enabled():
                lp, ent = checkpoint(_head_logprobs, head, hs, ts, with_entropy, use_reentrant=False)
            else:
                lp, ent = _head_logprobs(head, hs, ts, with_entropy)
            parts.append(lp)
            ents.append(ent)
        if not parts:  # no completion token: a zero that still depends on every weight (DDP and FSDP expect that)
            zero = head(hidden[:, -1]).float().sum() * 0.0
            logp = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device) + zero
            return logp, (torch.zeros_like(logp) if with_entropy else None)
        flat = torch.cat(parts)
        logp = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).index_put((rows, cols), flat)
        entropy = None
        if with_entropy:
            flat_ent = torch.cat([e for e in ents if e is not None])
            entropy = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).index_put((rows, cols), flat_ent.detach())
        return logp, entropy


def completion_logprobs(net: torch.nn.Module, batch: Batch, with_entropy: bool) -> LogProbs:
    """Differentiable [B, T] log-probs of the completion tokens, and their entropy [B, T] (not differentiated). `net` is
    a PolicyForward (or the DDP around one)."""
    out: LogProbs = net(batch.ids, batch.attention, batch.positions, batch.targets, batch.mask, batch.rows, batch.cols, with_entropy)
    return out
