"""The policy engine: one transformers model, its trainable state, and the contract's operations
(daemon/model/policy-contract.ts): generate, score, train_step, save. Requests arrive parsed and checked
(messages.py, `Engine.check`) before anything touches the device.

Data-parallel: under torchrun every rank holds the same model (DDP broadcasts rank 0's weights at the start);
train_step gives each rank every world-th micro-batch, DDP all-reduces the gradients once at the end of the
rank's micro-batches (no_sync before), and every rank applies the same clipped AdamW update. DDP averages
gradients over ranks; each micro-batch's loss is the batch loss's share, so the loss is scaled by the world size
to keep the gradient the batch loss's (the same as one rank summing every micro-batch). Generation and scoring
run on rank 0 alone.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from . import folder as fold
from . import messages as msg
from .adapters import Adapters, frozen_base
from .batch import PolicyForward, build_batch, completion_logprobs, decoder_layers, enable_layer_checkpointing, fitting_chunks
from .decode import LeanDecoder, supports
from .generate import Event, Generation, generate
from .graphs import DecodeGraphs
from .loss import STAT_KEYS, LossFn, Stats
from .memory import PeakMemory
from .optim import NonFiniteStep, Trainable
from .sampling import Sampling

if TYPE_CHECKING:
    from torch.distributed.fsdp import FSDPModule
    from torch.nn.parallel import DistributedDataParallel

DTYPES = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}
TRAINABLE = ('full', 'adapters', 'none')
DECODERS = ('auto', 'lean', 'eager')  # auto: on a GPU the lean step as CUDA graphs where the family is known; eager on CPU


SHARDS = ('none', 'fsdp')


def _check_choice(flag: str, value: str, choices: Collection[str]) -> None:
    if value not in choices:
        raise ValueError(f'{flag} must be one of {", ".join(choices)}, got {value}')


class Engine:
    def __init__(
        self,
        model_dir: str,
        *,
        device: torch.device,
        optimizer: msg.OptimizerSettings,
        dtype: str = 'float32',
        attn: str = 'sdpa',
        name: str | None = None,
        rank: int = 0,
        world: int = 1,
        trainable: str = 'full',
        gradient_checkpointing: bool = False,
        decoder: str = 'auto',
        shard: str = 'none',
    ):
        _check_choice('--dtype', dtype, DTYPES)
        _check_choice('--trainable', trainable, TRAINABLE)
        _check_choice('--decoder', decoder, DECODERS)
        _check_choice('--shard', shard, SHARDS)
        self.device, self.dtype_name, self.rank, self.world = device, dtype, rank, world
        self.fsdp = shard == 'fsdp' and world > 1
        if self.fsdp and trainable != 'full':
            raise ValueError('--shard fsdp trains full weights: LoRA adapters run on one rank (engine.procs 1)')
        self.source = model_dir
        self.name = name or os.path.basename(os.path.abspath(model_dir))
        self.gradient_checkpointing = gradient_checkpointing
        self.memory = PeakMemory(device)
        float32 = self._load(model_dir, attn, trainable)
        params = fold.parameter_names(self.model)
        saved = fold.read_optimizer(model_dir, self.family, {n: p.shape for n, p in params})
        # The configured settings: the daemon's, all of them (it read what the folder saved: protocol/engine.ts).
        self.config = optimizer
        self.adapters = Adapters(self.model, os.path.abspath(model_dir))
        self.forward = PolicyForward(self.model)
        self._sampler(decoder)
        self.ddp: DistributedDataParallel | None = None
        if self.fsdp:
            self._shard()
            params = fold.parameter_names(self.model)  # now DTensors, each rank holding its shard
        elif world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP

            self.ddp = DDP(self.forward, device_ids=[device.index] if device.type == 'cuda' else None)
        self.policy: Trainable | None = None
        if trainable == 'full':
            # AdamW: decoupled weight decay on matrices only (not norms, biases), as the TF.js engine.
            self.policy = Trainable(params, self.config, saved.step if saved else 0, float32)
            if saved:
                self.policy.restore_moments(saved.moments)
        else:
            for _, p in params:
                p.requires_grad_(False)

    def _load(self, model_dir: str, attn: str, trainable: str) -> dict[str, torch.Tensor] | None:
        """The model on its device; returns the float32 values of lower-precision weights (the masters) or None.
        Sharded, the model stays float32 (FSDP keeps float32 shards and computes in the lower precision)."""
        compute = torch.float32 if self.fsdp else DTYPES[self.dtype_name]
        self.hf, model, float32 = fold.load_model(model_dir, compute, attn, keep_float32=trainable == 'full')
        self.family = fold.family_of(self.hf)
        self.context_length = fold.context_length_of(self.hf)
        self.model = model if self.fsdp else fold.moved(model, self.device)  # fully_shard moves each rank's shard
        embeddings = self.model.get_input_embeddings().weight
        if not isinstance(embeddings, torch.Tensor):
            raise fold.FolderError(f'{model_dir}: the model has no input embedding matrix')
        self.vocab = int(embeddings.shape[0])
        self.base_parameters = sum(q.numel() for _, q in fold.parameter_names(self.model))
        self.decode = fold.decoder_for(model_dir, self.hf)
        if self.gradient_checkpointing:
            enable_layer_checkpointing(self.model)
        return float32

    def _sampler(self, decoder: str) -> None:
        """On a GPU, the lean decoder (the engine's own cache) captured as CUDA graphs where it knows the family;
        transformers' forward otherwise, when sharded (each layer's weights are gathered by FSDP as it runs), and on CPU,
        where the lean step measured no faster (bench:model, engines/torch/README.md)."""
        wanted = decoder == 'lean' or (decoder == 'auto' and self.device.type == 'cuda')
        lean = wanted and not self.fsdp and supports(self.model)
        if decoder == 'lean' and not lean:
            raise ValueError(
                f"--decoder lean: {self.hf.get('model_type')} models{' sharded with FSDP' if self.fsdp else ''} decode with transformers' forward (--decoder eager)"
            )
        self.lean = LeanDecoder(self.model) if lean else None
        self.graphs = DecodeGraphs(lambda: self.adapters.active) if lean and self.device.type == 'cuda' and decoder != 'lean' else None
        self.decoder = 'graphs' if self.graphs else 'lean' if lean else 'eager'

    def _shard(self) -> None:
        """FSDP2: each decoder layer, then the rest (embeddings, final norm, head) under the forward module, sharded over
        the ranks; float32 shards, computed in the run's dtype, gradients reduced in float32."""
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        self._same_weights_everywhere()
        mesh = init_device_mesh(self.device.type, (self.world,))
        dtype = DTYPES[self.dtype_name]
        mp = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32) if dtype != torch.float32 else MixedPrecisionPolicy()
        for layer in decoder_layers(self.model):
            fully_shard(layer, mesh=mesh, mp_policy=mp)
        fully_shard(self.forward, mesh=mesh, mp_policy=mp)
        with torch.no_grad():  # FSDP sets itself up on the first forward through the root: make that this one
            completion_logprobs(self.forward, build_batch([msg.Pair([0], [0])], self.device), False)
        self._fsdp_root().reshard()  # the root stays gathered after a forward: the module's parameters are the shards again

    def _fsdp_root(self) -> FSDPModule:
        """The forward module, sharded: fully_shard made it an FSDPModule."""
        from torch.distributed.fsdp import FSDPModule

        if not isinstance(self.forward, FSDPModule):
            raise RuntimeError('the engine is not sharded (--shard fsdp with several ranks)')
        return self.forward

    def _same_weights_everywhere(self) -> None:
        """Every rank shards what it loaded itself: a node whose folder differs would train a mixture. Checked once."""
        total = torch.stack([p.detach().double().sum() for p in self.model.parameters()]).sum().reshape(1).to(self.device)
        seen = [torch.zeros_like(total) for _ in range(self.world)]
        dist.all_gather(seen, total)
        if any(abs(float(s) - float(total)) > 1e-9 * max(1.0, abs(float(total))) for s in seen):
            raise RuntimeError(f'the ranks loaded different weights from {self.source}: every node needs the same model folder at the same path')

    @property
    def collective(self) -> set[str]:
        """Requests every rank runs: the updates and saves; sharded, also sampling and scoring (every rank holds a part)."""
        base = {'train_step', 'save', 'shutdown'}
        return base | {'generate', 'score'} if self.fsdp else base

    # -- information ---------------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """The model as the hello names it (protocol/engine.ts EngineHello.model)."""
        p = self.policy
        return {
            'name': self.name,
            'family': self.family,
            'modelType': self.hf.get('model_type'),
            'parameters': self.base_parameters,
            'contextLength': self.context_length,
            'vocabSize': int(self.hf.get('vocab_size', 0)),
            'dtype': self.dtype_name,
            'optimizer': msg.wire(self.config),
            'step': p.step if p else 0,
            'trainable': 'full' if p else ('adapters' if self.adapters else 'none'),
            'masterWeights': bool(p and p.masters is not None),
            'gradientCheckpointing': self.gradient_checkpointing,
            'decoder': self.decoder,
            'shard': 'fsdp' if self.fsdp else 'none',
            'adapters': {n: {'step': a.step, 'parameters': sum(q.numel() for _, q in a.params)} for n, a in self.adapters.by_name.items()},
        }

    # -- checking a request (rank 0, before any work and before any other rank hears of it) -------------------
    def check(self, method: object, raw: object) -> msg.Params:
        """The request's parameters parsed and checked against the model: a RequestError names what is wrong."""
        cls = msg.PARAMS.get(method) if isinstance(method, str) else None
        if cls is None:
            raise msg.RequestError(f'unknown method {method!r} (known: {", ".join(msg.PARAMS)})')
        p = msg.parse(cls, raw if raw is not None else {}, 'params')
        if isinstance(p, msg.GenerateParams):
            self._check_generate(p)
        elif isinstance(p, msg.ScoreParams):
            msg.check_pairs(p.pairs, self.vocab, self.context_length)
            self.adapters.check_name(p.adapter)
        elif isinstance(p, msg.TrainStepParams):
            msg.check_pairs(p.pairs, self.vocab, self.context_length)
            msg.check_loss(p.loss, p.pairs)
            self._trainable(p.adapter)
        elif isinstance(p, msg.SaveParams):
            self.adapters.check_name(p.adapter)
            if p.adapter is None and self.policy is None:
                raise msg.RequestError(frozen_base('save', self.adapters))
        elif isinstance(p, msg.AddAdapterParams):
            msg.check_adapter_name(p.name, 'params.name')
            if self.world > 1:
                raise msg.RequestError('LoRA adapters run on one rank for now (engine.procs 1): several ranks train full weights')
        return p

    def _check_generate(self, p: msg.GenerateParams) -> None:
        if not p.prompts:
            return
        for i, prompt in enumerate(p.prompts):
            if not prompt:
                raise msg.RequestError(f'params.prompts[{i}]: empty (give at least one token)')
            msg.check_ids(prompt, self.vocab, f'params.prompts[{i}]')
        longest = max(len(x) for x in p.prompts)
        if longest >= self.context_length:
            raise msg.RequestError(f'params.prompts: a prompt of {longest} tokens leaves no room in the context of {self.context_length}')
        msg.check_ids(p.eos, self.vocab, 'params.eos')
        if p.stop and any(p.stop) and self.decode is None:
            raise msg.RequestError('params.stop: stop strings need a tokenizer to decode with (this model folder has no tokenizer.json)')
        self.adapters.check_name(p.adapter)

    def _trainable(self, adapter: str | None) -> Trainable:
        if adapter is not None:
            return self.adapters.get(adapter)
        if self.policy is None:
            raise msg.RequestError(frozen_base('train', self.adapters))
        return self.policy

    # -- adapters ----------------------------------------------------------------------------------------------
    def add_adapter(self, p: msg.AddAdapterParams) -> dict[str, Any]:
        """A LoRA adapter on the (then frozen) base: a policy of its own, served and trained by naming it."""
        if self.policy is not None:
            # The base is frozen from now on: its float32 masters and moments are memory nothing uses any more.
            for _, q in self.policy.params:
                q.requires_grad_(False)
            self.policy = None
        if self.graphs is not None:
            self.graphs.graphs.clear()  # captured before peft wrapped the layers
        return self.adapters.add(p)

    # -- sampling and scoring (rank 0) ---------------------------------------------------------------------
    def generate(self, p: msg.GenerateParams, on_step: Callable[[list[Event]], None] | None = None) -> list[Generation]:
        with self.adapters.using(p.adapter), self._root_gathered():
            return generate(
                self.model,
                p.prompts,
                max_tokens=p.max_tokens,
                context_length=self.context_length,
                eos=p.eos,
                device=self.device,
                sampling=Sampling(p.temperature, p.top_k or 0, p.top_p if p.top_p is not None else 1.0),
                stop=p.stop,
                seed=p.seed,
                decode=self.decode,
                on_step=on_step,
                lean=self.lean,
                graphs=self.graphs,
            )

    @torch.inference_mode()
    @contextlib.contextmanager
    def _root_gathered(self) -> Iterator[None]:
        """Sharded: the weights outside the decoder layers (embeddings, final norm, head) gathered while transformers'
        forward runs (each layer gathers its own as it runs)."""
        if not self.fsdp:
            yield
            return
        root = self._fsdp_root()
        root.unshard()
        try:
            yield
        finally:
            root.reshard()

    def score(self, p: msg.ScoreParams) -> list[list[float]]:
        pairs = p.pairs
        out: list[list[float]] = [[] for _ in pairs]
        with self.adapters.using(p.adapter):
            for chunk in fitting_chunks(pairs, self.config.micro_batch_size, self.context_length, by_length=True):
                b = build_batch([pairs[i] for i in chunk], self.device)
                logp, _ = completion_logprobs(self.forward, b, False)
                rows = logp.tolist()
                for j, i in enumerate(chunk):
                    out[i] = rows[j][: len(pairs[i].completion_ids)]
        return out

    # -- training (every rank) -----------------------------------------------------------------------------
    def train_step(self, p: msg.TrainStepParams) -> dict[str, Any]:
        policy = self._trainable(p.adapter)
        # The learning rate's hop 3 (of 3), here: the settings the update carries (its scheduled rate) hold for it only;
        # an update without settings uses the trainable's configured ones, which no update changes and which hold no rate.
        settings = p.optimizer or policy.config
        if settings.lr is None:
            raise msg.RequestError('optimizer.lr: the update carries no learning rate, and the configured settings hold none: send it with the update')
        with self.adapters.using(p.adapter):
            started = time.perf_counter()
            while True:
                try:
                    loss_fn = self._accumulate(p, policy, settings.micro_batch_size)
                    stats = self._reduce(loss_fn)  # every rank sees the same sums, so every rank takes the same decision
                    if not all(math.isfinite(v) for v in stats.values()):
                        policy.zero_grad()
                        raise NonFiniteStep(f'the loss is {stats["lossSum"]}')
                    norm = self._apply(policy, settings)
                    break
                except NonFiniteStep:
                    if policy.overflowed():  # float16: a smaller loss scale, and the same step again
                        continue
                    raise
        tokens = sum(len(x.prompt_ids) + len(x.completion_ids) for x in p.pairs)
        return {'loss': stats['lossSum'], 'gradNorm': float(norm), 'tokens': tokens, 'seconds': time.perf_counter() - started, 'stats': stats}

    def _accumulate(self, p: msg.TrainStepParams, policy: Trainable, micro_batch_size: int) -> LossFn:
        """Forward and backward over this rank's micro-batches; gradients summed in the parameters' .grad."""
        pairs = p.pairs
        loss_fn = LossFn(p.loss, pairs, self.device)
        chunks = fitting_chunks(pairs, micro_batch_size, self.context_length, by_length=True)
        mine: list[list[int] | None] = [*chunks[self.rank :: self.world]]
        if self.world > 1:
            # Every rank runs the same number of micro-batches (FSDP gathers weights in each forward; DDP reduces in the
            # last backward): a rank short of work runs a zero-weight one.
            mine += [None] * (-(-len(chunks) // self.world) - len(mine))
        net = self.ddp or self.forward
        scale = float(self.world) * policy.loss_scale  # DDP and FSDP average over ranks; float16's loss scale
        policy.zero_grad()
        for k, chunk in enumerate(mine):
            with self._sync(last=k == len(mine) - 1):
                if chunk is None:
                    b = build_batch([msg.Pair([0], [0])], self.device)
                    logp, _ = completion_logprobs(net, b, False)
                    (logp.sum() * 0.0).backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
                    continue
                b = build_batch([pairs[i] for i in chunk], self.device)
                logp, entropy = completion_logprobs(net, b, True)
                (loss_fn(logp, b.mask, entropy, chunk) * scale).backward()  # type: ignore[no-untyped-call]  # (see above)
        return loss_fn

    def _sync(self, last: bool) -> contextlib.AbstractContextManager[Any]:
        """Gradients reduced over the ranks in the last micro-batch's backward only."""
        if self.fsdp:
            self._fsdp_root().set_requires_gradient_sync(last)
            return contextlib.nullcontext()
        return contextlib.nullcontext() if (self.ddp is None or last) else self.ddp.no_sync()

    def _apply(self, policy: Trainable, settings: msg.OptimizerSettings) -> torch.Tensor:
        try:
            return policy.apply(settings)
        except torch.cuda.OutOfMemoryError as e:
            raise msg.Fatal(
                f'the optimizer step ran out of memory half-way ({e}): weights and moments may disagree now; restart from the last '
                'checkpoint (agl train --resume) with engine.lora, fewer parameters per GPU (engine.procs with engine.shard: fsdp) or a smaller model'
            ) from e

    def _reduce(self, loss_fn: LossFn) -> Stats:
        if self.world == 1:
            return loss_fn.stats()
        sums, gap_max = loss_fn.raw().clone(), loss_fn.gap_max.clone()
        dist.all_reduce(sums)
        dist.all_reduce(gap_max, op=dist.ReduceOp.MAX)
        return {**dict(zip(STAT_KEYS, sums.tolist())), 'gapMax': float(gap_max)}

    def save(self, p: msg.SaveParams) -> None:
        if p.adapter is not None:  # adapters train on one rank
            if self.rank == 0:
                self.adapters.save(p.adapter, p.dir)
            return
        policy = self._trainable(None)
        if self.rank != 0 and not policy.sharded:
            return
        weights, moments = policy.weights(), policy.moments()  # sharded: gathered, every rank taking part
        if self.rank == 0:
            fold.save_folder(p.dir, self.hf, weights, self.source, (fold.AdamState(policy.step, moments), policy.config))
