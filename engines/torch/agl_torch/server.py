"""The engine process the daemon starts: it connects back to the daemon's Unix socket and answers requests, one
JSON object per line (protocol/engine.ts describes every message):

  engine -> daemon   {"event": "ready", "data": {engine, versions, device, ranks, model}}      once, after loading
                     {"event": "fatal", "data": {"message": ...}}                               loading failed
  daemon -> engine   {"id": 7, "method": "generate" | "score" | "train_step" | "save" | "set_optimizer" | "add_adapter" | "shutdown", "params": {...}}
                     (generate, score, train_step and save take "adapter": a LoRA adapter's name, or none for the model itself)
  engine -> daemon   {"id": 7, "event": "tokens", "data": [[sequence, token, logprob], ...]}   streaming, per decoding step
                     {"id": 7, "result": ...}  or  {"id": 7, "error": {"message": ..., "type": ...}}

Requests run one at a time, in order. Under torchrun only rank 0 talks to the daemon; it hands each request
that every rank must run (train_step, save, set_optimizer, shutdown) to the others with a broadcast, after
checking it, so a bad request is an error answer and never a rank stuck in a collective. When the daemon goes
away (its socket closes), every rank exits.
"""
from __future__ import annotations

import datetime
import json
import os
import socket
import sys
import traceback

import torch
import torch.distributed as dist

from .engine import Engine

COLLECTIVE = {'train_step', 'save', 'set_optimizer', 'shutdown'}  # add_adapter: one rank only (refused under torchrun)


def log(msg: str) -> None:
    print(f'[agl-torch] {msg}', file=sys.stderr, flush=True)


def pick_device(arg: str, local_rank: int) -> torch.device:
    if arg == 'auto':
        arg = 'cuda' if torch.cuda.is_available() else 'cpu'
    if arg == 'cuda':
        if not torch.cuda.is_available():
            raise RuntimeError(f'--device cuda: no CUDA device is visible to torch {torch.__version__} '
                               f'(built for CUDA {torch.version.cuda or "none: a CPU-only build"}); use --device cpu, or install a CUDA build of torch')
        if local_rank >= torch.cuda.device_count():
            raise RuntimeError(f'rank {local_rank} needs GPU {local_rank}, but only {torch.cuda.device_count()} are visible: use --procs {torch.cuda.device_count()} or fewer')
        torch.cuda.set_device(local_rank)
        return torch.device('cuda', local_rank)
    if arg != 'cpu':
        raise RuntimeError(f'--device must be auto, cpu or cuda, got {arg}')
    return torch.device('cpu')


def versions() -> dict:
    import transformers
    return {'python': sys.version.split()[0], 'torch': torch.__version__, 'transformers': transformers.__version__,
            'cuda': torch.version.cuda, 'cudaAvailable': torch.cuda.is_available(),
            'gpus': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []}


class Channel:
    def __init__(self, path: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.reader = self.sock.makefile('rb')

    def send(self, obj: dict) -> None:
        self.sock.sendall((json.dumps(obj, separators=(',', ':'), allow_nan=False) + '\n').encode('utf-8'))

    def receive(self) -> dict | None:
        line = self.reader.readline()
        if not line:
            return None
        return json.loads(line)


def serve(args) -> int:
    rank = int(os.environ.get('RANK', '0'))
    world = int(os.environ.get('WORLD_SIZE', '1'))
    local_rank = int(os.environ.get('LOCAL_RANK', '0'))
    if args.threads:
        torch.set_num_threads(args.threads)
    channel = Channel(args.connect) if rank == 0 else None
    try:
        device = pick_device(args.device, local_rank)
        if world > 1:
            backend = 'nccl' if device.type == 'cuda' else 'gloo'
            # Ranks other than 0 wait for the next collective request while rank 0 samples: allow long waits.
            dist.init_process_group(backend, timeout=datetime.timedelta(days=7))
        torch.manual_seed(args.seed)
        optimizer = json.loads(args.optimizer) if args.optimizer else None
        engine = Engine(args.model, device=device, dtype=args.dtype, attn=args.attn, optimizer=optimizer, name=args.name, rank=rank, world=world)
    except Exception as e:  # noqa: BLE001 - every load failure is reported to the daemon with its reason
        if channel:
            channel.send({'event': 'fatal', 'data': {'message': str(e), 'type': type(e).__name__}})
        log(f'rank {rank}: {type(e).__name__}: {e}')
        return 2
    if rank == 0:
        hello = {'engine': 'torch', 'pid': os.getpid(), 'device': str(device), 'ranks': world,
                 'backend': dist.get_backend() if world > 1 else None, 'threads': torch.get_num_threads(), **versions(), 'model': engine.describe()}
        channel.send({'event': 'ready', 'data': hello})
        return lead(engine, channel, world)
    return follow(engine)


def run_collective(engine: Engine, method: str, params: dict):
    if method == 'train_step':
        return engine.train_step(params)
    if method == 'save':
        engine.save(params['dir'], params.get('adapter'))
        if engine.world > 1:
            dist.barrier()
        return {'dir': params['dir']}
    if method == 'set_optimizer':
        return engine.set_optimizer(params)
    return None


def lead(engine: Engine, channel: Channel, world: int) -> int:
    while True:
        try:
            msg = channel.receive()
        except (OSError, ValueError) as e:
            log(f'cannot read from the daemon ({e}); exiting')
            msg = None
        if msg is None:  # the daemon went away
            if world > 1:
                dist.broadcast_object_list([{'method': 'shutdown'}], src=0)
            return 0
        rid, method, params = msg.get('id'), msg.get('method'), msg.get('params') or {}
        if method in COLLECTIVE:
            try:  # everything a request can get wrong is found here, before any other rank hears of it
                if method == 'train_step':
                    engine.validate_train(params)
                elif method == 'save' and not isinstance(params.get('dir'), str):
                    raise ValueError('save needs {"dir": "<folder>"}')
                elif method == 'save':
                    engine.adapters.check_name(params.get('adapter'))
                    if engine.adapters and params.get('adapter') is None:
                        raise ValueError('the base model is frozen under LoRA adapters: save an adapter (name it)')
                elif method == 'set_optimizer':
                    engine.set_optimizer({**engine.config, **params})
            except (ValueError, KeyError, TypeError) as e:
                channel.send({'id': rid, 'error': {'message': str(e), 'type': type(e).__name__}})
                continue
            if world > 1:
                dist.broadcast_object_list([{'method': method, 'params': params}], src=0)
            if method == 'shutdown':
                channel.send({'id': rid, 'result': None})
                return 0
            try:
                result = run_collective(engine, method, params)
            except Exception as e:  # the ranks may be out of step now: answer, then stop (torchrun stops the others)
                log(f'{method} failed: {type(e).__name__}: {e}\n{traceback.format_exc()}')
                channel.send({'id': rid, 'error': {'message': f'{type(e).__name__}: {e}', 'type': type(e).__name__, 'fatal': True}})
                raise
            channel.send({'id': rid, 'result': result})
            continue
        try:
            if method == 'generate':
                def on_step(events, rid=rid):
                    channel.send({'id': rid, 'event': 'tokens', 'data': events})
                result = engine.generate(params, on_step if params.get('stream') else None)
            elif method == 'score':
                result = engine.score(params['pairs'], params.get('adapter'))
            elif method == 'add_adapter':
                result = engine.add_adapter(params)
            elif method == 'describe':
                result = engine.describe()
            else:
                raise ValueError(f'unknown method {method!r}')
        except (ValueError, KeyError, TypeError) as e:
            channel.send({'id': rid, 'error': {'message': str(e), 'type': type(e).__name__}})
            continue
        channel.send({'id': rid, 'result': result})


def follow(engine: Engine) -> int:
    while True:
        box = [None]
        dist.broadcast_object_list(box, src=0)
        msg = box[0] or {}
        if msg.get('method') == 'shutdown':
            return 0
        run_collective(engine, msg['method'], msg.get('params') or {})
