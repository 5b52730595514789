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


@pytest.fixture(scope='session')
def qwen2_dir(tmp_path_factory) -> str:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(2)
    cfg = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
    )
    return _save(Qwen2ForCausalLM(cfg), str(tmp_path_factory.mktemp('qwen2')))


@pytest.fixture(params=['gpt2', 'qwen2'])
def model_dir(request, gpt2_dir, qwen2_dir) -> str:
    return gpt2_dir if request.param == 'gpt2' else qwen2_dir


@pytest.fixture(scope='session')
def mistral_dir(tmp_path_factory) -> str:
    """A sliding window of 6 positions: sequences longer than that read only the last 6."""
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(3)
    cfg = MistralConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        max_position_embeddings=64,
        sliding_window=6,
        bos_token_id=1,
        eos_token_id=2,
    )
    return _save(MistralForCausalLM(cfg), str(tmp_path_factory.mktemp('mistral')))
