"""bench:gpu: the torch engine on a GPU, through its own protocol, beside the peers in the same run.

    python3 bench/gpu.py [--quick] [--shapes qwen2-0.5b,qwen2-1.5b] [--out bench/results/gpu.json]
    python3 bench/gpu.py --plan          # what fits on 24 / 48 / 80 GB (computed, no GPU needed)

Needs only PyTorch and transformers (the lent GPU machines have no Node and no network): models are random-init
Qwen2 shapes made here (no downloads). For each shape, in one run:
  - the engine (`python -m agl_torch serve`, driven over its Unix socket exactly as the daemon drives it, bfloat16):
    generate 64 rows x (128 prompt + 256 new), score 32 x 512, a GRPO train_step on 32 x 512 (micro-batch 16), and a
    LoRA train_step (r 16 on q/v) on the same batch; tokens/s and peak memory of each;
  - the peers: transformers' own `generate` on the same prompts (sampling, 256 new tokens a row), and a plain PyTorch
    training step (bfloat16 model, full logits, fused AdamW) on the same batch;
  - first, a check: the engine's decoder (its CUDA graphs on a GPU) and transformers' forward sample the same tokens
    for the same seeds (tiny shape, float32), with the log-probs' largest difference;
  - ratios engine / peer, model FLOP utilisation (6 x parameters + attention per trained token) against the device's
    dense bfloat16 peak (from its name where known) and against a bf16 matmul measured in the same run.
Without a GPU it runs the tiny shape on the CPU in float32 and says a GPU was not seen. Results: bench/results/gpu.json
({date, machine, metrics}).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.path.join(HERE, '..', 'engines', 'torch')
sys.path.insert(0, ENGINE)

# Qwen2 shapes (the published configs' sizes; weights random): hidden, MLP, layers, heads, KV heads, vocabulary, tied head
SHAPES = {
    'tiny': (128, 344, 4, 4, 2, 4096, True),
    'qwen2-0.5b': (896, 4864, 24, 14, 2, 151936, True),
    'qwen2-1.5b': (1536, 8960, 28, 12, 2, 151936, True),
    'qwen2-7b': (3584, 18944, 28, 28, 4, 152064, False),
}
# The engine's AdamW settings in this bench, all of them, as the daemon gives an engine its configured ones at start
# (the daemon's are protocol/engine.ts DEFAULT_OPTIMIZER; this script runs where no Node is). Each update sends its own.
SETTINGS = {'lr': 1e-6, 'beta1': 0.9, 'beta2': 0.95, 'eps': 1e-8, 'weightDecay': 0.01, 'gradClip': 1.0, 'microBatchSize': 16}
# Dense bfloat16 tensor-core peaks (TFLOP/s, no sparsity) by device name, from the vendors' data sheets.
PEAKS = {
    'H200': 989,
    'H100 80GB HBM3': 989,
    'H100 SXM': 989,
    'H100 PCIe': 756,
    'H100 NVL': 835,
    'A100': 312,
    'L40S': 362,
    'L4': 121,
    'A10G': 125,
    'RTX 4090': 165,
}


def qwen2_config(shape: str):
    from transformers import Qwen2Config

    h, mlp, layers, heads, kv, vocab, tied = SHAPES[shape]
    return Qwen2Config(
        hidden_size=h,
        intermediate_size=mlp,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        vocab_size=vocab,
        max_position_embeddings=4096,
        tie_word_embeddings=tied,
        bos_token_id=0,
        eos_token_id=1,
    )


def make_model(shape: str, folder: str, dtype: torch.dtype) -> None:
    from transformers import Qwen2ForCausalLM

    torch.manual_seed(0)
    with torch.device('cuda' if torch.cuda.is_available() else 'cpu'):
        model = Qwen2ForCausalLM(qwen2_config(shape)).to(dtype)
    model.save_pretrained(folder)
    del model


# ---- the engine, driven as the daemon drives it -----------------------------------------------------------------


class EngineProcess:
    def __init__(self, folder: str, device: str, dtype: str, extra: list[str]):
        self.dir = tempfile.mkdtemp(prefix='agl-bench-gpu-')
        path = os.path.join(self.dir, 'engine.sock')
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        env = {**os.environ, 'PYTHONPATH': ENGINE + os.pathsep + os.environ.get('PYTHONPATH', ''), 'HF_HUB_OFFLINE': '1'}
        cmd = [sys.executable, '-m', 'agl_torch', 'serve', '--connect', path, '--model', folder, '--device', device, '--dtype', dtype]
        cmd += ['--optimizer', json.dumps(SETTINGS), *extra]
        self.proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        server.settimeout(600)
        self.sock, _ = server.accept()
        self.reader = self.sock.makefile('rb')
        self.hello = self._read()
        if self.hello.get('event') != 'ready':
            raise RuntimeError(f'the engine did not start: {self.hello}')
        self.next_id = 1

    def _read(self) -> dict:
        line = self.reader.readline()
        if not line:
            raise RuntimeError(f'the engine went away: {self.proc.stderr.read()[-3000:]}')
        return json.loads(line)

    def call(self, method: str, params: dict):
        rid, self.next_id = self.next_id, self.next_id + 1
        self.sock.sendall((json.dumps({'id': rid, 'method': method, 'params': params}) + '\n').encode())
        while True:
            msg = self._read()
            if msg.get('id') == rid and 'event' not in msg:
                if 'error' in msg:
                    raise RuntimeError(f'{method}: {msg["error"]["message"]}')
                return msg['result'], msg.get('memory')

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.call('shutdown', {})
        self.proc.wait(timeout=120)


def timed(fn, repeats: int = 1):
    """(the last result, the best seconds of `repeats` runs after one warm-up)."""
    result = fn()
    best = float('inf')
    for _ in range(repeats):
        sync()
        t = time.perf_counter()
        result = fn()
        sync()
        best = min(best, time.perf_counter() - t)
    return result, best


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def workload(vocab: int, quick: bool) -> dict:
    g = torch.Generator().manual_seed(1)
    rows, prompt, new = (64, 128, 256) if not quick else (8, 32, 32)
    pairs_n, half = (32, 256) if not quick else (8, 64)
    return {
        'prompts': torch.randint(2, vocab, (rows, prompt), generator=g).tolist(),
        'new': new,
        'pairs': [
            {'promptIds': torch.randint(2, vocab, (half,), generator=g).tolist(), 'completionIds': torch.randint(2, vocab, (half,), generator=g).tolist()}
            for _ in range(pairs_n)
        ],
        'micro': 16 if not quick else 4,
    }


def grpo(pairs: list[dict], old: list[list[float]]) -> dict:
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
        'ratioBase': 'update',
        'tisCap': 3.0,
        'samples': [{'advantage': (-1.0) ** i * 0.5, 'oldLogprobs': o} for i, o in enumerate(old)],
    }


def engine_rows(folder: str, device: str, dtype: str, w: dict, repeats: int) -> dict:
    """The engine's generate, score, train_step and LoRA train_step, through its protocol."""
    out = {}
    e = EngineProcess(folder, device, dtype, [])
    try:
        gen = {'prompts': w['prompts'], 'maxTokens': w['new'], 'temperature': 1.0, 'seed': 3, 'eos': [], 'stream': False}
        (_, mem), t = timed(lambda: e.call('generate', gen), repeats)
        out['generate_tok_s'], out['generate_peak_gb'] = len(w['prompts']) * w['new'] / t, mem['bytes'] / 2**30
        out['decoder'] = e.hello['data']['model'].get('decoder')
        tokens = sum(len(p['promptIds']) + len(p['completionIds']) for p in w['pairs'])
        (old, _), t = timed(lambda: e.call('score', {'pairs': w['pairs']}), repeats)
        out['score_tok_s'] = tokens / t
        step = {'pairs': w['pairs'], 'loss': grpo(w['pairs'], old), 'optimizer': {**SETTINGS, 'microBatchSize': w['micro']}}
        (r, _), t = timed(lambda: e.call('train_step', step), repeats)
        out['train_tok_s'], out['train_peak_gb'] = tokens / t, r['peakMemory']['bytes'] / 2**30
    finally:
        e.close()
    e = EngineProcess(folder, device, dtype, ['--trainable', 'adapters'])
    try:
        lora = {'rank': 16, 'alpha': 32, 'dropout': 0, 'targetModules': ['q_proj', 'v_proj']}
        e.call('add_adapter', {'name': 'policy', 'init': None, 'lora': lora, 'optimizer': SETTINGS})
        (r, _), t = timed(lambda: e.call('train_step', {**step, 'adapter': 'policy'}), repeats)
        out['lora_train_tok_s'], out['lora_train_peak_gb'] = tokens / t, r['peakMemory']['bytes'] / 2**30
    finally:
        e.close()
    return out


def decoders_agree(device: str, quick: bool) -> dict:
    """The engine's lean decoder (CUDA graphs on a GPU, its own cache run eagerly on CPU) against transformers' forward
    (--decoder eager) in float32 on the tiny shape: the share of rows sampled to the same tokens, and the largest
    log-prob difference."""
    with tempfile.TemporaryDirectory(prefix='agl-decoders-') as folder:
        make_model('tiny', folder, torch.float32)
        w = workload(SHAPES['tiny'][5], True)
        gen = {'prompts': [p[: 8 + 3 * i] for i, p in enumerate(w['prompts'])], 'maxTokens': 24, 'temperature': 1.0, 'seed': 5, 'eos': [1], 'stream': False}
        lean = 'auto' if device == 'cuda' else 'lean'  # auto decodes eagerly on CPU
        outs = {}
        for decoder in (lean, 'eager'):
            e = EngineProcess(folder, device, 'float32', ['--decoder', decoder])
            try:
                outs[decoder] = (e.call('generate', gen)[0], e.hello['data']['model'].get('decoder'))
            finally:
                e.close()
    (fast, name), (eager, _) = outs[lean], outs['eager']
    same = sum(a['tokenIds'] == b['tokenIds'] for a, b in zip(fast, eager)) / len(fast)
    gap = max((abs(x - y) for a, b in zip(fast, eager) for x, y in zip(a['logprobs'], b['logprobs'])), default=0.0)
    print(f'decoders: {name} vs eager on the tiny shape in float32: {same:.0%} of rows the same tokens, log-probs within {gap:.1e}', flush=True)
    return {'decoders.same_tokens_share': same, 'decoders.max_logprob_diff': gap}


# ---- the peers ------------------------------------------------------------------------------------------------------


def peer_rows(folder: str, device: str, dtype: torch.dtype, w: dict, repeats: int) -> dict:
    """transformers' generate, and a plain PyTorch training step with fused AdamW, on the same model and batch."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation='sdpa').to(device)
    ids = torch.tensor(w['prompts'], device=device)
    gen = dict(max_new_tokens=w['new'], min_new_tokens=w['new'], do_sample=True, temperature=1.0, top_k=0, top_p=1.0, pad_token_id=0)
    with torch.no_grad():
        _, t = timed(lambda: model.generate(ids, attention_mask=torch.ones_like(ids), **gen), repeats)
    out = {'generate_tok_s': len(w['prompts']) * w['new'] / t}
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=device == 'cuda')
    seqs = torch.tensor([p['promptIds'] + p['completionIds'] for p in w['pairs']], device=device)
    half = len(w['pairs'][0]['completionIds'])
    adv = torch.tensor([(-1.0) ** i * 0.5 for i in range(len(w['pairs']))], device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        for k in range(0, seqs.shape[0], w['micro']):
            s = seqs[k : k + w['micro']]
            logits = model(input_ids=s).logits[:, -half - 1 : -1].float()
            logp = torch.log_softmax(logits, -1).gather(-1, s[:, -half:, None]).squeeze(-1)
            (-(adv[k : k + w['micro'], None] * logp).sum() / (seqs.shape[0] * half)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    reset_peak()
    _, t = timed(step, repeats)
    out['train_tok_s'] = seqs.numel() / t
    out['train_peak_gb'] = peak_gb()
    return out


def reset_peak() -> None:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_gb() -> float:
    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0


# ---- FLOPs --------------------------------------------------------------------------------------------------------


def train_flops_per_token(shape: str, seq: int) -> float:
    """6 x (parameters the token passes through, the head's matmul included) + attention's 12 x layers x width x seq."""
    h, mlp, layers, heads, kv, vocab, _ = SHAPES[shape]
    head_dim = h // heads
    per_layer = h * (heads * head_dim) * 2 + h * (kv * head_dim) * 2 + 3 * h * mlp
    return 6 * (layers * per_layer + vocab * h) + 12 * layers * h * seq


def matmul_peak(device: str, dtype: torch.dtype) -> float:
    """The best TFLOP/s of a square matmul in this run (the machine's own ceiling)."""
    n = 8192 if device == 'cuda' else 1024
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    _, t = timed(lambda: a @ b, 5)
    return 2 * n**3 / t / 1e12


def spec_peak(name: str) -> float | None:
    for key, tflops in PEAKS.items():
        if key in name:
            return float(tflops)
    return None


# ---- what fits (computed) -----------------------------------------------------------------------------------------

PLAN_MODES = {
    'full bf16': 'weights 2 + gradients 2 + float32 master 4 + moments 8 = 16 bytes per parameter, activations kept',
    'full bf16 + checkpointing': 'the same states; activations: each layer recomputed in the backward pass',
    'LoRA r16 (q,v) + checkpointing': 'a frozen bf16 base (2 bytes per parameter), the adapter trained (16 bytes per adapter parameter)',
    'full bf16, FSDP over 8 GPUs + checkpointing': 'the 16 bytes per parameter split over 8 ranks, one layer gathered at a time',
}


def parameters(shape: str) -> tuple[int, int]:
    """(all parameters, LoRA r16 on q and v)."""
    h, mlp, layers, heads, kv, vocab, tied = SHAPES[shape]
    hd = h // heads
    per_layer = h * heads * hd * 2 + h * kv * hd * 2 + 3 * h * mlp + heads * hd + 2 * kv * hd + 2 * h
    total = layers * per_layer + vocab * h * (1 if tied else 2) + h
    lora = layers * 16 * ((h + heads * hd) + (h + kv * hd))
    return total, lora


def plan_gb(shape: str, mode: str, tokens: int = 8192) -> float:
    """Peak GB of one train step of a `tokens`-token micro-batch: states + activations + the head's logit chunks."""
    h, layers = SHAPES[shape][0], SHAPES[shape][2]
    n, lora = parameters(shape)
    checkpointed = 'checkpointing' in mode
    act = tokens * layers * 2 * h + tokens * 34 * h if checkpointed else tokens * layers * 34 * h  # bf16 activations
    logits = 3 * 256 * 2**20  # one chunk's float32 logits, their gradient, the softmax
    if mode.startswith('LoRA'):
        states = 2 * n + 16 * lora
    elif 'FSDP' in mode:
        states = 16 * n / 8 + 2 * 2 * (n / layers)  # a gathered layer and the next one's prefetch
    else:
        states = 16 * n
    return (states + act + logits) / 1e9


def plan() -> str:
    lines = [
        '| model | parameters | how | GB (micro-batch 16 x 512) | 24 GB | 48 GB | 80 GB |',
        '| --- | --- | --- | --- | --- | --- | --- |',
    ]
    for shape in ('qwen2-0.5b', 'qwen2-1.5b', 'qwen2-7b'):
        n, _ = parameters(shape)
        for mode in PLAN_MODES:
            gb = plan_gb(shape, mode)
            fits = ['yes' if gb < cap * 0.9 else 'no' for cap in (24, 48, 80)]  # 10% for the allocator and CUDA context
            lines.append(f'| {shape} | {n / 1e9:.2f}B | {mode} | {gb:.1f} | {" | ".join(fits)} |')
    return '\n'.join(lines)


# ---- the run --------------------------------------------------------------------------------------------------------


def bench_shape(shape: str, device: str, quick: bool, repeats: int) -> dict:
    dtype_name = 'bfloat16' if device == 'cuda' else 'float32'
    dtype = getattr(torch, dtype_name)
    with tempfile.TemporaryDirectory(prefix=f'agl-{shape}-') as folder:
        make_model(shape, folder, dtype)
        w = workload(SHAPES[shape][5], quick)
        engine = engine_rows(folder, device, dtype_name, w, repeats)
        reset_peak()
        peer = peer_rows(folder, device, dtype, w, repeats)
    seq = len(w['pairs'][0]['promptIds']) * 2
    flops = train_flops_per_token(shape, seq)
    m = {f'{shape}.engine.{k}': v for k, v in engine.items() if k != 'decoder'}
    m.update({f'{shape}.peer.{k}': v for k, v in peer.items()})
    m[f'{shape}.generate_ratio_vs_transformers'] = engine['generate_tok_s'] / peer['generate_tok_s']
    m[f'{shape}.train_ratio_vs_pytorch'] = engine['train_tok_s'] / peer['train_tok_s']
    m[f'{shape}.engine.train_tflops'] = engine['train_tok_s'] * flops / 1e12
    m[f'{shape}.peer.train_tflops'] = peer['train_tok_s'] * flops / 1e12
    print(f'{shape}: decoder {engine["decoder"]}', flush=True)
    return m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='bench/gpu.py')
    ap.add_argument('--quick', action='store_true', help='a smaller workload (minutes, not tens of minutes)')
    ap.add_argument('--shapes', default=None, help='comma-separated: tiny, qwen2-0.5b, qwen2-1.5b (default: 0.5b and 1.5b on a GPU, tiny on a CPU)')
    ap.add_argument('--out', default=os.path.join(HERE, 'results', 'gpu.json'))
    ap.add_argument('--plan', action='store_true', help='print what fits on 24 / 48 / 80 GB (computed) and exit')
    a = ap.parse_args(argv)
    if a.plan:
        print(plan())
        return 0
    gpu = torch.cuda.is_available()
    device = 'cuda' if gpu else 'cpu'
    shapes = a.shapes.split(',') if a.shapes else (['qwen2-0.5b', 'qwen2-1.5b'] if gpu else ['tiny'])
    name = torch.cuda.get_device_name(0) if gpu else 'cpu'
    if not gpu:
        print('bench:gpu: no CUDA device is visible: running the tiny shape on the CPU in float32 (no GPU figures)', flush=True)
    metrics: dict = {'gpu_seen': 1.0 if gpu else 0.0, **decoders_agree(device, a.quick)}
    peak = matmul_peak(device, torch.bfloat16 if gpu else torch.float32)
    metrics['matmul_tflops'] = peak
    spec = spec_peak(name) if gpu else None
    for shape in shapes:
        m = bench_shape(shape, device, a.quick, 1 if a.quick else 3)
        for who in ('engine', 'peer'):
            t = m[f'{shape}.{who}.train_tflops']
            m[f'{shape}.{who}.mfu_vs_matmul'] = t / peak
            if spec:
                m[f'{shape}.{who}.mfu'] = t / spec
        metrics.update(m)
    report(metrics, name, spec)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    machine = f'{name}, torch {torch.__version__}, CUDA {torch.version.cuda}' if gpu else f'cpu ({os.cpu_count()} cores), torch {torch.__version__}'
    with open(a.out, 'w') as f:
        json.dump({'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'machine': machine, 'quick': a.quick, 'metrics': metrics}, f, indent=2)
    print(f'bench:gpu: wrote {a.out}')
    return 0


def report(metrics: dict, name: str, spec: float | None) -> None:
    print(f'device: {name}; bf16 matmul in this run: {metrics["matmul_tflops"]:.0f} TFLOP/s; data sheet: {spec or "unknown"}')
    for key, value in sorted(metrics.items()):
        print(f'  {key:55s} {value:12.3f}')


if __name__ == '__main__':
    sys.exit(main())
