"""The batch layout, and the chunked log-probs: the same values and gradients as the whole model's logits."""

from __future__ import annotations

import pytest
import torch
from helpers import engine, pairs

from agl_torch import batch as B
from agl_torch.messages import Pair


def test_prompts_are_left_padded_and_completions_right_padded():
    b = B.build_batch([Pair([5, 6, 7], [8, 9]), Pair([5], [8, 9, 10])], torch.device('cpu'))
    assert b.ids.tolist() == [[5, 6, 7, 8, 9], [0, 0, 5, 8, 9]]  # L = P + T - 1 = 3 + 3 - 1
    assert b.attention.tolist() == [[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]]
    assert b.positions.tolist() == [[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]]
    assert b.targets.tolist() == [[8, 9, 0], [8, 9, 10]]
    assert b.mask.tolist() == [[1, 1, 0], [1, 1, 1]]


def test_micro_batches_hold_at_most_n_pairs_that_fit_the_context():
    ps = [Pair([1] * 10, [2] * 5), Pair([1] * 3, [2] * 3), Pair([1] * 20, [2] * 2), Pair([1], [2])]
    assert B.fitting_chunks(ps, 2, 64) == [[0, 1], [2, 3]]
    assert B.fitting_chunks(ps, 8, 23) == [[0, 1], [2, 3]]  # 20 + 5 - 1 > 23


def reference_logprobs(model, b):
    out = model(input_ids=b.ids, attention_mask=b.attention, position_ids=b.positions, use_cache=False)
    logp = torch.log_softmax(out.logits[:, -b.T :, :].float(), -1).gather(-1, b.targets.unsqueeze(-1)).squeeze(-1)
    return logp * b.mask


def test_chunked_logprobs_equal_the_full_logits_with_their_gradients(model_dir, monkeypatch):
    e = engine(model_dir)
    b = B.build_batch(pairs(5), torch.device('cpu'))
    ref = reference_logprobs(e.model, b)
    g_ref = torch.autograd.grad(ref.sum(), [p for _, p in e.policy.params])
    monkeypatch.setattr(B, 'CHUNK_BYTES', 64 * 4 * 96)  # 64 tokens a chunk: several chunks in this batch
    with torch.enable_grad():
        logp, entropy = B.completion_logprobs(e.forward, b, True)
    assert torch.allclose(logp, ref, atol=1e-5)
    g = torch.autograd.grad(logp.sum(), [p for _, p in e.policy.params])
    for x, y in zip(g, g_ref):
        assert torch.allclose(x, y, atol=1e-5)
    assert (entropy[b.mask > 0] > 0).all() and (entropy[b.mask == 0] == 0).all()


def test_gradient_checkpointing_gives_the_same_gradients(model_dir):
    plain, ckpt = engine(model_dir), engine(model_dir, gradient_checkpointing=True)
    b = B.build_batch(pairs(4), torch.device('cpu'))
    grads = []
    for e in (plain, ckpt):
        logp, _ = B.completion_logprobs(e.forward, b, False)
        grads.append(torch.autograd.grad(logp.sum(), [p for _, p in e.policy.params]))
    for x, y in zip(*grads):
        assert torch.allclose(x, y, atol=1e-6)


@pytest.mark.parametrize('dtype', ['bfloat16'])
def test_lower_precision_logprobs_are_close_to_float32(model_dir, dtype):
    b = B.build_batch(pairs(4), torch.device('cpu'))
    with torch.no_grad():
        full, _ = B.completion_logprobs(engine(model_dir).forward, b, False)
        low, _ = B.completion_logprobs(engine(model_dir, dtype=dtype).forward, b, False)
    assert (full - low).abs().max() < 0.1


def test_length_bucketed_micro_batches_group_pairs_of_one_length():
    ps = [Pair([1] * 30, [2] * 3), Pair([1] * 2, [2] * 2), Pair([1] * 29, [2] * 4), Pair([1] * 3, [2] * 1)]
    assert B.fitting_chunks(ps, 2, 64, by_length=True) == [[1, 3], [2, 0]]
    padded = lambda chunks: sum(len(c) * (max(len(ps[i].prompt_ids) for i in c) + max(len(ps[i].completion_ids) for i in c)) for c in chunks)  # noqa: E731
    assert padded(B.fitting_chunks(ps, 2, 64, by_length=True)) < padded(B.fitting_chunks(ps, 2, 64))
