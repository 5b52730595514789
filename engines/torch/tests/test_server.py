"""No request kills the engine: every failure is answered, and only what leaves the engine inconsistent is fatal."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import SETTINGS, engine, pairs

from agl_torch import server
from agl_torch.messages import wire
from agl_torch.server import answer, check_devices


class Recorder:
    """Stands for the daemon's socket: keeps what the engine sends, encoded as the real channel encodes it."""

    def __init__(self):
        self.sent: list = []

    def send(self, obj):
        try:
            json.dumps(obj, allow_nan=False)
        except ValueError as e:
            raise server.NonFiniteResult(str(e)) from e
        self.sent.append(obj)


def ask(e, method, raw):
    ch = Recorder()
    try:
        params = e.check(method, raw)
    except server.RequestError as err:
        return {'error': {'message': str(err)}}, True
    alive = answer(e, ch, 1, method, params)
    return ch.sent[-1], alive


def score_raw(ps):
    return {'pairs': [{'promptIds': p.prompt_ids, 'completionIds': p.completion_ids} for p in ps]}


def test_token_ids_outside_the_vocabulary_are_refused_before_the_device(model_dir):
    e = engine(model_dir)
    reply, alive = ask(e, 'score', {'pairs': [{'promptIds': [1, 2], 'completionIds': [3, 10_000]}]})
    assert 'pairs[0].completionIds[1]: token id 10000 is outside the vocabulary' in reply['error']['message'] and alive
    reply, alive = ask(e, 'generate', {'prompts': [[1, -3]], 'maxTokens': 2, 'temperature': 1, 'seed': 1, 'eos': [], 'stream': False})
    assert 'prompts[0][1]: token id -3' in reply['error']['message']
    reply, _ = ask(e, 'score', score_raw(pairs(2)))
    assert 'result' in reply  # still serving


def test_out_of_memory_is_answered_with_the_sizes_and_the_engine_keeps_serving(model_dir, monkeypatch):
    e = engine(model_dir)

    def oom(*a, **k):
        raise torch.cuda.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 GiB')

    monkeypatch.setattr(e, 'train_step', oom)
    raw = {**score_raw(pairs(3)), 'loss': {'kind': 'nll'}}
    reply, alive = ask(e, 'train_step', raw)
    msg = reply['error']['message']
    assert alive and not reply['error'].get('fatal')
    assert 'CUDA out of memory in train_step: 3 sequences, the longest' in msg and 'micro-batches of up to 16' in msg
    assert 'engine.gradientCheckpointing' in msg and 'engine.lora' in msg and 'keeps serving' in msg
    monkeypatch.undo()
    reply, _ = ask(e, 'score', score_raw(pairs(2)))
    assert 'result' in reply


def test_a_nan_in_a_result_is_an_error_not_a_crash(model_dir, monkeypatch):
    e = engine(model_dir)
    monkeypatch.setattr(e, 'score', lambda p: [[float('nan')]])
    reply, alive = ask(e, 'score', score_raw(pairs(1)))
    assert alive and 'non-finite number' in reply['error']['message']


def test_any_other_failure_is_answered_and_only_a_cuda_error_is_fatal(model_dir, monkeypatch):
    e = engine(model_dir)
    monkeypatch.setattr(e, 'score', lambda p: [][3])
    reply, alive = ask(e, 'score', score_raw(pairs(1)))
    assert alive and reply['error']['type'] == 'IndexError' and not reply['error'].get('fatal')

    def poisoned(p):
        raise RuntimeError('CUDA error: device-side assert triggered')

    monkeypatch.setattr(e, 'score', poisoned)
    reply, alive = ask(e, 'score', score_raw(pairs(1)))
    assert not alive and reply['error']['fatal']


def test_a_nan_loss_refuses_the_step_with_weights_unchanged(model_dir):
    e = engine(model_dir)
    before = [p.detach().clone() for _, p in e.policy.params]
    ps = pairs(2)
    loss = {
        'kind': 'grpo',
        'epsilon': 0.2,
        'epsilonHigh': 0.2,
        'sequenceEpsilon': 3e-4,
        'sequenceEpsilonHigh': 4e-4,
        'beta': 0.0,
        'lossAggregation': 'token-sum-norm',
        'lossNormTokens': 1,
        'importanceSampling': 'token',
        'ratioBase': 'sampler',
        'tisCap': None,
        # a ratio of exp(900): the loss overflows to infinity
        'samples': [{'advantage': -1.0, 'oldLogprobs': [-900.0] * len(p.completion_ids)} for p in ps],
    }
    reply, alive = ask(e, 'train_step', {**score_raw(ps), 'loss': loss, 'optimizer': {**wire(SETTINGS), 'lr': 1e-3}})
    assert alive and 'train_step refused' in reply['error']['message'] and 'unchanged' in reply['error']['message']
    assert all(torch.equal(a, p) for a, (_, p) in zip(before, e.policy.params)) and e.policy.step == 0


def test_more_ranks_than_gpus_is_said_by_every_rank_before_any_collective(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 1)
    with pytest.raises(RuntimeError, match=r'2 ranks on this machine need 2 GPUs \(one each\), but only 1 is visible: use --procs 1 or fewer'):
        check_devices('cuda', 0, 2)
    check_devices('cuda', 0, 1)
    with pytest.raises(RuntimeError, match='--device must be auto, cpu or cuda'):
        check_devices('tpu', 0, 1)
