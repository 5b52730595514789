"""The engine protocol's requests as typed records (protocol/engine.ts declares them for the daemon; a test holds
the two to the same fields), and the one place a request is checked before anything touches the device.

`parse(Cls, obj, where)` turns a JSON object into the dataclass `Cls`, checking every field's type and range and
refusing unknown keys; the wire's camelCase names map to the fields' snake_case names. The checks that need the
model (token ids inside the vocabulary, lengths inside the context, adapter names) live in `check_*` below, so that
every method validates the same way and every error names the field: `pairs[3].completionIds[5]: token id 152000
is outside the vocabulary [0, 151936)`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Record = TypeVar('Record', bound='DataclassInstance')


class RequestError(ValueError):
    """A request the engine refuses before doing anything: the message names the field and what is wrong."""


class Fatal(RuntimeError):
    """The engine cannot go on (its state may be inconsistent): answered with `fatal`, then the process exits."""


def camel(name: str) -> str:
    head, *rest = name.split('_')
    return head + ''.join(w[:1].upper() + w[1:] for w in rest)


def _min(v: float) -> dict[str, float]:
    return {'min': v}


# ---- the records ----------------------------------------------------------------------------------------------


@dataclass
class Pair:
    prompt_ids: list[int]
    completion_ids: list[int]


@dataclass
class GrpoSample:
    advantage: float
    old_logprobs: list[float]
    ref_logprobs: list[float] | None = None


@dataclass
class NllLoss:
    kind: Literal['nll']


@dataclass
class GrpoLoss:
    """GRPO's settings the loss reads, under their one declaration's names (protocol/grpo-settings.ts GrpoLossSettings),
    every one given by the daemon (no defaults here), and the samples."""

    kind: Literal['grpo']
    # The token ratio's clip range (1 - epsilon, 1 + epsilonHigh); a sequence ratio's (GSPO) is sequenceEpsilon(High).
    epsilon: float = field(metadata=_min(0))
    epsilon_high: float = field(metadata=_min(0))
    sequence_epsilon: float = field(metadata=_min(0))
    sequence_epsilon_high: float = field(metadata=_min(0))
    beta: float = field(metadata=_min(0))
    loss_aggregation: Literal['token-mean', 'seq-mean', 'token-sum-norm']
    loss_norm_tokens: int | None = field(metadata=_min(1))
    importance_sampling: Literal['token', 'sequence']
    # 'sampler': the ratio's old log-probs are samples[i].oldLogprobs (the sampler's); 'update': the update's own
    # forward pass before the weights change (the update's numerics), the sampler's entering only through tisCap.
    ratio_base: Literal['sampler', 'update']
    # With ratio_base 'update': each token's loss is weighted by min(exp(current - sampler), tisCap) (truncated
    # importance sampling for a sampler whose numerics or version differ); None: no weight.
    tis_cap: float | None = field(metadata=_min(1))
    samples: list[GrpoSample]

    def clip_range(self) -> tuple[float, float]:
        """The ratio's clip range: the token epsilons, or GSPO's much tighter sequence ones."""
        if self.importance_sampling == 'sequence':
            return self.sequence_epsilon, self.sequence_epsilon_high
        return self.epsilon, self.epsilon_high


@dataclass
class OptimizerSettings:
    """AdamW settings (protocol/engine.ts OptimizerSettingsSchema): a trainable's configured ones, given by the daemon at
    start (--optimizer) or add_adapter, without a learning rate, or one update's own, all of them, sent with its
    train_step for that update only."""

    beta1: float = field(metadata={'min': 0, 'lt': 1})
    beta2: float = field(metadata={'min': 0, 'lt': 1})
    eps: float = field(metadata={'gt': 0})
    # At most 1, as lr: a step no larger than the weights themselves (a rate of 2e47 was served and left every weight NaN).
    weight_decay: float = field(metadata={'min': 0, 'max': 1})
    grad_clip: float = field(metadata=_min(0))
    micro_batch_size: int = field(metadata=_min(1))
    # An update's own (0: an update that moves nothing, as a schedule's first step can be); None in configured settings:
    # each update carries its rate, and a train_step with none is refused (engine.py).
    lr: float | None = field(default=None, metadata={'min': 0, 'max': 1})


@dataclass
class LoraSettings:
    rank: int = field(default=8, metadata={'min': 1, 'max': 1024})
    alpha: float = field(default=16.0, metadata={'gt': 0})
    dropout: float = field(default=0.0, metadata={'min': 0, 'lt': 1})
    target_modules: list[str] | None = None


@dataclass
class GenerateParams:
    prompts: list[list[int]]
    max_tokens: int = field(metadata=_min(1))
    temperature: float = field(metadata=_min(0))
    seed: int
    eos: list[int]
    stream: bool
    top_p: float | None = field(default=None, metadata={'gt': 0, 'max': 1})
    top_k: int | None = field(default=None, metadata=_min(0))
    stop: list[str] | None = None
    adapter: str | None = None


@dataclass
class ScoreParams:
    pairs: list[Pair]
    adapter: str | None = None


@dataclass
class TrainStepParams:
    pairs: list[Pair] = field(metadata={'nonempty': True})
    loss: Union[NllLoss, GrpoLoss]
    optimizer: OptimizerSettings | None = None  # this update's settings, for it only; None: the configured ones
    adapter: str | None = None


@dataclass
class SaveParams:
    dir: str = field(metadata={'nonempty': True})
    adapter: str | None = None


@dataclass
class AddAdapterParams:
    name: str
    init: str | None
    lora: LoraSettings
    optimizer: OptimizerSettings  # the adapter's configured settings


@dataclass
class Empty:
    pass


Params = Union[GenerateParams, ScoreParams, TrainStepParams, SaveParams, AddAdapterParams, Empty]
PARAMS: dict[str, type[Params]] = {
    'generate': GenerateParams,
    'score': ScoreParams,
    'train_step': TrainStepParams,
    'save': SaveParams,
    'add_adapter': AddAdapterParams,
    'shutdown': Empty,
}

# ---- parsing --------------------------------------------------------------------------------------------------


def _describe(tp: object) -> str:
    if tp is int:
        return 'an integer'
    if tp is float:
        return 'a number'
    if tp is str:
        return 'a string'
    if tp is bool:
        return 'true or false'
    return 'an object' if dataclasses.is_dataclass(tp) else str(tp)


def _show(v: object) -> str:
    """A value as the request wrote it (JSON), cut short."""
    try:
        text = json.dumps(v)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 60 else text[:57] + '...'


def _check_range(v: float, meta: typing.Mapping[str, float], where: str) -> None:
    if 'min' in meta and v < meta['min']:
        raise RequestError(f'{where}: must be at least {meta["min"]}, got {_show(v)}')
    if 'gt' in meta and v <= meta['gt']:
        raise RequestError(f'{where}: must be greater than {meta["gt"]}, got {_show(v)}')
    if 'max' in meta and v > meta['max']:
        raise RequestError(f'{where}: must be at most {meta["max"]}, got {_show(v)}')
    if 'lt' in meta and v >= meta['lt']:
        raise RequestError(f'{where}: must be less than {meta["lt"]}, got {_show(v)}')


def _scalar(tp: object, v: object, where: str) -> object:
    if tp is bool:
        if not isinstance(v, bool):
            raise RequestError(f'{where}: must be true or false, got {_show(v)}')
        return v
    if tp is int:
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
                return int(v)
            raise RequestError(f'{where}: must be an integer, got {_show(v)}')
        return v
    if tp is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise RequestError(f'{where}: must be a number, got {_show(v)}')
        if not math.isfinite(v):
            raise RequestError(f'{where}: must be a finite number, got {_show(v)}')
        return float(v)
    if tp is str:
        if not isinstance(v, str):
            raise RequestError(f'{where}: must be a string, got {_show(v)}')
        return v
    raise TypeError(f'no parser for {tp}')


def _value(tp: Any, v: object, where: str, meta: typing.Mapping[str, float]) -> object:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if v is None:
            if len(options) < len(typing.get_args(tp)):
                return None
            raise RequestError(f'{where}: must not be null')
        if all(dataclasses.is_dataclass(o) for o in options) and len(options) > 1:
            return _tagged(options, v, where)
        return _value(options[0], v, where, meta)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if v not in allowed:
            raise RequestError(f'{where}: must be one of {", ".join(map(str, allowed))}, got {_show(v)}')
        return v
    if origin is list:
        if not isinstance(v, list):
            raise RequestError(f'{where}: must be a list, got {type(v).__name__}')
        if meta.get('nonempty') and not v:
            raise RequestError(f'{where}: must not be empty')
        (item,) = typing.get_args(tp)
        if item is int and all(type(x) is int for x in v):  # the common case, token ids: no call per element
            return v
        if item is float and all(type(x) is float and math.isfinite(x) for x in v):
            return v
        return [_value(item, x, f'{where}[{i}]', {}) for i, x in enumerate(v)]
    if origin is dict:
        if not isinstance(v, dict):
            raise RequestError(f'{where}: must be an object, got {type(v).__name__}')
        _, item = typing.get_args(tp)
        return {k: _value(item, x, f'{where}.{k}', {}) for k, x in v.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return parse(tp, v, where)
    out = _scalar(tp, v, where)
    if isinstance(out, (int, float)) and not isinstance(out, bool):
        _check_range(out, meta, where)
    if isinstance(out, str) and meta.get('nonempty') and not out:
        raise RequestError(f'{where}: must not be empty')
    return out


def _tagged(options: list[type[DataclassInstance]], v: object, where: str) -> object:
    """A discriminated union on `kind` (the loss)."""
    if not isinstance(v, dict):
        raise RequestError(f'{where}: must be an object, got {type(v).__name__}')
    kinds = {typing.get_args(typing.get_type_hints(o)['kind'])[0]: o for o in options}
    cls = kinds.get(v.get('kind'))
    if cls is None:
        raise RequestError(f'{where}.kind: must be one of {", ".join(kinds)}, got {_show(v.get("kind"))}')
    return parse(cls, v, where)


_HINTS: dict[type, dict[str, Any]] = {}


def parse(cls: type[Record], obj: object, where: str = 'params') -> Record:
    """`obj` (decoded JSON) as a `cls` record, or a RequestError naming the first field that is wrong."""
    if obj is None and cls is Empty:
        obj = {}
    if not isinstance(obj, dict):
        raise RequestError(f'{where}: must be an object, got {type(obj).__name__}')
    hints = _HINTS.get(cls) or _HINTS.setdefault(cls, typing.get_type_hints(cls))
    fields = {camel(f.name): f for f in dataclasses.fields(cls)}
    unknown = [k for k in obj if k not in fields]
    if unknown:
        raise RequestError(f'{where}: unknown field "{unknown[0]}" (known: {", ".join(fields)})')
    values = {}
    for key, f in fields.items():
        if key not in obj:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise RequestError(f'{where}.{key}: missing ({_describe(hints[f.name])} is required)')
            continue
        values[f.name] = _value(hints[f.name], obj[key], f'{where}.{key}', dict(f.metadata))
    return cls(**values)


def wire(record: DataclassInstance) -> dict[str, Any]:
    """A record as the wire names its fields (camelCase): what the engine answers and saves. A field that may be absent
    (its default None) and is None is left out: configured optimizer settings answer and save no learning rate."""
    values = ((f, getattr(record, f.name)) for f in dataclasses.fields(record))
    return {camel(f.name): v for f, v in values if not (v is None and f.default is None)}


def wire_fields(cls: type[DataclassInstance]) -> dict[str, dict[str, object]]:
    """{wire name: {'required': bool, 'type': a short type name}}: what the test compares with protocol/engine.ts."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out[camel(f.name)] = {'required': required, 'type': _type_name(hints[f.name])}
    return out


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        names = [_type_name(a) for a in args if a is not type(None)]
        return ('|'.join(sorted(names))) + ('|null' if type(None) in args else '')
    if origin is Literal:
        return 'enum'
    if origin is list:
        return f'array<{_type_name(typing.get_args(tp)[0])}>'
    if origin is dict:
        return 'record'
    if dataclasses.is_dataclass(tp):
        return 'object'
    return {int: 'integer', float: 'number', str: 'string', bool: 'boolean'}[tp]


# ---- checks that need the model -------------------------------------------------------------------------------

ADAPTER_NAME = re.compile(r'^[A-Za-z0-9_-]{1,64}$')


def check_ids(ids: list[int], vocab: int, where: str) -> None:
    if ids and min(ids) >= 0 and max(ids) < vocab:
        return
    for j, t in enumerate(ids):
        if not 0 <= t < vocab:
            raise RequestError(f'{where}[{j}]: token id {t} is outside the vocabulary [0, {vocab})')


def check_pairs(pairs: list[Pair], vocab: int, context: int, what: str = 'pairs') -> None:
    for i, p in enumerate(pairs):
        if not p.prompt_ids:
            raise RequestError(f'{what}[{i}].promptIds: empty (need at least one token to predict from)')
        n = len(p.prompt_ids) + len(p.completion_ids)
        if n > context:
            raise RequestError(f'{what}[{i}]: {len(p.prompt_ids)}+{len(p.completion_ids)} tokens exceed the context of {context}')
        check_ids(p.prompt_ids, vocab, f'{what}[{i}].promptIds')
        check_ids(p.completion_ids, vocab, f'{what}[{i}].completionIds')


def check_loss(loss: NllLoss | GrpoLoss, pairs: list[Pair]) -> None:
    if isinstance(loss, NllLoss):
        return
    if len(loss.samples) != len(pairs):
        raise RequestError(f'loss.samples: one per pair is needed ({len(pairs)}), got {len(loss.samples)}')
    if loss.loss_aggregation == 'token-sum-norm' and not loss.loss_norm_tokens:
        raise RequestError('loss.lossNormTokens: token-sum-norm needs it (the generation budget per call)')
    for i, (s, p) in enumerate(zip(loss.samples, pairs)):
        n = len(p.completion_ids)
        if len(s.old_logprobs) != n:
            raise RequestError(f'loss.samples[{i}].oldLogprobs: {len(s.old_logprobs)} values for {n} completion tokens')
        if loss.beta > 0:
            if s.ref_logprobs is None:
                raise RequestError(f'loss.samples[{i}].refLogprobs: needed when beta > 0 (the KL term)')
            if len(s.ref_logprobs) != n:
                raise RequestError(f'loss.samples[{i}].refLogprobs: {len(s.ref_logprobs)} values for {n} completion tokens')


def check_adapter_name(name: object, where: str = 'name') -> str:
    if not isinstance(name, str) or not ADAPTER_NAME.match(name):
        raise RequestError(f'{where}: an adapter name must be 1-64 letters, digits, _ or -, got {_show(name)}')
    return name


def wire_table() -> dict[str, dict[str, dict[str, object]]]:
    """{record name: its wire fields} for every record above (what test/engine/messages.test.ts compares with
    protocol/engine.ts)."""
    records = [
        Pair,
        GrpoSample,
        NllLoss,
        GrpoLoss,
        OptimizerSettings,
        LoraSettings,
        GenerateParams,
        ScoreParams,
        TrainStepParams,
        SaveParams,
        AddAdapterParams,
        Empty,
    ]
    return {cls.__name__: wire_fields(cls) for cls in records}
