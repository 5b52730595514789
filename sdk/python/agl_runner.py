"""Agent Lightning helper for Python agents, standard library only.

The runner (`agl runner`, `agl rollout agent.py:solve`) starts `python3 agl_runner.py --serve` once per
worker and sends it rollouts as JSON lines on stdin. For each one it imports `module:function` (or
`path/to/file.py:function`), calls `function(task, llm)` (async functions too), and reports what happened:
spans (the rollout's root span, rewards, messages, exceptions) go to the daemon's OTLP/HTTP endpoint
(POST /v1/traces, OTLP/JSON); the outcome goes back to the runner as one JSON line on stdout.

Agents need nothing from this module: point any OpenAI client at `llm.base_url` and return a number (the
final reward), or {"reward": x, "feedback": "what was wrong"}. To emit more, `import agl_runner` and call
`agl_runner.emit_reward(0.5, feedback="...")` or `agl_runner.emit_reward({"exact": 1.0, "format": 0.5})`,
`emit_message("...")`, `emit_object({...})`. `llm.prompt(name, seed, vars)` reads a prompt an optimization can
improve (the candidate being scored, else the promoted text, else the seed), as the TypeScript SDK's does.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import re
import secrets
import sys
import time
import traceback
import urllib.request
from typing import Any, Awaitable, Callable, Mapping, TypeVar, overload

__all__ = ['LLM', 'current_rollout', 'emit_exception', 'emit_message', 'emit_object', 'emit_reward', 'render_prompt', 'rollout']

_current: contextvars.ContextVar[_Rollout | None] = contextvars.ContextVar('agl_rollout', default=None)
# An agent function (the runner calls it as module:function(task, llm)).
Agent = TypeVar('Agent', bound=Callable[..., Any])


class LLM:
    """The LLM resource: an OpenAI-compatible base URL tied to this attempt, the model and sampling params, and the
    agent's prompts (`llm.prompt(name, seed, vars)`)."""

    def __init__(
        self,
        base_url: str | None,
        model: str | None,
        sampling_params: dict[str, Any] | None = None,
        api_key: str = 'agl',
        prompts: Mapping[str, Mapping[str, str]] | None = None,
        agent_dir: str | None = None,
    ):
        self.base_url = base_url
        self.model = model
        self.sampling_params = sampling_params or {}
        self.api_key = api_key
        # The texts this attempt's prompts have before their seeds, by name: {text, source, version} (the runner's).
        self.prompts: dict[str, Mapping[str, str]] = dict(prompts or {})
        # Where a file seed is read from: the agent's folder (the runner's), else the working directory.
        self.agent_dir = agent_dir

    def __repr__(self) -> str:
        return f'LLM(base_url={self.base_url!r}, model={self.model!r})'

    def prompt(self, name: str, seed: str | Mapping[str, str], vars: Mapping[str, object] | None = None) -> str:
        """The prompt `name`'s text: inside a rollout of a prompt optimization, the candidate being scored; else the
        text promoted for this agent; else `seed` (a string, or {"file": "prompts/system.md"} read relative to the
        agent's module). With `vars`, its placeholders {name} / {{name}} are filled in (protocol/prompt-template.ts:
        a placeholder without a var is an error naming it; \\{name} is the text {name}); without, it comes back as it
        is. Inside a rollout each call records which text it was (an `agentlightning.prompt` span)."""
        what = f'llm.prompt({name!r})'
        if not isinstance(name, str) or not _PROMPT_NAME.fullmatch(name):
            raise ValueError(f'llm.prompt: name {name!r} is not a prompt name: use 1-64 letters, digits, _, - or .')
        file = _seed_file(seed, what, self.agent_dir)
        if vars is not None and not isinstance(vars, Mapping):
            raise ValueError(f'{what}: vars must be a dict of placeholder values ({{"question": ...}}), got {type(vars).__name__}')
        given = self.prompts.get(name)
        template = str(given['text']) if given else _read_seed_file(file, what) if file is not None else str(seed)
        ctx = _current.get()
        if ctx is not None:
            attrs = {
                'agl.prompt.name': name,
                'agl.prompt.source': str(given['source']) if given else 'seed',
                'agl.prompt.version': str(given['version']) if given else 'seed',
                'agl.prompt.sha': hashlib.sha256(template.encode()).hexdigest()[:12],
                'agl.prompt.template': template,
            }
            if file is not None:
                attrs['agl.prompt.file'] = file
            ctx.add_span('agentlightning.prompt', attrs)
        return template if vars is None else render_prompt(template, vars, what)


# The placeholder rule of protocol/prompt-template.ts: an escaping backslash, then {{ name }} or {name}.
_PLACEHOLDER = re.compile(r'(\\?)(?:\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\})')
_PROMPT_NAME = re.compile(r'[A-Za-z0-9_.-]{1,64}')


def render_prompt(text: str, vars: Mapping[str, object], what: str = 'the prompt') -> str:
    """`text` with its placeholders {name} / {{name}} filled from `vars` (strings as they are, anything else as JSON);
    \\{name} is the text {name}; every other brace is text. A placeholder without a var is a ValueError naming it."""

    def fill(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(0)[1:]
        key = m.group(2) or m.group(3)
        if key not in vars:
            given = ', '.join(vars) or 'none'
            raise ValueError(f'{what}: placeholder {{{key}}} has no value: give it in vars ({{"{key}": ...}}); vars given: {given}')
        value = vars[key]
        return value if isinstance(value, str) else json.dumps(value, default=str, separators=(',', ':'), ensure_ascii=False)

    return _PLACEHOLDER.sub(fill, text)


def _seed_file(seed: object, what: str, agent_dir: str | None) -> str | None:
    """The absolute path of a file seed, None for a text seed; a ValueError naming what is wrong with any other."""
    if isinstance(seed, str):
        return None
    file = seed.get('file') if isinstance(seed, Mapping) else None
    if not isinstance(file, str) or not file:
        raise ValueError(f'{what}: the seed must be the prompt\'s text or {{"file": "path/to/prompt.md"}} (relative to the agent), got {seed!r}')
    return file if os.path.isabs(file) else os.path.abspath(os.path.join(agent_dir or os.getcwd(), file))


def _read_seed_file(file: str, what: str) -> str:
    try:
        with open(file, encoding='utf-8', newline='') as f:  # newline='': the text exactly as stored, as the TS SDK reads it
            return f.read()
    except OSError as exc:
        raise OSError(
            f"{what}: cannot read its seed file {file} ({exc.strerror}): a relative seed file is read from the agent's folder "
            'in a rollout, else from the working directory (LLM(..., agent_dir=...) sets it)'
        ) from exc


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


def emit_reward(reward: float | Mapping[str, float], primary_key: str | None = None, feedback: str | None = None, final: bool = False) -> None:
    """Records a reward: a number, or a dict of named numbers whose first (or primary_key) entry is primary; with
    `feedback`, what the grader said about the answer in words (what a prompt optimization reflects on); `final=True`:
    it is the rollout's final reward, which no LLM judge replaces or adds to."""
    ctx = _current.get()
    if ctx is None:
        return
    if feedback is not None and not isinstance(feedback, str):
        raise ValueError(f'emit_reward: feedback must be a string (what the grader said), got {type(feedback).__name__}')
    if not isinstance(final, bool):
        raise ValueError(f'emit_reward: final must be True or False, got {type(final).__name__}')
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
    if feedback is not None:
        attrs['agl.reward.feedback'] = feedback
    if final:
        attrs['agl.reward.final'] = True
        attrs['agl.reward.locked'] = True
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
    llm = LLM(
        llm_init.get('baseUrl'),
        llm_init.get('model'),
        llm_init.get('samplingParams'),
        llm_init.get('apiKey', 'agl'),
        prompts=llm_init.get('prompts'),
        agent_dir=llm_init.get('agentDir'),
    )
    token_var = _current.set(ctx)
    start = time.time_ns()
    outcome: dict[str, Any] = {'status': 'succeeded', 'reward': None}
    try:
        fn = load_function(job['agent'])
        llm.agent_dir = _module_dir(fn) or llm.agent_dir
        nparams = len(inspect.signature(fn).parameters)
        args = (job.get('task'), llm, {'rollout_id': ctx.rollout_id, 'attempt_id': ctx.attempt_id, 'mode': job.get('mode', 'train')})[: max(1, min(nparams, 3))]
        value = fn(*args)
        if inspect.isawaitable(value):
            value = asyncio.run(_await(value))
        score = _returned_score(value)
        if score is not None:
            reward, feedback, locked, result = score
            emit_reward(reward, feedback=feedback, final=locked)
            if not locked:
                ctx.spans[-1]['attributes'].append({'key': 'agl.reward.final', 'value': {'boolValue': True}})
            outcome['reward'] = reward
            if result:
                outcome['result'] = json.loads(json.dumps(result, default=str))
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


def _returned_score(value: object) -> tuple[float, str | None, bool, dict[str, Any]] | None:
    """What an agent's return value scores: a number is the final reward; a dict whose "reward" is a number is the
    final reward with its "feedback" (a string) and "final" (True: no LLM judge replaces it), its other keys (if any) the
    episode's answer. None for anything else (the episode's answer, no reward). A ValueError names a reward that is not
    finite, a feedback that is not text or a final that is not a boolean."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (float(value), None, False, {}) if math.isfinite(value) else None
    if not isinstance(value, Mapping) or not isinstance(value.get('reward'), (int, float)) or isinstance(value.get('reward'), bool):
        return None
    reward = float(value['reward'])
    if not math.isfinite(reward):
        raise ValueError(f'the agent returned {{"reward": {reward}}}: the reward must be a finite number')
    feedback = value.get('feedback')
    if feedback is not None and not isinstance(feedback, str):
        raise ValueError(f'the agent returned a "feedback" of type {type(feedback).__name__}: give the grader\'s words as a string')
    final = value.get('final', False)
    if not isinstance(final, bool):
        raise ValueError(f'the agent returned a "final" of type {type(final).__name__}: True locks the reward against an LLM judge')
    return reward, feedback, final, {k: v for k, v in value.items() if k not in ('reward', 'feedback', 'final')}


def _module_dir(fn: Callable[..., Any]) -> str | None:
    """The folder of the module defining the agent function (where its file seeds are), when it has a file."""
    file = getattr(sys.modules.get(getattr(fn, '__module__', '') or ''), '__file__', None)
    return os.path.dirname(os.path.abspath(file)) if isinstance(file, str) else None


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
