"""CUDA graphs of the lean decoding step: the forward pass over the engine's cache and the sampling of the next token,
captured once per (batch bucket, attention length bucket, sampling mode, adapter) and replayed, so a step costs one
graph launch instead of hundreds of kernel launches from Python.

Why captured by hand rather than torch.compile(mode="reduce-overhead"): the step's inputs already live in static
buffers (tokens, positions, padding, seeds, the slot and the token counter, all advanced inside the graph), the cache
has fixed addresses, and nothing needs inductor or triton at run time; capture takes milliseconds, not a compile.
transformers' own generate could not be captured this way (its cache counts positions on the host and the graph's
outputs were overwritten), and capturing its forward gave < 2x (its mask and full-length attention stay).

Every graph reads and writes the same static buffers of its batch bucket; what a graph allocates comes from one
shared pool, and nothing from the pool outlives a replay (the step's outputs are copied into the static buffers).
If a capture fails, the step runs eagerly on the same buffers (same tokens), and the engine says so once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable

import torch

from .decode import LeanDecoder, bucket
from .sampling import Sampling, pick


class _Buffers:
    def __init__(self, rows: int, device: torch.device):
        def longs(*shape: int) -> torch.Tensor:
            return torch.zeros(shape, dtype=torch.int64, device=device)

        self.rows = rows
        self.tokens = longs(rows)
        self.positions = longs(rows)
        self.left = longs(rows)
        self.seeds = longs(rows)
        self.slot = longs(1)
        self.counter = longs()
        self.temperature = torch.ones((), dtype=torch.float32, device=device)
        self.out_tokens = longs(rows)
        self.out_logprobs = torch.zeros(rows, dtype=torch.float32, device=device)

    def advancing(self) -> tuple[torch.Tensor, ...]:
        return (self.tokens, self.positions, self.slot, self.counter)


class DecodeGraphs:
    """The captured steps of one engine (rank 0's model)."""

    def __init__(self, adapter_name: Callable[[], str | None]):
        self.adapter_name = adapter_name  # () -> the adapter forward passes use now (part of a graph's key)
        self.graphs: dict[tuple[Hashable, ...], torch.cuda.CUDAGraph] = {}
        self.buffers: dict[int, _Buffers] = {}
        self.pool: torch.cuda._POOL_HANDLE | None = None
        self.cache_id: int | None = None
        self.failed: str | None = None

    # -- a generation ----------------------------------------------------------------------------------------
    def begin(self, lean: LeanDecoder, state: dict[str, torch.Tensor], L: int, sampling: Sampling) -> None:
        """Loads the batch after prefill into the static buffers of its bucket (rows past the batch decode padding)."""
        if self.cache_id != id(lean.cache):  # a new cache (grown): the graphs read the old addresses
            self.graphs.clear()
            self.cache_id = id(lean.cache)
        self.lean, self.L, self.sampling = lean, L, sampling
        n = state['tokens'].shape[0]
        self.buf = self._buffers(bucket(n, 1), state['tokens'].device)
        for name in ('tokens', 'positions', 'left', 'seeds'):
            getattr(self.buf, name).zero_()
            getattr(self.buf, name)[:n] = state[name]
        self.buf.slot.fill_(L)
        self.buf.counter.fill_(1)
        self.buf.temperature.fill_(max(sampling.temperature, 1e-6))

    def _buffers(self, rows: int, device: torch.device) -> _Buffers:
        if rows not in self.buffers:
            self.buffers[rows] = _Buffers(rows, device)
        return self.buffers[rows]

    def compact(self, keep: list[int], n: int) -> bool:
        """Moves the rows still going into a smaller bucket once they fit one (half of it or less)."""
        smaller = bucket(len(keep), 1)
        if smaller >= self.buf.rows:
            return False
        idx = torch.tensor(keep, device=self.buf.tokens.device)
        self.lean.kv.keep(idx)
        old, self.buf = self.buf, self._buffers(smaller, self.buf.tokens.device)
        for name in ('tokens', 'positions', 'left', 'seeds'):
            getattr(self.buf, name)[: len(keep)] = getattr(old, name).index_select(0, idx)
        self.buf.slot.copy_(old.slot)
        self.buf.counter.copy_(old.counter)
        self.buf.temperature.copy_(old.temperature)
        return True

    def step(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Decoding step k (k >= 1): replays its graph (capturing it the first time). Returns the static outputs."""
        keys = bucket(self.L + k)
        s = self.sampling
        key = (self.buf.rows, keys, s.greedy, s.top_k, s.top_p, self.adapter_name())
        fn = self._step_fn(keys)
        g = self.graphs.get(key)
        if g is None and self.failed is None:
            g = self._capture(key, fn)
        if g is not None:
            g.replay()
        else:
            fn()
        return self.buf.out_tokens, self.buf.out_logprobs

    # -- capture ---------------------------------------------------------------------------------------------------
    def _step_fn(self, keys: int) -> Callable[[], None]:
        buf, lean, s = self.buf, self.lean, self.sampling

        def fn() -> None:
            logits = lean.forward(buf.tokens[:, None], buf.positions[:, None], buf.left, buf.slot, keys)
            tokens, logprobs = pick(logits, s, buf.seeds, buf.counter, buf.temperature)
            buf.out_tokens.copy_(tokens)
            buf.out_logprobs.copy_(logprobs)
            buf.tokens.copy_(tokens)
            buf.positions.add_(1)
            buf.slot.add_(1)
            buf.counter.add_(1)

        return fn

    def _capture(self, key: tuple[Hashable, ...], fn: Callable[[], None]) -> torch.cuda.CUDAGraph | None:
        saved = [t.clone() for t in self.buf.advancing()]

        def restore() -> None:
            for t, v in zip(self.buf.advancing(), saved):
                t.copy_(v)

        try:
            if self.pool is None:
                self.pool = torch.cuda.graph_pool_handle()
            side = torch.cuda.Stream()  # type: ignore[no-untyped-call]  # torch leaves Stream's constructor unannotated
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()  # warm-up: kernels chosen and workspaces allocated outside the capture
            torch.cuda.current_stream().wait_stream(side)
            restore()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=self.pool):
                fn()
            restore()
        except Exception as e:  # noqa: BLE001 - decoding goes on eagerly on the same buffers
            restore()
            self.failed = f'{type(e).__name__}: {e}'
            print(f'[agl-torch] CUDA graph capture failed ({self.failed}); decoding without graphs from now on', file=sys.stderr, flush=True)
            return None
        self.graphs[key] = g
        return g
