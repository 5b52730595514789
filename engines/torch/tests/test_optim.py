"""Float32 masters under lower-precision parameters, AdamW's moments in and out, and updates that refuse NaN."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from helpers import SETTINGS, engine, pairs

from agl_torch.messages import RequestError, SaveParams, TrainStepParams, parse, wire
from agl_torch.optim import NonFiniteStep, Trainable


def step_request(ps, lr: float | None = 1e-3):
    """An NLL update of `ps` with settings of its own (this `lr`, micro-batches of 2), or without any (lr None)."""
    raw = {'pairs': [{'promptIds': p.prompt_ids, 'completionIds': p.completion_ids} for p in ps], 'loss': {'kind': 'nll'}}
    if lr is not None:
        raw['optimizer'] = {**wire(SETTINGS), 'lr': lr, 'microBatchSize': 2}
    return parse(TrainStepParams, raw)


def largest_change(before: list[torch.Tensor], e) -> float:
    return max(float((p.detach() - b).abs().max()) for b, (_, p) in zip(before, e.policy.params))


def test_an_updates_settings_hold_for_that_update_only_and_one_without_a_rate_is_refused(model_dir):
    """lr 0.1 sent with an update moves the weights (AdamW moves a weight by about its learning rate per update); the
    engine keeps its configured settings, which hold no learning rate (the daemon sends none at start), so an update
    without settings is refused naming lr, weights unchanged, and the engine answers no lr."""
    e = engine(model_dir)
    start = [p.detach().clone() for _, p in e.policy.params]
    e.train_step(step_request(pairs(4), lr=0.1))
    assert largest_change(start, e) > 0.02
    middle = [p.detach().clone() for _, p in e.policy.params]
    with pytest.raises(RequestError, match=r'optimizer\.lr: the update carries no learning rate'):
        e.train_step(step_request(pairs(4), lr=None))
    assert largest_change(middle, e) == 0
    assert e.policy.config == SETTINGS and e.describe()['optimizer'] == wire(SETTINGS) and 'lr' not in e.describe()['optimizer']


def test_bfloat16_parameters_get_float32_masters_and_moments(model_dir):
    e = engine(model_dir, dtype='bfloat16')
    assert all(p.dtype == torch.bfloat16 for _, p in e.policy.params)
    assert all(q.dtype == torch.float32 for q in e.policy.masters)
    e.train_step(step_request(pairs(4)))
    for q in e.policy.masters:
        st = e.policy.opt.state[q]
        assert st['exp_avg'].dtype == torch.float32 and st['exp_avg_sq'].dtype == torch.float32
    for (_, p), q in zip(e.policy.params, e.policy.masters):
        assert torch.equal(p, q.to(torch.bfloat16))  # the parameters are the masters, rounded


def test_an_update_at_lr_1e_6_moves_every_trainable_tensor_norms_included(model_dir):
    e = engine(model_dir, dtype='bfloat16')
    before = [q.clone() for q in e.policy.masters]
    e.train_step(step_request(pairs(4), lr=1e-6))
    moved = [not torch.equal(a, b) for a, b in zip(before, e.policy.masters)]
    names = [n for n, _ in e.policy.params]
    assert all(moved), [n for n, m in zip(names, moved) if not m]
    assert any('norm' in n or 'ln_' in n for n in names)  # norms are among them


def test_a_float32_folder_resumes_in_bfloat16_and_a_bfloat16_run_saves_float32(model_dir, tmp_path):
    a = engine(model_dir)
    a.train_step(step_request(pairs(4)))
    a.save(SaveParams(str(tmp_path / 'f32')))
    b = engine(str(tmp_path / 'f32'), dtype='bfloat16')  # moments saved as float32 onto bfloat16 parameters
    assert b.policy.step == 1
    for (_, p), q in zip(a.policy.params, b.policy.masters):
        assert torch.equal(p.detach(), q)  # the masters hold every bit of the folder
    b.train_step(step_request(pairs(4, seed=1)))
    assert b.policy.step == 2
    b.save(SaveParams(str(tmp_path / 'bf16')))
    c = engine(str(tmp_path / 'bf16'))  # and back to float32: the saved weights are the float32 masters
    for (_, p), q in zip(c.policy.params, b.policy.masters):
        assert torch.equal(p.detach(), q)
    c.train_step(step_request(pairs(4, seed=2)))


def test_a_nan_gradient_refuses_the_update_and_changes_nothing(model_dir):
    e = engine(model_dir)
    e.train_step(step_request(pairs(4)))
    weights = [p.detach().clone() for _, p in e.policy.params]
    moments = {k: (m.clone(), v.clone()) for k, (m, v) in e.policy.moments().items()}
    for _, p in e.policy.params:
        p.grad = torch.full_like(p, float('nan'))
    with pytest.raises(NonFiniteStep, match='gradient norm is nan'):
        e.policy.apply(e.policy.config)
    assert all(torch.equal(a, p) for a, (_, p) in zip(weights, e.policy.params))
    for k, (m, v) in e.policy.moments().items():
        assert torch.equal(m, moments[k][0]) and torch.equal(v, moments[k][1])
    assert e.policy.step == 1


def test_clipping_scales_the_gradient_to_the_clip_norm():
    p = torch.nn.Parameter(torch.zeros(4))
    t = Trainable([('w', p)], dataclasses.replace(SETTINGS, lr=1.0, beta1=0.0, beta2=0.0, eps=1e-30, weight_decay=0.0, grad_clip=1.0))
    p.grad = torch.tensor([3.0, 4.0, 0.0, 0.0])
    norm = t.apply(t.config)
    assert float(norm) == pytest.approx(5.0)
    # Adam with beta1 = beta2 = 0 steps by sign: the clipped gradient's direction
    assert torch.allclose(p.detach(), torch.tensor([-1.0, -1.0, 0.0, 0.0]))


def test_float16_halves_its_loss_scale_on_overflow():
    p = torch.nn.Parameter(torch.zeros(2, dtype=torch.float16))
    t = Trainable([('w', p)], dataclasses.replace(SETTINGS, lr=1e-3, weight_decay=0.0))
    assert t.loss_scale == 2.0**16
    p.grad = torch.tensor([float('inf'), 1.0], dtype=torch.float16)
    with pytest.raises(NonFiniteStep):
        t.apply(t.config)
    assert t.overflowed() and t.loss_scale == 2.0**15
