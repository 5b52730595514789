"""The loss description as torch ops: the formulas, micro-batching, and the ratio against the update's own log-probs."""

from __future__ import annotations

import math

import pytest
import torch

from agl_torch.loss import LossFn
from agl_torch.messages import GrpoLoss, NllLoss, Pair, parse

PAIRS = [Pair([1, 2], [3, 4, 5]), Pair([1], [6, 7])]
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])


def grpo(old, **over) -> GrpoLoss:
    raw = {
        'kind': 'grpo',
        'epsilon': 0.2,
        'epsilonHigh': 0.2,
        'sequenceEpsilon': 3e-4,
        'sequenceEpsilonHigh': 4e-4,
        'beta': 0.0,
        'lossAggregation': 'token-mean',
        'lossNormTokens': None,
        'importanceSampling': 'token',
        'ratioBase': 'sampler',
        'tisCap': None,
        'samples': [{'advantage': 1.0, 'oldLogprobs': old[0]}, {'advantage': -0.5, 'oldLogprobs': old[1]}],
        **over,
    }
    return parse(GrpoLoss, raw)


def logp_tensor(rows):
    t = torch.tensor([r + [0.0] * (3 - len(r)) for r in rows], requires_grad=True)
    return t


def test_nll_is_the_token_mean_negative_log_likelihood():
    logp = logp_tensor([[-1.0, -2.0, -3.0], [-0.5, -0.5]])
    fn = LossFn(NllLoss('nll'), PAIRS, torch.device('cpu'))
    loss = fn(logp, MASK, None, [0, 1])
    assert math.isclose(float(loss.detach()), 7.0 / 5, rel_tol=1e-6)
    assert fn.stats()['tokens'] == 5 and fn.stats()['sequences'] == 2


def test_on_policy_grpo_is_minus_the_mean_advantage_and_its_gradient_is_the_score():
    rows = [[-1.0, -2.0, -3.0], [-0.5, -0.5]]
    logp = logp_tensor(rows)
    fn = LossFn(grpo(rows), PAIRS, torch.device('cpu'))
    loss = fn(logp, MASK, None, [0, 1])
    assert math.isclose(float(loss.detach()), -(3 * 1.0 + 2 * -0.5) / 5, rel_tol=1e-6)
    (g,) = torch.autograd.grad(loss, logp)
    assert torch.allclose(g, torch.tensor([[-0.2, -0.2, -0.2], [0.1, 0.1, 0.0]]))


def test_micro_batches_sum_to_the_batch_loss():
    rows = [[-1.0, -2.0, -3.0], [-0.5, -0.5]]
    old = [[-1.2, -1.5, -3.3], [-0.4, -0.9]]
    for agg in ('token-mean', 'seq-mean', 'token-sum-norm'):
        spec = grpo(old, lossAggregation=agg, lossNormTokens=4 if agg == 'token-sum-norm' else None)
        whole = LossFn(spec, PAIRS, torch.device('cpu'))(logp_tensor(rows), MASK, None, [0, 1])
        split = LossFn(spec, PAIRS, torch.device('cpu'))
        parts = split(logp_tensor(rows[:1]), MASK[:1], None, [0]) + split(logp_tensor(rows[1:]), MASK[1:], None, [1])
        assert math.isclose(float(whole.detach()), float(parts.detach()), rel_tol=1e-6), agg
        assert math.isclose(split.stats()['lossSum'], float(whole.detach()), rel_tol=1e-6)


def test_the_ratio_against_the_update_starts_at_one_and_keeps_the_gradient():
    rows = [[-1.0, -2.0, -3.0], [-0.5, -0.5]]
    sampler = [[-1.03, -1.98, -3.0], [-0.5, -0.46]]  # another precision's numerics, a few hundredths off
    given = LossFn(grpo(rows), PAIRS, torch.device('cpu'))
    update = LossFn(grpo(sampler, ratioBase='update'), PAIRS, torch.device('cpu'))
    a, b = logp_tensor(rows), logp_tensor(rows)
    la, lb = given(a, MASK, None, [0, 1]), update(b, MASK, None, [0, 1])
    assert math.isclose(float(la.detach()), float(lb.detach()), rel_tol=1e-6)
    (ga,), (gb,) = torch.autograd.grad(la, a), torch.autograd.grad(lb, b)
    assert torch.allclose(ga, gb)
    s = update.stats()
    assert s['ratioSum'] == pytest.approx(5.0) and s['clipped'] == 0
    assert s['gapSum'] == pytest.approx(0.03 + 0.02 + 0.04, abs=1e-5) and s['gapMax'] == pytest.approx(0.04, abs=1e-6)


def test_the_truncated_importance_weight_scales_each_token_up_to_its_cap():
    rows = [[-1.0, -2.0, -3.0], [-0.5, -0.5]]
    sampler = [[-1.0, -4.0, -3.0 + math.log(2)], [-0.5, -0.5]]  # weights exp(update - sampler): 1, e^2 (capped to 3), 1/2
    fn = LossFn(grpo(sampler, ratioBase='update', tisCap=3.0), PAIRS, torch.device('cpu'))
    logp = logp_tensor(rows)
    loss = fn(logp, MASK, None, [0, 1])
    (g,) = torch.autograd.grad(loss, logp)
    assert torch.allclose(g[0], torch.tensor([-1.0, -3.0, -0.5]) / 5, atol=1e-6)
    assert torch.allclose(g[1], torch.tensor([0.5, 0.5, 0.0]) / 5, atol=1e-6)
    assert fn.stats()['tisCapped'] == 1


def test_gspo_ratio_is_one_per_sequence():
    rows = [[-1.0, -2.0, -3.0], [-0.5, -0.5]]
    old = [[-1.1, -2.1, -3.1], [-0.5, -0.5]]
    fn = LossFn(grpo(old, importanceSampling='sequence', sequenceEpsilon=1.0, sequenceEpsilonHigh=1.0), PAIRS, torch.device('cpu'))
    fn(logp_tensor(rows), MASK, None, [0, 1])
    assert fn.stats()['ratioSum'] == pytest.approx(3 * math.exp(0.1) + 2 * 1.0, rel=1e-5)
