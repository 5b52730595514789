"""Requests are parsed into typed records and checked once, with errors that name the field."""

from __future__ import annotations

import pytest

from agl_torch import messages as m


def gen(**over):
    return {'prompts': [[5, 6, 7]], 'maxTokens': 4, 'temperature': 1.0, 'seed': 3, 'eos': [2], 'stream': False, **over}


def grpo(**over):
    return {
        'kind': 'grpo',
        'epsilon': 0.2,
        'epsilonHigh': 0.28,
        'sequenceEpsilon': 3e-4,
        'sequenceEpsilonHigh': 4e-4,
        'beta': 0.0,
        'lossAggregation': 'token-mean',
        'lossNormTokens': None,
        'importanceSampling': 'token',
        'ratioBase': 'sampler',
        'tisCap': None,
        'samples': [{'advantage': 1.0, 'oldLogprobs': [-1.0, -2.0]}],
        **over,
    }


def test_a_valid_request_becomes_its_record():
    p = m.parse(m.GenerateParams, gen(topP=0.9, stop=['\n']))
    assert p.prompts == [[5, 6, 7]] and p.max_tokens == 4 and p.top_p == 0.9 and p.stop == ['\n'] and p.adapter is None
    t = m.parse(m.TrainStepParams, {'pairs': [{'promptIds': [1], 'completionIds': [3, 4]}], 'loss': grpo(ratioBase='update', tisCap=3)})
    assert isinstance(t.loss, m.GrpoLoss) and t.loss.ratio_base == 'update' and t.loss.tis_cap == 3.0
    assert t.pairs[0].completion_ids == [3, 4]
    assert isinstance(m.parse(m.TrainStepParams, {'pairs': [{'promptIds': [1], 'completionIds': [3]}], 'loss': {'kind': 'nll'}}).loss, m.NllLoss)


@pytest.mark.parametrize(
    ('raw', 'message'),
    [
        (gen(maxTokens=-5), 'params.maxTokens: must be at least 1, got -5'),
        (gen(maxTokens=0), 'params.maxTokens: must be at least 1'),
        (gen(prompts=[[1, 'x']]), 'params.prompts[0][1]: must be an integer, got "x"'),
        (gen(prompts=[[1, 2.5]]), 'params.prompts[0][1]: must be an integer, got 2.5'),
        (gen(temperature=float('nan')), 'params.temperature: must be a finite number'),
        (gen(temperature=-1), 'params.temperature: must be at least 0'),
        (gen(topP=0), 'params.topP: must be greater than 0'),
        (gen(topP=1.5), 'params.topP: must be at most 1'),
        (gen(stream='yes'), 'params.stream: must be true or false'),
        (gen(extra=1), 'params: unknown field "extra"'),
        ({'prompts': [[1]]}, 'params.maxTokens: missing'),
        ([1, 2], 'params: must be an object'),
    ],
)
def test_a_bad_generate_request_names_its_field(raw, message):
    with pytest.raises(m.RequestError) as e:
        m.parse(m.GenerateParams, raw)
    assert message in str(e.value)


@pytest.mark.parametrize(
    ('raw', 'message'),
    [
        ({'pairs': [], 'loss': {'kind': 'nll'}}, 'params.pairs: must not be empty'),
        ({'pairs': [{'promptIds': [1], 'completionIds': [2]}], 'loss': {'kind': 'ppo'}}, 'params.loss.kind: must be one of nll, grpo'),
        ({'pairs': [{'promptIds': [1], 'completionIds': [2]}], 'loss': grpo(epsilon=-1)}, 'params.loss.epsilon: must be at least 0'),
        (
            {'pairs': [{'promptIds': [1], 'completionIds': [2]}], 'loss': grpo(samples=[{'advantage': float('inf'), 'oldLogprobs': [-1.0]}])},
            'advantage: must be a finite number',
        ),
        (
            {'pairs': [{'promptIds': [1], 'completionIds': [2]}], 'loss': grpo(samples=[{'advantage': 1, 'oldLogprobs': [float('nan')]}])},
            'oldLogprobs[0]: must be a finite number',
        ),
        ({'pairs': [{'promptIds': [1], 'completionIds': [2]}], 'loss': grpo(lossAggregation='sum')}, 'params.loss.lossAggregation: must be one of'),
        ({'pairs': [{'promptIds': [1], 'completionIds': [2]}], 'loss': grpo(tisCap=0.5)}, 'params.loss.tisCap: must be at least 1'),
    ],
)
def test_a_bad_train_request_names_its_field(raw, message):
    with pytest.raises(m.RequestError) as e:
        m.parse(m.TrainStepParams, raw)
    assert message in str(e.value)


def test_checks_against_the_model_name_the_token_and_the_sequence():
    with pytest.raises(m.RequestError, match=r'pairs\[1\].completionIds\[2\]: token id 200 is outside the vocabulary \[0, 100\)'):
        m.check_pairs([m.Pair([1], [2]), m.Pair([1, 2], [3, 4, 200])], 100, 64)
    with pytest.raises(m.RequestError, match=r'pairs\[0\].promptIds\[0\]: token id -1'):
        m.check_pairs([m.Pair([-1], [2])], 100, 64)
    with pytest.raises(m.RequestError, match=r'pairs\[0\]: 40\+30 tokens exceed the context of 64'):
        m.check_pairs([m.Pair([1] * 40, [2] * 30)], 100, 64)
    with pytest.raises(m.RequestError, match=r'pairs\[0\].promptIds: empty'):
        m.check_pairs([m.Pair([], [2])], 100, 64)


def test_the_loss_must_fit_the_pairs():
    loss = m.parse(m.GrpoLoss, grpo())
    with pytest.raises(m.RequestError, match=r'loss.samples\[0\].oldLogprobs: 2 values for 3 completion tokens'):
        m.check_loss(loss, [m.Pair([1], [2, 3, 4])])
    with pytest.raises(m.RequestError, match='one per pair is needed'):
        m.check_loss(loss, [m.Pair([1], [2, 3]), m.Pair([1], [2])])
    kl = m.parse(m.GrpoLoss, grpo(beta=0.1))
    with pytest.raises(m.RequestError, match=r'refLogprobs: needed when beta > 0'):
        m.check_loss(kl, [m.Pair([1], [2, 3])])


SETTINGS = {'lr': 1e-4, 'beta1': 0.9, 'beta2': 0.95, 'eps': 1e-8, 'weightDecay': 0.0, 'gradClip': 1.0, 'microBatchSize': 8}


def test_optimizer_settings_are_all_there_known_and_in_range():
    s = m.parse(m.OptimizerSettings, SETTINGS, 'optimizer')
    assert (s.lr, s.micro_batch_size) == (1e-4, 8) and m.wire(s) == SETTINGS
    configured = m.parse(m.OptimizerSettings, {k: v for k, v in SETTINGS.items() if k != 'lr'}, 'optimizer')
    assert configured.lr is None and 'lr' not in m.wire(configured), 'configured settings hold no learning rate, and answer none'
    with pytest.raises(m.RequestError, match=r'optimizer.gradClip: missing \(a number is required\)'):
        m.parse(m.OptimizerSettings, {k: v for k, v in SETTINGS.items() if k != 'gradClip'}, 'optimizer')
    with pytest.raises(m.RequestError, match='unknown field "learningRate"'):
        m.parse(m.OptimizerSettings, {**SETTINGS, 'learningRate': 1e-4}, 'optimizer')
    with pytest.raises(m.RequestError, match=r'optimizer.beta2: must be less than 1'):
        m.parse(m.OptimizerSettings, {**SETTINGS, 'beta2': 1.0}, 'optimizer')
    with pytest.raises(m.RequestError, match=r'optimizer.lr: must be at least 0'):
        m.parse(m.OptimizerSettings, {**SETTINGS, 'lr': -1e-4}, 'optimizer')
    with pytest.raises(m.RequestError, match=r'optimizer.microBatchSize: must be an integer'):
        m.parse(m.OptimizerSettings, {**SETTINGS, 'microBatchSize': 2.5}, 'optimizer')
    with pytest.raises(m.RequestError, match=r'params.optimizer.eps: must be a finite number'):
        m.parse(
            m.TrainStepParams, {'pairs': [{'promptIds': [1], 'completionIds': [2]}], 'loss': {'kind': 'nll'}, 'optimizer': {**SETTINGS, 'eps': float('inf')}}
        )


def test_every_method_has_a_record_with_wire_names():
    for method, cls in m.PARAMS.items():
        fields = m.wire_fields(cls)
        assert all(name[0].islower() and '_' not in name for name in fields), method
    assert m.wire_fields(m.GenerateParams)['maxTokens'] == {'required': True, 'type': 'integer'}
    assert m.wire_fields(m.GenerateParams)['topP'] == {'required': False, 'type': 'number|null'}
