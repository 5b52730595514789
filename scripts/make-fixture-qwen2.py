"""Makes the tiny random Qwen2 fixtures that test/model/reference.test.ts compares our engine against.

For each variant (untied and tied head) it writes, under test/model/fixtures/<name>/:
  config.json, model.safetensors   a tiny random Qwen2 (float32, HF layout)
  reference.safetensors            input_ids [2, 12] and the reference logits [2, 12, vocab] (float32);
                                   metadata "reference" says which implementation produced them

With Hugging Face transformers installed (a GPU/ML box: pip install torch transformers), the model is
Qwen2ForCausalLM and the logits are transformers' own. Without it (e.g. Debian, where only python3-torch
is packaged) it falls back to an independent PyTorch implementation of Qwen2 written below from the
architecture definition, and says so in the metadata. Force one with --reference transformers|torch.

  /usr/bin/python3 scripts/make-fixture-qwen2.py [--out test/model/fixtures] [--reference auto]
"""
import argparse
import json
import math
import os
import struct

import torch

CONFIG = dict(
    architectures=['Qwen2ForCausalLM'], model_type='qwen2', vocab_size=256, hidden_size=32, intermediate_size=64,
    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6,
    rope_theta=10000.0, hidden_act='silu', torch_dtype='float32', use_sliding_window=False, attention_dropout=0.0,
)


def write_safetensors(path, tensors, metadata=None):
    """Minimal safetensors writer (the safetensors package may not be installed)."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header['__metadata__'] = metadata
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        dtype = {torch.float32: 'F32', torch.int64: 'I64'}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {'dtype': dtype, 'shape': list(t.shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def random_weights(cfg, seed):
    """HF Qwen2 tensor names and [out, in] layouts, small random values (norm weights near 1)."""
    g = torch.Generator().manual_seed(seed)
    d, ff, v = cfg['hidden_size'], cfg['intermediate_size'], cfg['vocab_size']
    kv = cfg['num_key_value_heads'] * d // cfg['num_attention_heads']
    shapes = {'model.embed_tokens.weight': (v, d), 'model.norm.weight': (d,)}
    if not cfg['tie_word_embeddings']:
        shapes['lm_head.weight'] = (v, d)
    for i in range(cfg['num_hidden_layers']):
        p = f'model.layers.{i}.'
        shapes.update({
            p + 'input_layernorm.weight': (d,), p + 'post_attention_layernorm.weight': (d,),
            p + 'self_attn.q_proj.weight': (d, d), p + 'self_attn.q_proj.bias': (d,),
            p + 'self_attn.k_proj.weight': (kv, d), p + 'self_attn.k_proj.bias': (kv,),
            p + 'self_attn.v_proj.weight': (kv, d), p + 'self_attn.v_proj.bias': (kv,),
            p + 'self_attn.o_proj.weight': (d, d),
            p + 'mlp.gate_proj.weight': (ff, d), p + 'mlp.up_proj.weight': (ff, d), p + 'mlp.down_proj.weight': (d, ff),
        })
    w = {}
    for name, shape in shapes.items():
        x = (torch.rand(shape, generator=g) * 2 - 1) * 0.3
        w[name] = 1 + x * 0.3 if name.endswith('norm.weight') else x
    return w


def torch_qwen2_logits(cfg, w, ids):
    """Independent Qwen2 forward (float32): RMSNorm, RoPE (rotate_half), GQA, SwiGLU, causal attention."""
    B, T = ids.shape
    d, H, Hkv = cfg['hidden_size'], cfg['num_attention_heads'], cfg['num_key_value_heads']
    hd, eps = d // H, cfg['rms_norm_eps']

    def rms(x, weight):
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    inv_freq = 1.0 / (cfg['rope_theta'] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = torch.arange(T).float()[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], -1)
    cos, sin = emb.cos(), emb.sin()

    def rope(x):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    x = w['model.embed_tokens.weight'][ids]
    mask = torch.full((T, T), float('-inf')).triu(1)
    for i in range(cfg['num_hidden_layers']):
        p = f'model.layers.{i}.'
        h = rms(x, w[p + 'input_layernorm.weight'])
        q = h @ w[p + 'self_attn.q_proj.weight'].T + w[p + 'self_attn.q_proj.bias']
        k = h @ w[p + 'self_attn.k_proj.weight'].T + w[p + 'self_attn.k_proj.bias']
        v = h @ w[p + 'self_attn.v_proj.weight'].T + w[p + 'self_attn.v_proj.bias']
        q = rope(q.view(B, T, H, hd).transpose(1, 2))
        k = rope(k.view(B, T, Hkv, hd).transpose(1, 2)).repeat_interleave(H // Hkv, dim=1)
        v = v.view(B, T, Hkv, hd).transpose(1, 2).repeat_interleave(H // Hkv, dim=1)
        att = ((q @ k.transpose(-2, -1)) / math.sqrt(hd) + mask).softmax(-1)
        x = x + (att @ v).transpose(1, 2).reshape(B, T, d) @ w[p + 'self_attn.o_proj.weight'].T
        h = rms(x, w[p + 'post_attention_layernorm.weight'])
        gate = h @ w[p + 'mlp.gate_proj.weight'].T
        x = x + (torch.nn.functional.silu(gate) * (h @ w[p + 'mlp.up_proj.weight'].T)) @ w[p + 'mlp.down_proj.weight'].T
    head = w['model.embed_tokens.weight'] if cfg['tie_word_embeddings'] else w['lm_head.weight']
    return rms(x, w['model.norm.weight']) @ head.T


def make(out_dir, name, tie, reference):
    cfg = dict(CONFIG, tie_word_embeddings=tie)
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    w = random_weights(cfg, seed=7 if tie else 3)
    ids = torch.randint(0, cfg['vocab_size'], (2, 12), generator=torch.Generator().manual_seed(11))
    if reference == 'transformers':
        import transformers
        from transformers import Qwen2Config, Qwen2ForCausalLM
        model = Qwen2ForCausalLM(Qwen2Config(**cfg)).float().eval()
        model.load_state_dict(w, strict=False)  # our random values, so both references see the same weights
        if tie:
            model.tie_weights()
        model.save_pretrained(d, safe_serialization=True)
        with torch.no_grad():
            logits = model(ids).logits.float()
        label = f'transformers {transformers.__version__} Qwen2ForCausalLM'
    else:
        write_safetensors(os.path.join(d, 'model.safetensors'), w, {'format': 'pt'})
        with open(os.path.join(d, 'config.json'), 'w') as f:
            json.dump(cfg, f, indent=2)
        with torch.no_grad():
            logits = torch_qwen2_logits(cfg, w, ids)
        label = f'independent PyTorch {torch.__version__} Qwen2 (scripts/make-fixture-qwen2.py)'
    write_safetensors(os.path.join(d, 'reference.safetensors'), {'input_ids': ids, 'logits': logits.contiguous()}, {'reference': label})
    print(f'{d}: {label}, logits {tuple(logits.shape)}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', default=os.path.join(os.path.dirname(__file__), '..', 'test', 'model', 'fixtures'))
    ap.add_argument('--reference', choices=['auto', 'transformers', 'torch'], default='auto')
    a = ap.parse_args()
    reference = a.reference
    if reference == 'auto':
        try:
            import transformers  # noqa: F401
            reference = 'transformers'
        except ImportError:
            reference = 'torch'
            print('transformers is not installed: using the independent PyTorch Qwen2 implementation')
    torch.manual_seed(0)
    make(a.out, 'qwen2-tiny', False, reference)
    make(a.out, 'qwen2-tiny-tied', True, reference)


if __name__ == '__main__':
    main()
