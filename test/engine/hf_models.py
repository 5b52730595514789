"""Reference side of test/engine/*.test.ts: tiny random models made and run by Hugging Face transformers itself.

  make --out DIR          tiny random Llama, Qwen2 and GPT-2 (float32), each saved by save_pretrained with a byte-level
                          BPE tokenizer trained here and a ChatML chat template (tools included); beside each model
                          reference.json: input ids, transformers' logits (eager attention, float32) and its greedy
                          continuations; DIR/chats.json: conversations and the ids apply_chat_template gives them.
  logprobs --model DIR    reads {"pairs": [{promptIds, completionIds}]} on stdin, prints transformers' log-probs of each
                          completion token given its prompt (eager, float32), one row per pair.

Everything is seeded: the same transformers version makes the same files. transformers 5 defaults to dtype="auto" and
SDPA attention, and keeps RoPE settings in config.rope_parameters: the models here pin float32 and eager attention
and set a RoPE theta other than the default, so a reader that missed rope_parameters would be caught.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

CHAT_TEMPLATE = """{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}
{{- '\\n\\n# Tools\\n\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}
{{- '\\n</tools><|im_end|>\\n' }}
{%- elif messages[0]['role'] == 'system' %}
{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' and message.tool_calls %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for tc in message.tool_calls %}
{{- '\\n<tool_call>\\n{"name": "' + tc.function.name + '", "arguments": ' + (tc.function.arguments | tojson) + '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""

CORPUS = [
    'Ann has 23 pens and gets 15 more. How many pens does she have?',
    'The answer is 38. Use the calculator: calc(23+15) = 38.',
    "Which department is Otto in? SELECT department FROM employees WHERE name = 'Otto';",
    'Search the documents for the capital of Saquorsa, then answer with one word.',
    'You are a helpful assistant. Think step by step, then call a tool or answer.',
    'Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 100 1000 3.14 -7 42*17 (8/2)+1',
    'Unicode too: café, naïve, Zürich, 東京, emoji 🙂 and tabs\tand\nnewlines.',
]

CHATS = [
    {'messages': [{'role': 'user', 'content': 'What is 23+15?'}]},
    {
        'messages': [
            {'role': 'system', 'content': 'You add numbers.'},
            {'role': 'user', 'content': 'Ann has 23 pens, gets 15 more. How many?'},
            {'role': 'assistant', 'content': '38'},
            {'role': 'user', 'content': 'And 7 more? Café 🙂'},
        ]
    },
    {
        'tools': [
            {
                'type': 'function',
                'function': {
                    'name': 'calc',
                    'description': 'Evaluates an arithmetic expression',
                    'parameters': {'type': 'object', 'properties': {'expression': {'type': 'string'}}, 'required': ['expression']},
                },
            }
        ],
        'messages': [
            {'role': 'user', 'content': 'What is 42*17?'},
            {
                'role': 'assistant',
                'content': None,
                'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {'name': 'calc', 'arguments': {'expression': '42*17'}}}],
            },
            {'role': 'tool', 'tool_call_id': 'c1', 'content': '714'},
        ],
    },
]


def make_tokenizer(out_dir: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=['<|endoftext|>', '<|im_start|>', '<|im_end|>'],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 4 + [json.dumps(c) for c in CHATS], trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token='<|im_end|>', pad_token='<|endoftext|>')
    fast.chat_template = CHAT_TEMPLATE
    return fast


def chat_ids(fast, chat: dict, generation_prompt: bool) -> list[int]:
    out = fast.apply_chat_template(chat['messages'], tools=chat.get('tools'), add_generation_prompt=generation_prompt, tokenize=True)
    if hasattr(out, 'keys'):  # transformers 5 returns a BatchEncoding
        out = out['input_ids']
    return list(out)


def model_for(family: str, vocab: int, eos: int, pad: int):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    common = dict(vocab_size=vocab, eos_token_id=eos, pad_token_id=pad, bos_token_id=None)
    if family == 'gpt2':
        cfg = GPT2Config(
            n_positions=128,
            n_embd=32,
            n_layer=2,
            n_head=4,
            activation_function='gelu_new',
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            layer_norm_epsilon=1e-5,
            **common,
        )
        return GPT2LMHeadModel(cfg)
    rope = {'rope_type': 'default', 'rope_theta': 5000.0}
    shape = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        rms_norm_eps=1e-6,
        hidden_act='silu',
        rope_parameters=rope,
    )
    if family == 'llama':
        return LlamaForCausalLM(LlamaConfig(tie_word_embeddings=False, attention_bias=False, **shape, **common))
    return Qwen2ForCausalLM(Qwen2Config(tie_word_embeddings=True, use_sliding_window=False, **shape, **common))


def make(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    fast = make_tokenizer(out)
    chats = []
    for c in CHATS:
        chats.append({**c, 'ids': chat_ids(fast, c, True), 'idsNoGenerationPrompt': chat_ids(fast, c, False)})
    with open(os.path.join(out, 'chats.json'), 'w') as f:
        json.dump(chats, f)
    texts = [fast.encode(CORPUS[0], add_special_tokens=False), fast.encode(CORPUS[2], add_special_tokens=False)]
    T = min(len(t) for t in [*texts, list(range(16))])
    ids = torch.tensor([t[:T] for t in texts], dtype=torch.long)
    for seed, family in enumerate(['llama', 'qwen2', 'gpt2']):
        torch.manual_seed(100 + seed)
        model = model_for(family, len(fast), fast.convert_tokens_to_ids('<|im_end|>'), fast.convert_tokens_to_ids('<|endoftext|>'))
        with torch.no_grad():  # larger than the default init, so the logits differ across tokens enough to mean something
            for p in model.parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, 0.2)
        model = model.float().eval()
        folder = os.path.join(out, family)
        model.save_pretrained(folder)
        fast.save_pretrained(folder)
        from transformers import AutoModelForCausalLM

        again = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation='eager').eval()
        with torch.no_grad():
            logits = again(input_ids=ids).logits
            greedy = []
            for row in ids:
                g = again.generate(
                    row[None, :8],
                    attention_mask=torch.ones((1, 8), dtype=torch.long),
                    max_new_tokens=12,
                    do_sample=False,
                    eos_token_id=None,
                    pad_token_id=fast.pad_token_id,
                )
                greedy.append(g[0, 8:].tolist())
        with open(os.path.join(folder, 'reference.json'), 'w') as f:
            json.dump(
                {
                    'inputIds': ids.tolist(),
                    'logits': logits.reshape(-1).tolist(),
                    'shape': list(logits.shape),
                    'greedyFrom': 8,
                    'greedy': greedy,
                    'transformers': __import__('transformers').__version__,
                },
                f,
            )
    print(json.dumps({'ok': True, 'out': out, 'vocab': len(fast)}))


def logprobs(model_dir: str) -> None:
    from transformers import AutoModelForCausalLM

    pairs = json.load(sys.stdin)['pairs']
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation='eager').eval()
    rows = []
    with torch.no_grad():
        for p in pairs:
            seq = torch.tensor([p['promptIds'] + p['completionIds']], dtype=torch.long)
            logp = torch.log_softmax(model(input_ids=seq).logits[0].float(), -1)
            P = len(p['promptIds'])
            rows.append([float(logp[P - 1 + t, tok]) for t, tok in enumerate(p['completionIds'])])
    print(json.dumps({'logprobs': rows}))


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest='cmd', required=True)
    m = sub.add_parser('make')
    m.add_argument('--out', required=True)
    lp = sub.add_parser('logprobs')
    lp.add_argument('--model', required=True)
    a = ap.parse_args()
    make(a.out) if a.cmd == 'make' else logprobs(a.model)
