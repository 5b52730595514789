"""python -m agl_torch serve|doctor: the engine process the daemon starts, and a report of what this Python has."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def doctor() -> int:
    """What the daemon's `agl doctor` and `agl engine status` show for the torch engine: versions, devices, backends.

    Versions come from the installed packages' metadata; only torch is imported (for its devices and backends).
    Importing transformers, trl and peft would take seconds of a core on every status, and the engine imports them
    itself when a run needs them (a broken one then fails that run naming the module).
    """
    from importlib import metadata

    out: dict[str, Any] = {'python': sys.version.split()[0], 'executable': sys.executable}
    missing: list[str] = []
    for mod in ('torch', 'transformers', 'safetensors', 'tokenizers', 'trl', 'peft'):
        try:
            out[mod] = metadata.version(mod)
        except metadata.PackageNotFoundError:
            out[mod] = None
            missing.append(mod)
    if out.get('torch'):
        import torch
        import torch.distributed as dist

        out['torch'] = torch.__version__
        out['cuda'] = torch.version.cuda
        out['cudaAvailable'] = torch.cuda.is_available()
        out['gpus'] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
        out['threads'] = torch.get_num_threads()
        out['backends'] = [b for b in ('gloo', 'nccl') if getattr(dist, f'is_{b}_available')()]
    out['missing'] = missing
    print(json.dumps(out))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='python -m agl_torch')
    sub = ap.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('serve', help='load a model folder and answer the daemon on --connect')
    s.add_argument('--connect', default=None, help="the daemon's Unix socket (global rank 0; other nodes' ranks follow it)")
    s.add_argument('--model', required=True, help='a model folder (ours or Hugging Face layout)')
    s.add_argument('--device', default='cpu', help='cpu, cuda or auto')
    s.add_argument('--dtype', default='float32', help='float32, bfloat16 or float16')
    s.add_argument('--attn', default='sdpa', help="transformers' attn_implementation: sdpa or eager")
    s.add_argument(
        '--optimizer',
        required=True,
        help="JSON: the policy's configured AdamW settings, all of them (the daemon's defaults under the folder's saved ones under those asked for)",
    )
    s.add_argument('--name', default=None)
    s.add_argument('--seed', type=int, default=1)
    s.add_argument('--threads', type=int, default=0, help='torch threads per rank (0: torch decides; torchrun sets 1)')
    s.add_argument(
        '--trainable', default='full', help='full (the weights, float32 masters below float32), adapters (LoRA only: a frozen base) or none (serving)'
    )
    s.add_argument('--gradient-checkpointing', action='store_true', help="recompute each decoder layer's activations in the backward pass")
    s.add_argument(
        '--shard', default='none', help='none (every rank holds the whole model: DDP) or fsdp (FSDP2: each rank holds 1/N of weights, gradients and moments)'
    )
    s.add_argument(
        '--decoder',
        default='auto',
        help="auto (the engine's lean decoder where it knows the family, CUDA graphs on a GPU), lean (no graphs) or eager (transformers' forward)",
    )
    sub.add_parser('doctor', help='print versions, devices and distributed backends as JSON')
    args = ap.parse_args(argv)
    if args.cmd == 'doctor':
        return doctor()
    try:
        from .server import serve
    except ImportError as e:
        print(
            f'[agl-torch] this Python ({sys.executable}) lacks a package the torch engine needs: {e}. '
            'Install them with `agl engine install torch`, or `pip install -r engines/torch/requirements.txt` in this Python.',
            file=sys.stderr,
            flush=True,
        )
        return 3
    return serve(args)


if __name__ == '__main__':
    sys.exit(main())
