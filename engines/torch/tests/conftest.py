"""Tiny random models made here by transformers (no downloads): a GPT-2 (the built-in models' family) and a Qwen2
(the Llama family: RMSNorm, rotary positions, grouped-query attention, q/k/v biases), saved as model folders."""

from __future__ import annotations

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from helpers import VOCAB


def _save(model, folder: str) -> str:
    with torch.no_grad():  # larger than the default init, so that log-probs differ across tokens
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.3)
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope='session')
def gpt2_dir(tmp_path_factory) -> str:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=1, eos_token_id=2)
    return _save(GPT2LMHeadModel(cfg), str(tmp_path_factory.mktemp('gpt2')))


def _llama_family(config_cls, model_cls, seed: int, **extra):
    """A 2-layer, 32-wide model of the Llama family (RMSNorm, rotary positions, grouped-query attention)."""
    torch.manual_seed(seed)
    shape = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64)
    return model_cls(config_cls(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, **shape, **extra))


@pytest.fixture(scope='session')
def qwen2_dir(tmp_path_factory) -> str:
    """Qwen2: q/k/v biases, tied embeddings, 2 KV heads for 4 query heads."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    model = _llama_family(Qwen2Config, Qwen2ForCausalLM, 2, num_key_value_heads=2, tie_word_embeddings=True)
    return _save(model, str(tmp_path_factory.mktemp('qwen2')))


@pytest.fixture(params=['gpt2', 'qwen2'])
def model_dir(request, gpt2_dir, qwen2_dir) -> str:
    return gpt2_dir if request.param == 'gpt2' else qwen2_dir


@pytest.fixture(scope='session')
def mistral_dir(tmp_path_factory) -> str:
    """Mistral with a sliding window of 6 positions: sequences longer than that read only the last 6."""
    from transformers import MistralConfig, MistralForCausalLM

    model = _llama_family(MistralConfig, MistralForCausalLM, 3, num_key_value_heads=1, sliding_window=6)
    return _save(model, str(tmp_path_factory.mktemp('mistral')))
