"""Agent Lightning helper for Python agents, standard library only.

The runner (`agl runner`, `agl rollout agent.py:solve`) starts `python3 agl_runner.py --serve` once per
worker and sends it rollouts as JSON lines on stdin. For each one it imports `module:function` (or
`path/to/file.py:function`), calls `function(task, llm)` (async functions too), and reports what happened:
spans (the rollout's root span, rewards, messages, exceptions) go to the daemon's OTLP/HTTP endpoint
(POST /v1/traces, OTLP/JSON); the outcome goes back to the runner as one JSON line on stdout.

Agents need nothing from this module: point any OpenAI client at `llm.base_url` and return a number (the
final reward). To emit more, `import agl_runner` and call `agl_runner.emit_reward(0.5)` or
`agl_runner.emit_reward({"exact": 1.0, "format": 0.5})`, `emit_message("...")`, `emit_object({...})`.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import secrets
import sys
import time
import traceback
import urllib.request
from typing import Any, Awaitable, Callable, Mapping, TypeVar, overload

__all__ = ['LLM', 'current_rollout', 'emit_exception', 'emit_message', 'emit_object', 'emit_reward', 'rollout']

_current: contextvars.ContextVar[_Rollout | None] = contextvars.ContextVar('agl_rollout', default=None)
# An agent function (the runner calls it as module:function(task, llm)).
Agent = TypeVar('Agent', bound=Callable[..., Any])


class LLM:
    """The LLM resource: an OpenAI-compatible base URL tied to this attempt, the model and sampling params."""

    def __init__(self, base_url: str | None, model: str | None, sampling_params: dict[str, Any] | None = None, api_key: str = 'agl'):
        self.base_url = base_url
        self.model = model
        self.sampling_params = sampling_params or {}
        self.api_key = api_key

    def __repr__(self) -> str:
        return f'LLM(base_url={self.base_url!r}, model={self.model!r})'


class _Rollout:
    def __init__(self, rollout_id: str, attempt_id: str, daemon_url: str, token: str):
        self.rollout_id = rollout_id
        self.attempt_id = attempt_id
        self.trace_id = hashlib.sha256(f'agl-trace:{attempt_id}'.encode()).hexdigest()[:32]
        self.root_span_id = hashlib.sha256(f'agl-root:{attempt_id}'.encode()).hexdigest()[:16]
        self.daemon_url = daemon_url.rstrip('/')
        self.token = token
        self.spans: list[dict[str, Any]] = []

    def add_span(
        self,
        name: str,
        attributes: dict[str, Any],
        start: int | None = None,
        end: int | None = None,
        span_id: str | None = None,
        parent: bool = True,
        error: str | None = None,
    ) -> None:
        now = time.time_ns()
        attrs = {'agl.rollout_id': self.rollout_id, 'agl.attempt_id': self.attempt_id}
        attrs.update(attributes)
        self.spans.append(
            {
                'traceId': self.trace_id,
                'spanId': span_id or secrets.token_hex(8),
                'parentSpanId': self.root_span_id if parent else '',
                'name': name,
                'kind': 1,
                'startTimeUnixNano': str(start or now),
                'endTimeUnixNano': str(end or now),
                'attributes': [{'key': k, 'value': _any_value(v)} for k, v in attrs.items()],
                'status': {'code': 2, 'message': error} if error else {'code': 1},
            }
        )

    def flush(self) -> None:
        """Posts the spans collected so far to the daemon (one OTLP/JSON request)."""
        if not self.spans:
            return
        spans, self.spans = self.spans, []
        body = {
            'resourceSpans': [
                {
                    'resource': {
                        'attributes': [
                            {'key': 'service.name', 'value': {'stringValue': 'agl-python-agent'}},
                            {'key': 'agl.rollout_id', 'value': {'stringValue': self.rollout_id}},
                            {'key': 'agl.attempt_id', 'value': {'stringValue': self.attempt_id}},
                        ]
                    },
                    'scopeSpans': [{'scope': {'name': 'agl_runner'}, 'spans': spans}],
                }
            ]
        }
        req = urllib.request.Request(
            f'{self.daemon_url}/v1/traces',
            data=json.dumps(body).encode(),
            method='POST',
            headers={'content-type': 'application/json', 'authorization': f'Bearer {self.token}'},
        )
        with urllib.request.urlopen(req, timeout=60) as res:
            answer = json.loads(res.read() or b'{}')
        rejected = (answer.get('partialSuccess') or {}).get('rejectedSpans')
        if rejected:
            raise RuntimeError(f'the daemon rejected {rejected} spans: {answer["partialSuccess"].get("errorMessage")}')


def _any_value(v: object) -> dict[str, Any]:
    if isinstance(v, bool):
        return {'boolValue': v}
    if isinstance(v, int):
        return {'intValue': str(v)}
    if isinstance(v, float):
        return {'doubleValue': v}
    if isinstance(v, str):
        return {'stringValue': v}
    if isinstance(v, (list, tuple)) and all(isinstance(x, (str, int, float, bool)) for x in v):
        return {'arrayValue': {'values': [_any_value(x) for x in v]}}
    return {'stringValue': json.dumps(v, default=str)}


@overload
def rollout(fn: Agent, *, name: str | None = None) -> Agent: ...
@overload
def rollout(fn: None = None, *, name: str | None = None) -> Callable[[Agent], Agent]: ...
def rollout(fn: Agent | None = None, *, name: str | None = None) -> Agent | Callable[[Agent], Agent]:
    """Marks an agent function: `@rollout` or `@rollout(name="...")`. The function is returned unchanged
    (the runner calls it as module:function(task, llm)); the marker is what the editor's CodeLens and
    `agl train` look for."""

    def mark(f: Agent) -> Agent:
        f.__dict__['__agl_rollout__'] = {'name': name or f.__name__}
        return f

    return mark(fn) if callable(fn) else mark


def current_rollout() -> _Rollout | None:
    """The rollout being run (rollout_id, attempt_id), or None outside the runner."""
    return _current.get()


def emit_reward(reward: float | Mapping[str, float], primary_key: str | None = None) -> None:
    """Records a reward: a number, or a dict of named numbers whose first (or primary_key) entry is primary."""
    ctx = _current.get()
    if ctx is None:
        return
    given: list[tuple[str, object]] = list(reward.items()) if isinstance(reward, Mapping) else [('reward', reward)]
    if not given:
        raise ValueError('emit_reward: give a number or a non-empty dict of numbers')
    items: list[tuple[str, float]] = []
    for k, v in given:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v or v in (float('inf'), float('-inf')):
            raise ValueError(f'emit_reward: reward {k!r} is {v!r}, not a finite number')
        items.append((k, float(v)))
    if primary_key is not None:
        keys = [k for k, _ in items]
        if primary_key not in keys:
            raise ValueError(f'emit_reward: primary_key {primary_key!r} is not among {keys}')
        items.insert(0, items.pop(keys.index(primary_key)))
    attrs = {'agl.reward.value': float(items[0][1]), 'agl.reward.name': items[0][0]}
    if len(items) > 1:
        attrs['agl.reward.components'] = json.dumps({k: float(v) for k, v in items})
    for i, (k, v) in enumerate(items):
        attrs[f'agentlightning.reward.{i}.name'] = k
        attrs[f'agentlightning.reward.{i}.value'] = float(v)
    ctx.add_span('agentlightning.reward', attrs)


def emit_message(message: object) -> None:
    ctx = _current.get()
    if ctx is not None:
        ctx.add_span('agentlightning.message', {'agl.message': str(message)})


def emit_object(obj: object, kind: str | None = None) -> None:
    """Records an object; kind "final" (or "<name>.final") marks the episode's answer, "expected" what it is scored against."""
    ctx = _current.get()
    if ctx is not None:
        attrs = {'agl.object.json': json.dumps(obj, default=str)}
        if kind is not None:
            attrs['agl.object.kind'] = str(kind)
        ctx.add_span('agentlightning.object', attrs)


def emit_exception(exc: BaseException) -> None:
    ctx = _current.get()
    if ctx is not None:
        ctx.add_span(
            'agentlightning.exception',
            {
                'exception.type': type(exc).__name__,
                'exception.message': str(exc),
                'exception.stacktrace': ''.join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            },
            error=str(exc),
        )


_functions: dict[str, Callable[..., Any]] = {}


def load_function(target: str) -> Callable[..., Any]:
    """`package.module:function` or `path/to/file.py:function` -> the function (modules imported once)."""
    if target in _functions:
        return _functions[target]
    module_part, sep, fn_name = target.rpartition(':')
    if not sep or not module_part or not fn_name:
        raise ValueError(f'agent {target!r} is not module:function')
    if module_part.endswith('.py'):
        name = 'agl_agent_' + hashlib.sha1(module_part.encode()).hexdigest()[:10]
        spec = importlib.util.spec_from_file_location(name, module_part)
        if spec is None or spec.loader is None:
            raise ImportError(f'cannot load {module_part}')
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, os.path.dirname(os.path.abspath(module_part)))
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_part)
    fn: object = getattr(module, fn_name, None)
    if not callable(fn):
        names = [n for n in dir(module) if not n.startswith('_') and callable(getattr(module, n))]
        raise AttributeError(f'{module_part} has no function {fn_name!r} (functions: {", ".join(names) or "none"})')
    _functions[target] = fn
    return fn


def run_job(job: dict[str, Any], daemon_url: str, token: str) -> dict[str, Any]:
    """Runs one attempt; returns the outcome the runner expects."""
    ctx = _Rollout(job['rolloutId'], job['attemptId'], daemon_url, token)
    llm_init = job.get('llm') or {}
    llm = LLM(llm_init.get('baseUrl'), llm_init.get('model'), llm_init.get('samplingParams'), llm_init.get('apiKey', 'agl'))
    token_var = _current.set(ctx)
    start = time.time_ns()
    outcome: dict[str, Any] = {'status': 'succeeded', 'reward': None}
    try:
        fn = load_function(job['agent'])
        nparams = len(inspect.signature(fn).parameters)
        args = (job.get('task'), llm, {'rollout_id': ctx.rollout_id, 'attempt_id': ctx.attempt_id, 'mode': job.get('mode', 'train')})[: max(1, min(nparams, 3))]
        value = fn(*args)
        if inspect.isawaitable(value):
            value = asyncio.run(_await(value))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            emit_reward(float(value))
            ctx.spans[-1]['attributes'].append({'key': 'agl.reward.final', 'value': {'boolValue': True}})
            outcome['reward'] = float(value)
        elif value is not None:
            outcome['result'] = json.loads(json.dumps(value, default=str))
    except BaseException as exc:  # an agent's failure of any kind ends its attempt
        if isinstance(exc, KeyboardInterrupt):
            raise
        emit_exception(exc)
        outcome = {'status': 'failed', 'reward': None, 'error': {'message': f'{type(exc).__name__}: {exc}', 'stack': traceback.format_exc()}}
    finally:
        _current.reset(token_var)
    root_attrs = {'agl.task': json.dumps(job.get('task'), default=str), 'agl.agent.name': job['agent'].rpartition(':')[2]}
    if outcome.get('result') is not None:
        root_attrs['agl.rollout.result'] = json.dumps(outcome['result'])  # the episode's answer (protocol/span-reading.ts)
    ctx.add_span('agentlightning.rollout', root_attrs, start=start, span_id=ctx.root_span_id, parent=False, error=(outcome.get('error') or {}).get('message'))
    try:
        ctx.flush()
    except Exception as exc:  # noqa: BLE001
        outcome = {'status': 'failed', 'reward': outcome.get('reward'), 'error': {'message': f"could not store the attempt's spans: {exc}"}}
    return outcome


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def serve() -> None:
    """Worker loop: one JSON job per stdin line, one JSON outcome per stdout line."""
    protocol = sys.stdout
    sys.stdout = sys.stderr  # the agent's print() must not corrupt the protocol stream
    daemon_url = os.environ.get('AGL_DAEMON_URL', 'http://127.0.0.1:4747')
    token = os.environ.get('AGL_TOKEN', '')
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if msg.get('type') != 'run':
            continue
        job = msg['job']
        outcome = run_job(job, daemon_url, token)
        protocol.write(json.dumps({'type': 'done', 'attemptId': job['attemptId'], 'outcome': outcome}) + '\n')
        protocol.flush()


if __name__ == '__main__':
    # Agents `import agl_runner`: make that this very module, so emit_reward sees the current rollout.
    sys.modules.setdefault('agl_runner', sys.modules[__name__])
    if '--serve' in sys.argv:
        serve()
    else:
        sys.stderr.write('usage: agl_runner.py --serve   (started by `agl runner` / `agl rollout`)\n')
        sys.exit(2)
