"""The lean decoder (the engine's own cache, attention over the filled slots) against transformers' own forward:
the same logits, and the same tokens and log-probs for the same seeds, with left padding, compaction, a sliding
window, LoRA adapters, and the CUDA-graph runner's buffers and compaction (run eagerly here: no GPU)."""

from __future__ import annotations

import pytest
import torch
from helpers import SETTINGS, VOCAB, engine

from agl_torch.decode import LeanDecoder, bucket
from agl_torch.generate import generate
from agl_torch.graphs import DecodeGraphs
from agl_torch.messages import AddAdapterParams, GenerateParams, LoraSettings, parse
from agl_torch.sampling import Sampling, uniform

PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [12, 13], [14, 15, 16, 17], [18]]


def request(**over):
    return parse(GenerateParams, {'prompts': PROMPTS, 'maxTokens': 12, 'temperature': 1.0, 'seed': 11, 'eos': [], 'stream': False, **over})


@pytest.fixture(params=['gpt2', 'qwen2', 'mistral'])
def any_dir(request, gpt2_dir, qwen2_dir, mistral_dir):
    return {'gpt2': gpt2_dir, 'qwen2': qwen2_dir, 'mistral': mistral_dir}[request.param]


def test_the_counter_generator_is_uniform_and_the_same_for_a_row_in_any_batch():
    seeds = torch.tensor([1, 2, 3, 2**32 - 1], dtype=torch.int64)
    u = torch.stack([uniform(seeds, k) for k in range(2000)])
    assert (u >= 0).all() and (u < 1).all()
    assert abs(float(u.mean()) - 0.5) < 0.02 and abs(float(u.var()) - 1 / 12) < 0.01
    assert torch.equal(uniform(seeds[1:2], 7), uniform(seeds, 7)[1:2])


@torch.inference_mode()
def test_lean_logits_equal_transformers_over_prefill_and_steps(any_dir):
    e = engine(any_dir)
    lean = LeanDecoder(e.model)
    ids = torch.tensor([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])
    left = torch.tensor([2, 0])
    positions = (torch.arange(5)[None, :] - left[:, None]).clamp(min=0)
    lean.ensure_cache(2, 64)
    got = [lean.forward(ids, positions, left, torch.tensor(0), bucket(5))]
    seq, attn = ids.clone(), (torch.arange(5)[None, :] >= left[:, None]).long()
    for k, nxt in enumerate([[20, 21], [22, 23], [24, 25], [26, 27], [28, 29], [30, 31]]):
        t = torch.tensor(nxt)
        got.append(lean.forward(t[:, None], (positions[:, -1] + 1 + k)[:, None], left, torch.tensor([5 + k]), bucket(6 + k)))
        seq = torch.cat([seq, t[:, None]], 1)
        attn = torch.cat([attn, torch.ones(2, 1, dtype=torch.long)], 1)
    pos = (torch.arange(seq.shape[1])[None, :] - left[:, None]).clamp(min=0)
    ref = e.model(input_ids=seq, attention_mask=attn, position_ids=pos).logits.float()
    for k, logits in enumerate(got):
        assert torch.allclose(logits, ref[:, 4 + k], atol=1e-4), f'step {k}: {(logits - ref[:, 4 + k]).abs().max()}'


def test_auto_decodes_eagerly_on_cpu_where_the_lean_step_is_no_faster(gpt2_dir):
    e = engine(gpt2_dir)
    assert e.decoder == 'eager' and e.lean is None and e.graphs is None


def test_lean_and_eager_sample_the_same_tokens_and_logprobs(any_dir):
    lean, eager = engine(any_dir, decoder='lean'), engine(any_dir, decoder='eager')
    assert lean.decoder == 'lean' and eager.decoder == 'eager'
    for over in ({}, {'temperature': 0.0}, {'topP': 0.8, 'temperature': 1.3}, {'topK': 5, 'seed': 3}):
        a, b = lean.generate(request(**over)), eager.generate(request(**over))
        for x, y in zip(a, b):
            assert x['tokenIds'] == y['tokenIds'], over
            assert torch.allclose(torch.tensor(x['logprobs']), torch.tensor(y['logprobs']), atol=1e-4), over


def test_rows_that_finish_are_compacted_and_the_rest_go_on_unchanged(qwen2_dir):
    lean, eager = engine(qwen2_dir, decoder='lean'), engine(qwen2_dir, decoder='eager')
    free = lean.generate(request(temperature=0.0))
    # EOS at the second token of row 1 and the fourth of row 3: they finish early, the others continue
    eos = [free[1]['tokenIds'][1], free[3]['tokenIds'][3]]
    a, b = lean.generate(request(temperature=0.0, eos=eos)), eager.generate(request(temperature=0.0, eos=eos))
    assert [x['tokenIds'] for x in a] == [x['tokenIds'] for x in b]
    assert a[1]['finishReason'] == 'stop' and len(a[1]['tokenIds']) <= 2


def test_the_cache_is_reused_and_grows_for_longer_requests(gpt2_dir):
    e = engine(gpt2_dir, decoder='lean')
    e.generate(request(maxTokens=4))
    first = e.lean.cache
    e.generate(request(maxTokens=3))
    assert e.lean.cache is first
    e.generate(parse(GenerateParams, {'prompts': [[5] * 30] * 6, 'maxTokens': 30, 'temperature': 1.0, 'seed': 1, 'eos': [], 'stream': False}))
    assert e.lean.cache is not first and e.lean.cache.rows >= 6 and e.lean.cache.slots >= 60


def test_lora_adapters_decode_the_same_on_both_paths(qwen2_dir):
    outs = []
    for decoder in ('lean', 'eager'):
        e = engine(qwen2_dir, decoder=decoder, trainable='adapters')
        e.add_adapter(AddAdapterParams('writer', None, LoraSettings(rank=4, alpha=8.0), SETTINGS))
        with torch.no_grad():  # a trained-looking adapter: B is zero at init
            for n, p in e.adapters.get('writer').params:
                p.normal_(0, 0.2, generator=torch.Generator().manual_seed(hash(n) % 1000))
        outs.append((e.generate(request(adapter='writer')), e.generate(request())))
    (lean_adapter, lean_base), (eager_adapter, eager_base) = outs
    assert [x['tokenIds'] for x in lean_adapter] == [x['tokenIds'] for x in eager_adapter]
    assert [x['tokenIds'] for x in lean_base] == [x['tokenIds'] for x in eager_base]
    assert [x['tokenIds'] for x in lean_adapter] != [x['tokenIds'] for x in lean_base], 'the adapter changes what is sampled'


def test_the_graph_runner_buffers_buckets_and_compaction_give_the_same_tokens(qwen2_dir):
    """The CUDA-graph runner's own bookkeeping, with its step run eagerly (what it does when a capture fails)."""
    e = engine(qwen2_dir, decoder='lean')
    graphs = DecodeGraphs(lambda: None)
    graphs.failed = 'no GPU here: the step runs eagerly on the static buffers'
    free = e.generate(request(temperature=0.0))
    eos = [free[1]['tokenIds'][1], free[2]['tokenIds'][2]]
    for over in ({'temperature': 1.0}, {'temperature': 0.0, 'eos': eos}, {'topP': 0.7, 'temperature': 1.2, 'eos': eos}):
        p = request(**over)
        kw = dict(
            max_tokens=p.max_tokens, context_length=e.context_length, eos=p.eos, device=torch.device('cpu'),
            sampling=Sampling(p.temperature, p.top_k or 0, p.top_p or 1.0), seed=p.seed,
        )  # fmt: skip
        via_graphs = generate(e.model, p.prompts, lean=e.lean, graphs=graphs, **kw)
        eager = generate(e.model, p.prompts, **kw)
        assert [x['tokenIds'] for x in via_graphs] == [x['tokenIds'] for x in eager], over
        for x, y in zip(via_graphs, eager):
            assert torch.allclose(torch.tensor(x['logprobs']), torch.tensor(y['logprobs']), atol=1e-4)
    assert set(graphs.buffers) >= {4, 2}, f'the batch moved to a smaller bucket: {sorted(graphs.buffers)}'
    assert all(0 <= t < VOCAB for x in via_graphs for t in x['tokenIds'])
