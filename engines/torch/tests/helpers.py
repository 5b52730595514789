"""What the tests share: an engine on a folder, and a batch of (prompt, completion) pairs."""

from __future__ import annotations

import torch

VOCAB = 96


def engine(folder: str, **kw):
    from agl_torch.engine import Engine

    torch.manual_seed(0)
    return Engine(folder, device=torch.device('cpu'), attn='eager', **kw)


def pairs(n: int = 4, seed: int = 0) -> list:
    from agl_torch.messages import Pair

    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        p = torch.randint(3, VOCAB, (3 + i % 3,), generator=g).tolist()
        c = torch.randint(3, VOCAB, (2 + (i * 2) % 5,), generator=g).tolist()
        out.append(Pair(p, c))
    return out
