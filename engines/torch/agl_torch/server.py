"""The engine process the daemon starts: it connects back to the daemon's Unix socket and answers requests, one
JSON object per line (protocol/engine.ts describes every message):

  engine -> daemon   {"event": "ready", "data": {engine, versions, device, ranks, model}}      once, after loading
                     {"event": "fatal", "data": {"message": ...}}                               loading failed
  daemon -> engine   {"id": 7, "method": "generate" | "score" | "train_step" | "save" | "add_adapter" | "shutdown", "params": {...}}
  engine -> daemon   {"id": 7, "event": "tokens", "data": [[sequence, token, logprob], ...]}   streaming, per decoding step
                     {"id": 7, "result": ..., "memory": {"bytes", "kind"}}   or  {"id": 7, "error": {"message", "type", "fatal"?}}

No request kills the engine: every field is checked before anything touches the device (messages.py), every error
is answered, a CUDA out-of-memory is answered with the sizes involved and what to change (the cache is freed and
the engine keeps serving), a NaN or infinite loss or gradient refuses the update with weights and moments unchanged,
and a result holding a NaN is answered as an error. `fatal` is set only when the engine cannot go on: a collective
that failed on some ranks, a CUDA error that poisoned the context, an optimizer step that ran out of memory half-way.

Requests run one at a time, in order. Under torchrun only rank 0 talks to the daemon; it hands each request that
every rank must run (train_step, save, shutdown; sharded with FSDP, generate and score too) to the
others with a broadcast, after checking it,
so a bad request is an error answer and never a rank stuck in a collective. When the daemon goes away (its socket
closes), every rank exits.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from .engine import Engine
from .generate import Event
from .memory import gib
from .messages import AddAdapterParams, Fatal, GenerateParams, OptimizerSettings, Params, RequestError, SaveParams, ScoreParams, TrainStepParams, parse
from .optim import NonFiniteStep


class NonFiniteResult(ValueError):
    """A result (or a streamed token) holds NaN or infinity, which JSON cannot carry."""


def log(text: str) -> None:
    print(f'[agl-torch] {text}', file=sys.stderr, flush=True)


def check_devices(arg: str, local_rank: int, local_world: int) -> None:
    """Every rank runs this before any collective, so rank 0 can say what is wrong for all of them."""
    if arg not in ('auto', 'cpu', 'cuda'):
        raise RuntimeError(f'--device must be auto, cpu or cuda, got {arg}')
    if arg == 'cpu' or (arg == 'auto' and not torch.cuda.is_available()):
        return
    if not torch.cuda.is_available():
        raise RuntimeError(
            f'--device cuda: no CUDA device is visible to torch {torch.__version__} '
            f'(built for CUDA {torch.version.cuda or "none: a CPU-only build"}); use --device cpu, or install a CUDA build of torch'
        )
    visible = torch.cuda.device_count()
    if local_world > visible:
        raise RuntimeError(
            f'{local_world} ranks on this machine need {local_world} GPUs (one each), but only {visible} '
            f'{"is" if visible == 1 else "are"} visible: use --procs {visible} or fewer (rank {local_rank} would have had none)'
        )


def pick_device(arg: str, local_rank: int) -> torch.device:
    if arg == 'auto':
        arg = 'cuda' if torch.cuda.is_available() else 'cpu'
    if arg == 'cuda':
        torch.cuda.set_device(local_rank)
        return torch.device('cuda', local_rank)
    return torch.device('cpu')


def versions() -> dict[str, Any]:
    import transformers

    return {
        'python': sys.version.split()[0],
        'torch': torch.__version__,
        'transformers': transformers.__version__,
        'cuda': torch.version.cuda,
        'cudaAvailable': torch.cuda.is_available(),
        'gpus': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else [],
    }


class Channel:
    def __init__(self, path: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.reader = self.sock.makefile('rb')

    def send(self, obj: dict[str, Any]) -> None:
        try:
            line = json.dumps(obj, separators=(',', ':'), allow_nan=False)
        except ValueError as e:
            raise NonFiniteResult(str(e)) from e
        self.sock.sendall((line + '\n').encode('utf-8'))

    def receive(self) -> dict[str, Any] | None:
        line = self.reader.readline()
        if not line:
            return None
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError(f'a message must be a JSON object, got {_kind(message)}')
        return message


def _kind(value: object) -> str:
    return type(value).__name__


def serve(args: argparse.Namespace) -> int:
    rank = int(os.environ.get('RANK', '0'))
    world = int(os.environ.get('WORLD_SIZE', '1'))
    local_rank = int(os.environ.get('LOCAL_RANK', '0'))
    local_world = int(os.environ.get('LOCAL_WORLD_SIZE', '1'))
    if args.threads:
        torch.set_num_threads(args.threads)
    if rank == 0 and not args.connect:
        log('global rank 0 talks to the daemon: it needs --connect (a node other than the first starts without it)')
        return 2
    channel = Channel(args.connect) if rank == 0 else None
    try:
        check_devices(args.device, local_rank, local_world)
        device = pick_device(args.device, local_rank)
        if world > 1:
            backend = 'nccl' if device.type == 'cuda' else 'gloo'
            # Ranks other than 0 wait for the next collective request while rank 0 samples: allow long waits.
            dist.init_process_group(backend, timeout=datetime.timedelta(days=7))
        torch.manual_seed(args.seed)
        optimizer = parse(OptimizerSettings, json.loads(args.optimizer), '--optimizer')
        engine = Engine(
            args.model,
            device=device,
            dtype=args.dtype,
            attn=args.attn,
            optimizer=optimizer,
            name=args.name,
            rank=rank,
            world=world,
            trainable=args.trainable,
            gradient_checkpointing=args.gradient_checkpointing,
            decoder=args.decoder,
            shard=args.shard,
        )
    except Exception as e:  # noqa: BLE001 - every load failure is reported to the daemon with its reason
        if channel:
            channel.send({'event': 'fatal', 'data': {'message': str(e), 'type': type(e).__name__}})
        log(f'rank {rank}: {type(e).__name__}: {e}')
        if rank != 0:
            time.sleep(10)  # rank 0 says the same to the daemon; torchrun stops every rank once one exits
        return 2
    if channel is not None:  # rank 0
        hello = {
            'engine': 'torch',
            'pid': os.getpid(),
            'device': str(device),
            'ranks': world,
            'backend': dist.get_backend() if world > 1 else None,
            'threads': torch.get_num_threads(),
            **versions(),
            'model': engine.describe(),
        }
        channel.send({'event': 'ready', 'data': hello})
        return leave(lead(engine, channel, world), world)
    return leave(follow(engine), world)


def leave(code: int, world: int) -> int:
    """Ranks that end together tear the process group down together: a rank whose peer exits first while gloo's threads
    still hold the connection can be aborted at interpreter exit (std::terminate, SIGABRT), which torchrun reports as a
    failed node. After a collective failure (code != 0) only the local group is destroyed: no barrier could complete."""
    if world > 1 and dist.is_initialized():
        try:
            if code == 0:
                dist.barrier()
            dist.destroy_process_group()
        except Exception as e:  # noqa: BLE001 - a peer already gone: the process exits anyway
            log(f'leaving the process group: {type(e).__name__}: {e}')
    return code


def run(engine: Engine, params: Params, on_step: Callable[[list[Event]], None] | None = None) -> Any:
    """A checked request's result, as JSON values."""
    if isinstance(params, GenerateParams):
        return engine.generate(params, on_step if params.stream else None)
    if isinstance(params, ScoreParams):
        return engine.score(params)
    if isinstance(params, TrainStepParams):
        return engine.train_step(params)
    if isinstance(params, SaveParams):
        engine.save(params)
        if engine.world > 1:
            dist.barrier()
        return {'dir': params.dir}
    if isinstance(params, AddAdapterParams):
        return engine.add_adapter(params)
    return None


def lead(engine: Engine, channel: Channel, world: int) -> int:
    while True:
        try:
            m = channel.receive()
        except (OSError, ValueError) as e:
            log(f'cannot read from the daemon ({e}); exiting')
            m = None
        if m is None:  # the daemon went away
            if world > 1:
                dist.broadcast_object_list([{'method': 'shutdown'}], src=0)
            return 0
        rid, method, raw = m.get('id'), m.get('method'), m.get('params')
        try:  # everything a request can get wrong is found here, before any other rank hears of it
            params = engine.check(method, raw)
        except RequestError as e:
            channel.send({'id': rid, 'error': {'message': str(e), 'type': 'RequestError'}})
            continue
        if method in engine.collective and world > 1:
            dist.broadcast_object_list([{'method': method, 'params': raw}], src=0)
        if method == 'shutdown':
            channel.send({'id': rid, 'result': None})
            return 0
        if not answer(engine, channel, rid, str(method), params):  # a method check found: a string
            return 3


def answer(engine: Engine, channel: Channel, rid: object, method: str, params: Params) -> bool:
    """Runs one request and sends its answer; False when the engine must stop (a fatal error was answered)."""

    def on_step(events: list[Event]) -> None:
        channel.send({'id': rid, 'event': 'tokens', 'data': events})

    engine.memory.reset()
    try:
        result = run(engine, params, on_step)
        memory = engine.memory.read()
        if method == 'train_step':
            result['peakMemory'] = memory
        channel.send({'id': rid, 'result': result, 'memory': memory})
        return True
    except (RequestError, NonFiniteStep) as e:
        what = f'{method} refused: {e}; weights and optimizer state are unchanged' if isinstance(e, NonFiniteStep) else str(e)
        error: dict[str, object] = {'message': what, 'type': type(e).__name__}
    except NonFiniteResult as e:
        error = {
            'message': f'the result of {method} holds a non-finite number (NaN or infinity: {e}): the weights or this input produce NaN',
            'type': 'NonFiniteResult',
        }
    except torch.cuda.OutOfMemoryError as e:
        error = {'message': out_of_memory(engine, method, params, e), 'type': 'OutOfMemoryError', 'fatal': engine.world > 1}
    except Exception as e:  # noqa: BLE001 - every failure is answered; only these are fatal
        log(f'{method} failed: {type(e).__name__}: {e}\n{traceback.format_exc()}')
        poisoned = 'CUDA error' in str(e) or type(e).__name__ == 'AcceleratorError'
        fatal = isinstance(e, Fatal) or poisoned or (method in ('train_step', 'save') and engine.world > 1)
        error = {'message': f'{type(e).__name__}: {e}', 'type': type(e).__name__, **({'fatal': True} if fatal else {})}
    channel.send({'id': rid, 'error': error})
    return not error.get('fatal')


def out_of_memory(engine: Engine, method: str, params: Params, e: Exception) -> str:
    """What ran out, how big it was, and what to change; frees what the failed request held."""
    held = engine.memory.now()
    for t in [engine.policy, *engine.adapters.by_name.values()]:
        if t is not None:
            t.zero_grad()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    where = f'{gib(held["allocated"])} allocated of {gib(held["total"])} ({gib(held["free"])} free)' if 'total' in held else ''
    if isinstance(params, GenerateParams):
        longest = max((len(p) for p in params.prompts), default=0)
        size = f'{len(params.prompts)} prompts, the longest {longest} tokens + up to {params.max_tokens} new'
        fix = 'fewer rollouts at once (runtime.workers), a smaller model.maxTokens, or a smaller model'
    elif not isinstance(params, (ScoreParams, TrainStepParams)):  # save, add_adapter: the model's own size
        size, fix = 'the model and its state', 'a smaller model, or fewer parameters per GPU (engine.lora, or engine.shard: fsdp)'
    else:
        pairs = params.pairs
        longest = max(len(p.prompt_ids) + len(p.completion_ids) for p in pairs)
        own = params.optimizer if isinstance(params, TrainStepParams) else None
        micro = (own or engine.config).micro_batch_size
        size = f'{len(pairs)} sequences, the longest {longest} tokens, in micro-batches of up to {micro}'
        fix = (
            f'a smaller micro-batch (optimizer microBatchSize, now {micro}), engine.gradientCheckpointing: true, '
            'engine.lora (train adapters on a frozen base), or a shorter model.maxTokens'
        )
    return f'CUDA out of memory in {method}: {size}; the GPU: {where}. Try {fix}. The engine freed its cache and keeps serving. ({e})'.replace(
        '; the GPU: .', '.'
    )


def follow(engine: Engine) -> int:
    while True:
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0)
        m: dict[str, Any] = box[0] or {}
        if m.get('method') == 'shutdown':
            return 0
        try:
            run(engine, engine.check(m['method'], m.get('params')))
        except (RequestError, NonFiniteStep):
            continue  # rank 0 took the same decision on the same (all-reduced) numbers and answered it
