"""Sampling: per-row seeds independent of the batch, greedy = argmax, EOS and max tokens, untempered log-probs."""

from __future__ import annotations

import torch
from helpers import VOCAB, engine

from agl_torch.batch import build_batch, completion_logprobs
from agl_torch.messages import GenerateParams, Pair, parse


def request(prompts, **over):
    return parse(GenerateParams, {'prompts': prompts, 'maxTokens': 8, 'temperature': 1.0, 'seed': 5, 'eos': [], 'stream': False, **over})


def test_a_row_samples_the_same_alone_or_in_a_batch(model_dir):
    e = engine(model_dir)
    a, b = [5, 6, 7], [9, 10]
    alone = e.generate(request([a]))
    batched = e.generate(request([a, b, b]))
    assert batched[0]['tokenIds'] == alone[0]['tokenIds']
    other = e.generate(request([a], seed=6, temperature=2.0))
    assert other[0]['tokenIds'] != alone[0]['tokenIds'] or len(alone[0]['tokenIds']) < 3


def test_greedy_follows_the_argmax_and_logprobs_are_the_untempered_models(model_dir):
    e = engine(model_dir)
    prompt = [5, 6, 7]
    [g] = e.generate(request([prompt], temperature=0.0))
    ids = list(prompt)
    with torch.no_grad():
        for t in g['tokenIds']:
            logits = e.model(input_ids=torch.tensor([ids])).logits[0, -1]
            assert int(logits.argmax()) == t
            ids.append(t)
    [s] = e.generate(request([prompt], temperature=1.7))
    b = build_batch([Pair(prompt, s['tokenIds'])], torch.device('cpu'))
    with torch.no_grad():
        scored, _ = completion_logprobs(e.forward, b, False)
    assert torch.allclose(scored[0, : len(s['logprobs'])], torch.tensor(s['logprobs']), atol=1e-4)


def test_eos_ends_a_row_and_max_tokens_bounds_it(model_dir):
    e = engine(model_dir)
    [free] = e.generate(request([[5, 6]], maxTokens=6, temperature=0.0))
    assert len(free['tokenIds']) == 6 and free['finishReason'] == 'length'
    stop_at = free['tokenIds'][2]
    [stopped] = e.generate(request([[5, 6]], maxTokens=6, temperature=0.0, eos=[stop_at]))
    assert stopped['tokenIds'] == free['tokenIds'][: free['tokenIds'].index(stop_at) + 1] and stopped['finishReason'] == 'stop'


def test_streaming_reports_each_token_of_each_row(model_dir):
    e = engine(model_dir)
    seen: list = []
    out = e.generate(request([[5, 6], [7]], maxTokens=4), seen.append)
    for row in (0, 1):
        assert [t for step in seen for (r, t, _) in step if r == row] == out[row]['tokenIds']
    assert all(0 <= t < VOCAB for step in seen for (_, t, _) in step)
