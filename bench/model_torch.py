"""PyTorch peer for bench/model.ts: the same built-in GPT (learned positions, LayerNorm, tanh-GELU MLP,
fused qkv, tied head), float32 on the CPU, same batch and sequence length; prints one JSON line.

Run with Debian's interpreter: /usr/bin/python3 bench/model_torch.py --size 0.8m --batch 16 --seq 128
(apt-get install -y python3-torch libopenblas0-pthread; without OpenBLAS torch is ~7x slower).
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {'0.8m': dict(d=128, layers=4, heads=4), '5m': dict(d=256, layers=6, heads=8)}


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, cache=None):
        B, T, d = x.shape
        hd = d // self.heads
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (t.view(B, T, self.heads, hd).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        Tk = k.shape[2]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        mask = torch.ones(T, Tk, dtype=torch.bool).tril(Tk - T)
        att = att.masked_fill(~mask, float('-inf')).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, d)
        x = x + self.c_proj(y)
        x = x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate='tanh'))
        return x, (k, v)


class GPT(nn.Module):
    def __init__(self, vocab, ctx, d, layers, heads):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.h = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids, caches=None, past=0):
        pos = torch.arange(past, past + ids.shape[1])
        x = self.wte(ids) + self.wpe(pos)
        new = []
        for i, blk in enumerate(self.h):
            x, c = blk(x, None if caches is None else caches[i])
            new.append(c)
        return self.ln_f(x) @ self.wte.weight.t(), new


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--size', default='0.8m')
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--seq', type=int, default=128)
    ap.add_argument('--steps', type=int, default=5)
    ap.add_argument('--new-tokens', type=int, default=64)
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    vocab = 264
    model = GPT(vocab, a.seq, **SIZES[a.size])
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ids = torch.randint(0, vocab, (a.batch, a.seq))

    def step():
        logits, _ = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    train_s = (time.perf_counter() - t0) / a.steps

    prompt_len = 8
    with torch.no_grad():
        def sample():
            logits, caches = model(ids[:, :prompt_len])
            for t in range(a.new_tokens):
                nxt = torch.multinomial(logits[:, -1].softmax(-1), 1)
                logits, caches = model(nxt, caches, prompt_len + t)
        sample()
        t0 = time.perf_counter()
        sample()
        sample_s = time.perf_counter() - t0

    n = 2048
    x, y = torch.randn(n, n), torch.randn(n, n)
    x @ y
    t0 = time.perf_counter()
    for _ in range(5):
        x @ y
    gflops = 2 * n ** 3 * 5 / (time.perf_counter() - t0) / 1e9
    print(json.dumps({
        'size': a.size, 'params': params, 'threads': torch.get_num_threads(), 'torch': torch.__version__,
        'train_tok_s': a.batch * a.seq / train_s, 'sample_tok_s': a.batch * a.new_tokens / sample_s,
        'matmul_gflops': gflops,
    }))


if __name__ == '__main__':
    main()
