"""What the tests share: an engine on a folder with its configured optimizer settings, and a batch of (prompt,
completion) pairs."""

from __future__ import annotations

import torch

from agl_torch.messages import OptimizerSettings

VOCAB = 96
# The engine's configured settings in these tests, as the daemon sends its own (protocol/engine.ts DEFAULT_OPTIMIZER):
# no learning rate, which each update carries.
SETTINGS = OptimizerSettings(beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.01, grad_clip=1.0, micro_batch_size=16)


def engine(folder: str, **kw):
    from agl_torch.engine import Engine

    torch.manual_seed(0)
    return Engine(folder, device=torch.device('cpu'), attn='eager', **{'optimizer': SETTINGS, **kw})


def pairs(n: int = 4, seed: int = 0) -> list:
    from agl_torch.messages import Pair

    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        p = torch.randint(3, VOCAB, (3 + i % 3,), generator=g).tolist()
        c = torch.randint(3, VOCAB, (2 + (i * 2) % 5,), generator=g).tolist()
        out.append(Pair(p, c))
    return out
