"""Our GRPO-family loss against TRL's own: for each variant TRL also has, TRL's GRPOTrainer.compute_loss and the torch
engine's loss (agl_torch.loss, from the same description the daemon sends) on the same model and the same batch.

  python test/engine/trl_reference.py --model DIR      prints one JSON line: {"trl": version, "cases": [...]}

Each case: TRL's loss, ours, and the largest difference between the two gradients (every parameter). The batch:
prompts of one length (TRL scores prompt + completion without position ids, so no left padding), completions of
different lengths (right-padded), per-sequence advantages, old log-probs moved off-policy so that clipping binds,
reference log-probs for the KL term. TRL's trainer runs with the model in eval mode (no dropout; the loss's
normaliser is then the batch's, not divided by gradient-accumulation steps) and temperature 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'engines', 'torch'))
from agl_torch.batch import PolicyForward, build_batch, completion_logprobs
from agl_torch.loss import LossFn
from agl_torch.messages import Pair, TrainStepParams, parse

# (name, TRL GRPOConfig settings, our loss description without samples)
CASES = [
    (
        'grpo',
        dict(loss_type='grpo', epsilon=0.2, epsilon_high=0.3, beta=0.0),
        dict(
            lossAggregation='seq-mean',
            epsilon=0.2,
            epsilonHigh=0.3,
            sequenceEpsilon=3e-4,
            sequenceEpsilonHigh=4e-4,
            beta=0.0,
            importanceSampling='token',
            lossNormTokens=None,
            ratioBase='sampler',
            tisCap=None,
        ),
    ),
    (
        'dr_grpo',
        dict(loss_type='dr_grpo', epsilon=0.2, epsilon_high=0.2, beta=0.0),
        dict(
            lossAggregation='token-sum-norm',
            epsilon=0.2,
            epsilonHigh=0.2,
            sequenceEpsilon=3e-4,
            sequenceEpsilonHigh=4e-4,
            beta=0.0,
            importanceSampling='token',
            lossNormTokens='max_completion_length',
            ratioBase='sampler',
            tisCap=None,
        ),
    ),
    (
        'dapo',
        dict(loss_type='dapo', epsilon=0.2, epsilon_high=0.28, beta=0.0),
        dict(
            lossAggregation='token-mean',
            epsilon=0.2,
            epsilonHigh=0.28,
            sequenceEpsilon=3e-4,
            sequenceEpsilonHigh=4e-4,
            beta=0.0,
            importanceSampling='token',
            lossNormTokens=None,
            ratioBase='sampler',
            tisCap=None,
        ),
    ),
    (
        'gspo',
        dict(loss_type='grpo', importance_sampling_level='sequence', epsilon=3e-4, epsilon_high=4e-4, beta=0.0),
        dict(
            lossAggregation='seq-mean',
            epsilon=0.2,
            epsilonHigh=0.3,
            sequenceEpsilon=3e-4,
            sequenceEpsilonHigh=4e-4,
            beta=0.0,
            importanceSampling='sequence',
            lossNormTokens=None,
            ratioBase='sampler',
            tisCap=None,
        ),
    ),
    # Our KL term is the plain k3 estimator; TRL 1.16 multiplies it by the importance ratio unless told not to.
    (
        'grpo+kl',
        dict(loss_type='grpo', epsilon=0.2, epsilon_high=0.3, beta=0.04, use_bias_correction_kl=False),
        dict(
            lossAggregation='seq-mean',
            epsilon=0.2,
            epsilonHigh=0.3,
            sequenceEpsilon=3e-4,
            sequenceEpsilonHigh=4e-4,
            beta=0.04,
            importanceSampling='token',
            lossNormTokens=None,
            ratioBase='sampler',
            tisCap=None,
        ),
    ),
    (
        'dapo+kl',
        dict(loss_type='dapo', epsilon=0.2, epsilon_high=0.28, beta=0.04, use_bias_correction_kl=False),
        dict(
            lossAggregation='token-mean',
            epsilon=0.2,
            epsilonHigh=0.28,
            sequenceEpsilon=3e-4,
            sequenceEpsilonHigh=4e-4,
            beta=0.04,
            importanceSampling='token',
            lossNormTokens=None,
            ratioBase='sampler',
            tisCap=None,
        ),
    ),
    # The ratio against the update's own log-probs, the sampler's entering through a truncated importance weight: TRL's
    # vLLM correction (token_truncate, cap 3) with old_per_token_logps recomputed by the trainer.
    (
        'dapo+tis',
        dict(loss_type='dapo', epsilon=0.2, epsilon_high=0.28, beta=0.0),
        dict(
            lossAggregation='token-mean',
            epsilon=0.2,
            epsilonHigh=0.28,
            sequenceEpsilon=3e-4,
            sequenceEpsilonHigh=4e-4,
            beta=0.0,
            importanceSampling='token',
            lossNormTokens=None,
            ratioBase='update',
            tisCap=3.0,
        ),
    ),
    (
        'grpo+kl+tis',
        dict(loss_type='grpo', epsilon=0.2, epsilon_high=0.3, beta=0.04, use_bias_correction_kl=False),
        dict(
            lossAggregation='seq-mean',
            epsilon=0.2,
            epsilonHigh=0.3,
            sequenceEpsilon=3e-4,
            sequenceEpsilonHigh=4e-4,
            beta=0.04,
            importanceSampling='token',
            lossNormTokens=None,
            ratioBase='update',
            tisCap=3.0,
        ),
    ),
]
MAX_COMPLETION = 12


def batch(vocab: int, eos: int):
    g = torch.Generator().manual_seed(7)
    B, P = 6, 9
    prompts = torch.randint(3, vocab, (B, P), generator=g).tolist()
    lengths = [12, 7, 3, 10, 1, 5]
    completions = [[*torch.randint(3, vocab, (n,), generator=g).tolist()[:-1], eos] for n in lengths]
    return prompts, completions


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', required=True)
    a = ap.parse_args()
    warnings.filterwarnings('ignore')
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tok = AutoTokenizer.from_pretrained(a.model)
    prompts, completions = batch(len(tok), tok.eos_token_id)
    B, T = len(prompts), max(len(c) for c in completions)
    pairs = [Pair(p, c) for p, c in zip(prompts, completions)]
    cases = []
    for name, trl_cfg, ours in CASES:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32, attn_implementation='eager')
        with tempfile.TemporaryDirectory() as out:
            args = GRPOConfig(
                output_dir=out,
                per_device_train_batch_size=B,
                num_generations=B,
                max_completion_length=MAX_COMPLETION,
                temperature=1.0,
                report_to='none',
                use_cpu=True,
                bf16=False,
                fp16=False,
                logging_steps=1,
                **trl_cfg,
            )
            trainer = GRPOTrainer(
                model=model,
                reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
                args=args,
                train_dataset=Dataset.from_dict({'prompt': ['hello'] * B}),
                processing_class=tok,
            )
            m = trainer.model
            m.eval()
            device = next(m.parameters()).device
            b = build_batch(pairs, device)
            net = PolicyForward(m)
            with torch.no_grad():
                current, _ = completion_logprobs(net, b, False)
            adv = torch.tensor([1.3, -0.7, 0.4, -1.1, 0.9, -0.2])
            amp = 1.5 if ours.get('ratioBase') == 'update' else 0.4  # the importance weight's cap (3) binds on some tokens
            shift = torch.tensor([[amp * math.sin(3 * i + 5 * t) for t in range(T)] for i in range(B)])
            old = (current + shift) * b.mask
            ref = (current - 0.3 * torch.cos(torch.arange(T)[None, :] + 2.0 * torch.arange(B)[:, None])) * b.mask
            inputs = {
                'prompt_ids': torch.tensor(prompts, device=device),
                'prompt_mask': torch.ones((B, len(prompts[0])), dtype=torch.long, device=device),
                'completion_ids': b.targets,
                'completion_mask': b.mask.long(),
                'advantages': adv.to(device),
                'old_per_token_logps': old.to(device),
                'num_items_in_batch': b.mask.sum(),
            }
            if trl_cfg['beta'] > 0:
                inputs['ref_per_token_logps'] = ref.to(device)
            if ours.get('ratioBase') == 'update':
                # What TRL's trainer does with a vLLM sampler: old = its own recomputation; the sampler's log-probs
                # (here `old`, off the trainer's numerics) in a truncated importance weight.
                trainer.use_vllm, trainer.vllm_importance_sampling_correction = True, True
                inputs['old_per_token_logps'] = current.detach().to(device)
                inputs['importance_sampling_ratio'] = torch.clamp(torch.exp(current - old), max=ours['tisCap']).to(device)
            params = [p for p in m.parameters() if p.requires_grad]
            theirs = trainer.compute_loss(m, inputs)
            g_theirs = torch.autograd.grad(theirs, params, allow_unused=True)
            spec = {
                'kind': 'grpo',
                **ours,
                'lossNormTokens': MAX_COMPLETION if ours['lossNormTokens'] else None,
                'samples': [
                    {'advantage': float(adv[i]), 'oldLogprobs': old[i, : len(c)].tolist(), 'refLogprobs': ref[i, : len(c)].tolist()}
                    for i, c in enumerate(completions)
                ],
            }
            request = parse(TrainStepParams, {'pairs': [{'promptIds': p.prompt_ids, 'completionIds': p.completion_ids} for p in pairs], 'loss': spec})
            fn = LossFn(request.loss, pairs, device)
            logp, entropy = completion_logprobs(net, b, True)
            mine = fn(logp, b.mask, entropy, list(range(B)))
            g_mine = torch.autograd.grad(mine, params, allow_unused=True)
            worst = 0.0
            scale = 0.0
            for x, y in zip(g_theirs, g_mine):
                x = torch.zeros_like(y) if x is None else x
                y = torch.zeros_like(x) if y is None else y
                worst = max(worst, float((x - y).abs().max()))
                scale = max(scale, float(x.abs().max()))
            stats = fn.stats()
            cases.append(
                {
                    'name': name,
                    'trl': float(theirs),
                    'ours': float(mine),
                    'gradMaxDiff': worst,
                    'gradMaxAbs': scale,
                    'clipped': stats['clipped'],
                    'tokens': stats['tokens'],
                    'tisCapped': stats['tisCapped'],
                }
            )
    print(json.dumps({'trl': trl.__version__, 'cases': cases}))


if __name__ == '__main__':
    main()
