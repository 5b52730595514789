"""Peak memory of one request: CUDA's allocator high-water mark on a GPU, the process's peak resident set on a CPU
(Linux resets it through /proc/self/clear_refs; elsewhere the peak since the process started)."""

from __future__ import annotations

import resource
import sys
from typing import TypedDict

import torch


class Peak(TypedDict):
    """A request's peak memory (protocol/engine.ts EnginePeakMemory)."""

    bytes: int
    kind: str


class PeakMemory:
    def __init__(self, device: torch.device):
        self.device = device
        self.kind = 'cuda' if device.type == 'cuda' else 'rss'

    def reset(self) -> None:
        if self.kind == 'cuda':
            torch.cuda.reset_peak_memory_stats(self.device)
            return
        try:
            with open('/proc/self/clear_refs', 'w') as f:
                f.write('5')  # resets the peak resident set size (VmHWM) to the current one
        except OSError:
            pass

    def read(self) -> Peak:
        if self.kind == 'cuda':
            return {'bytes': int(torch.cuda.max_memory_allocated(self.device)), 'kind': 'cuda'}
        return {'bytes': _peak_rss(), 'kind': 'rss'}

    def now(self) -> dict[str, int]:
        """What is held now (CUDA: allocated and the device's total, for out-of-memory answers)."""
        if self.kind == 'cuda':
            free, total = torch.cuda.mem_get_info(self.device)
            return {
                'allocated': int(torch.cuda.memory_allocated(self.device)),
                'reserved': int(torch.cuda.memory_reserved(self.device)),
                'total': int(total),
                'free': int(free),
            }
        return {'rss': _peak_rss()}


def _peak_rss() -> int:
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == 'darwin' else peak * 1024)


def gib(n: int) -> str:
    return f'{n / 2**30:.2f} GiB'
