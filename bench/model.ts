/**
 * `npm run bench:model [-- --quick]`: training tokens/s (forward + backward + AdamW) and KV-cache sampling tokens/s
 * of the built-in GPT at sizes 0.8m and 5m, in the same run:
 *   - per available TF.js backend (each in its own process: the backend is process-wide): `<size>.<backend>.*`;
 *   - our torch engine (engines/torch: transformers' GPT2LMHeadModel in a child process) measured through the policy
 *     contract from the daemon's side, the process boundary and JSON included, with 1 and 2 torch threads:
 *     `<size>.engine_torch.*` (the better of the two), `<size>.engine_torch_<n>thread.*`;
 *   - a standalone PyTorch peer of the same model (bench/model_torch.py, no engine around it): `<size>.torch.*`.
 * The torch engine's Python: AGL_PYTHON, else the venv of `agl engine install torch`, else python3; the peer runs on
 * that Python too when it has torch, else on Debian's /usr/bin/python3. Writes bench/results/model.json.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import type { SequencePair, TrainLoss } from '../daemon/model/policy-contract.js';

interface Run {
  train_tok_s: number;
  sample_tok_s: number;
  params: number;
  backend: string;
}
const BATCH = 16,
  SEQ = 128;

async function worker(backend: string, size: string, steps: number, newTokens: number): Promise<void> {
  const { createPolicy } = await import('../daemon/model/policy.js');
  const model = await createPolicy({ backend, size, contextLength: SEQ, seed: 1, optimizer: { microBatchSize: size === '5m' ? 8 : 16 } });
  let seed = 7;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % 256;
  };
  const pairs: SequencePair[] = Array.from({ length: BATCH }, () => ({ promptIds: [rnd()], completionIds: Array.from({ length: SEQ - 1 }, rnd) }));
  const loss: TrainLoss = { kind: 'nll' }; // token-mean NLL, the same definition in every engine
  await model.trainStep(pairs, loss); // warm-up: kernel setup, XNNPACK operator creation
  let tokens = 0,
    seconds = 0;
  for (let s = 0; s < steps; s++) {
    const r = await model.trainStep(pairs, loss);
    tokens += r.tokens;
    seconds += r.seconds;
  }
  const prompts = pairs.map((p) => p.completionIds.slice(0, 8));
  await model.generate(prompts, { maxTokens: 4, temperature: 1, seed: 1 });
  const t0 = performance.now();
  const gens = await model.generate(prompts, { maxTokens: newTokens, temperature: 1, seed: 2 });
  const sampleS = (performance.now() - t0) / 1000;
  const sampled = gens.reduce((n, g) => n + g.tokenIds.length, 0);
  const out: Run = { train_tok_s: tokens / seconds, sample_tok_s: sampled / sampleS, params: model.parameterCount, backend: model.backend };
  console.log(JSON.stringify(out));
  model.dispose();
}

/** The torch engine's rows: the contract's trainStep / generate timed around the call (wall clock, this process). */
async function torchEngineRun(size: string, steps: number, newTokens: number, threads: number): Promise<Run> {
  const { openPolicy } = await import('../daemon/algorithm/open-policy.js');
  const model = await openPolicy(`builtin:${size}`, {
    engine: 'torch',
    contextLength: SEQ,
    seed: 1,
    microBatchSize: size === '5m' ? 8 : 16,
    torch: { threads },
  });
  try {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % 256;
    };
    const pairs: SequencePair[] = Array.from({ length: BATCH }, () => ({ promptIds: [rnd()], completionIds: Array.from({ length: SEQ - 1 }, rnd) }));
    await model.trainStep(pairs, { kind: 'nll' }); // warm-up
    let tokens = 0;
    const t0 = performance.now();
    for (let s = 0; s < steps; s++) tokens += (await model.trainStep(pairs, { kind: 'nll' })).tokens;
    const trainS = (performance.now() - t0) / 1000;
    const prompts = pairs.map((p) => p.completionIds.slice(0, 8));
    await model.generate(prompts, { maxTokens: 4, temperature: 1, seed: 1 });
    const t1 = performance.now();
    const gens = await model.generate(prompts, { maxTokens: newTokens, temperature: 1, seed: 2 });
    const sampleS = (performance.now() - t1) / 1000;
    const params = (model as { parameterCount?: number }).parameterCount ?? 0;
    return { train_tok_s: tokens / trainS, sample_tok_s: gens.reduce((n, g) => n + g.tokenIds.length, 0) / sampleS, params, backend: model.backend };
  } finally {
    model.dispose();
  }
}

function lastJson<T>(stdout: string): T | null {
  const line = stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  return line ? (JSON.parse(line) as T) : null;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (args.includes('--worker')) return worker(opt('--backend')!, opt('--size')!, Number(opt('--steps')), Number(opt('--new-tokens')));
  const quick = args.includes('--quick');
  const sizes = (opt('--sizes') ?? '0.8m,5m').split(',');
  const backends = (opt('--backends') ?? 'node-gpu,node,webgpu,wasm,cpu').split(',');
  const engineFilter = opt('--engines')?.split(','); // e.g. --engines torch: only the torch engine's rows (with the peer)
  const steps = quick ? 2 : 5,
    newTokens = quick ? 32 : 64;
  const metrics: Record<string, number> = {};
  const rows: string[][] = [];
  const { resolveTorchPython, torchDoctor } = await import('../daemon/model/torch-env.js');
  const enginePython = resolveTorchPython().python;
  const engineOk = !torchDoctor(enginePython).error && !(torchDoctor(enginePython).missing as string[] | undefined)?.length;
  const peerPython = engineOk ? enginePython : '/usr/bin/python3';
  if (!engineOk) console.error(`torch engine unavailable (${enginePython}): its rows are left out. agl engine install torch, or set AGL_PYTHON`);
  for (const size of sizes) {
    // The peer runs with 1 and with 2 threads and the better of each figure counts: on a shared machine
    // OpenMP's 2 threads can be several times slower than 1 (spinning while the other core is busy).
    type TorchRun = { train_tok_s: number; sample_tok_s: number; matmul_gflops: number; params: number };
    const torchRuns: TorchRun[] = [];
    let torchError = '';
    for (const threads of ['1', '2']) {
      const run = spawnSync(
        peerPython,
        [
          'bench/model_torch.py',
          '--size',
          size,
          '--batch',
          String(BATCH),
          '--seq',
          String(SEQ),
          '--steps',
          String(steps),
          '--new-tokens',
          String(newTokens),
          '--threads',
          threads,
        ],
        { encoding: 'utf8' },
      );
      const r = lastJson<TorchRun>(run.stdout ?? '');
      if (r) {
        torchRuns.push(r);
        metrics[`${size}.torch_${threads}thread.train_tok_s`] = r.train_tok_s;
        metrics[`${size}.torch_${threads}thread.sample_tok_s`] = r.sample_tok_s;
      } else torchError = (run.stderr ?? String(run.error ?? '')).trim().split('\n').pop() ?? '';
    }
    const torch: TorchRun | null = torchRuns.length
      ? {
          train_tok_s: Math.max(...torchRuns.map((r) => r.train_tok_s)),
          sample_tok_s: Math.max(...torchRuns.map((r) => r.sample_tok_s)),
          matmul_gflops: Math.max(...torchRuns.map((r) => r.matmul_gflops)),
          params: torchRuns[0].params,
        }
      : null;
    if (torch) {
      metrics[`${size}.torch.train_tok_s`] = torch.train_tok_s;
      metrics[`${size}.torch.sample_tok_s`] = torch.sample_tok_s;
      metrics[`${size}.machine_matmul_gflops`] = torch.matmul_gflops;
      rows.push([size, 'torch (cpu)', torch.train_tok_s.toFixed(0), torch.sample_tok_s.toFixed(0), '1.00', '1.00']);
    } else {
      console.error(`torch peer unavailable (apt-get install -y python3-torch libopenblas0-pthread): ${torchError}`);
    }
    let best: Run | null = null;
    for (const backend of backends) {
      // The pure-JS cpu backend is ~20x slower than wasm: one step at 0.8m only, skipped at 5m.
      if (backend === 'cpu' && size !== '0.8m') continue;
      const child = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          'bench/model.ts',
          '--worker',
          '--backend',
          backend,
          '--size',
          size,
          '--steps',
          String(backend === 'cpu' ? 1 : steps),
          '--new-tokens',
          String(backend === 'cpu' ? 16 : newTokens),
        ],
        { encoding: 'utf8', env: { ...process.env, AGL_BACKEND: backend } },
      );
      const r = lastJson<Run>(child.stdout ?? '');
      if (!r) {
        const lines = (child.stderr ?? '').trim().split('\n');
        const why = lines.find((l) => l.includes('no TF.js backend could be loaded')) ?? lines.find((l) => /Error/.test(l)) ?? 'failed';
        console.error(`${size} ${backend}: not available (${why.trim()})`);
        continue;
      }
      metrics[`${size}.${backend}.train_tok_s`] = r.train_tok_s;
      metrics[`${size}.${backend}.sample_tok_s`] = r.sample_tok_s;
      const ratio = (x: number, y?: number) => (y ? (x / y).toFixed(2) : '-');
      rows.push([
        size,
        backend,
        r.train_tok_s.toFixed(0),
        r.sample_tok_s.toFixed(0),
        ratio(r.train_tok_s, torch?.train_tok_s),
        ratio(r.sample_tok_s, torch?.sample_tok_s),
      ]);
      if (!best || r.train_tok_s > best.train_tok_s) best = r;
      if (torch && backend !== 'cpu') {
        // ~6 FLOPs per parameter per trained token (forward + backward), attention excluded.
        metrics[`${size}.${backend}.matmul_fraction`] = (6 * r.params * r.train_tok_s) / (torch.matmul_gflops * 1e9);
      }
    }
    if (best && torch) {
      metrics[`${size}.train_ratio_vs_torch`] = best.train_tok_s / torch.train_tok_s;
      metrics[`${size}.sample_ratio_vs_torch`] = best.sample_tok_s / torch.sample_tok_s;
    }
    if (engineOk && (!engineFilter || engineFilter.includes('torch'))) {
      const runs: Run[] = [];
      for (const threads of [1, 2]) {
        try {
          const r = await torchEngineRun(size, steps, newTokens, threads);
          runs.push(r);
          metrics[`${size}.engine_torch_${threads}thread.train_tok_s`] = r.train_tok_s;
          metrics[`${size}.engine_torch_${threads}thread.sample_tok_s`] = r.sample_tok_s;
        } catch (e) {
          console.error(`${size} torch engine (${threads} thread): ${(e as Error).message}`);
        }
      }
      if (runs.length) {
        const e = { train_tok_s: Math.max(...runs.map((r) => r.train_tok_s)), sample_tok_s: Math.max(...runs.map((r) => r.sample_tok_s)) };
        metrics[`${size}.engine_torch.train_tok_s`] = e.train_tok_s;
        metrics[`${size}.engine_torch.sample_tok_s`] = e.sample_tok_s;
        const ratio = (x: number, y?: number) => (y ? (x / y).toFixed(2) : '-');
        rows.push([
          size,
          'engine torch',
          e.train_tok_s.toFixed(0),
          e.sample_tok_s.toFixed(0),
          ratio(e.train_tok_s, torch?.train_tok_s),
          ratio(e.sample_tok_s, torch?.sample_tok_s),
        ]);
        const wasm = metrics[`${size}.wasm.train_tok_s`];
        if (wasm) {
          metrics[`${size}.engine_torch.train_ratio_vs_wasm`] = e.train_tok_s / wasm;
          metrics[`${size}.engine_torch.sample_ratio_vs_wasm`] = e.sample_tok_s / metrics[`${size}.wasm.sample_tok_s`];
        }
      }
    }
  }
  console.log(`batch ${BATCH} x seq ${SEQ}, float32${quick ? ' (quick)' : ''}`);
  console.log(['size', 'engine', 'train tok/s', 'sample tok/s', 'train x torch', 'sample x torch'].join('\t'));
  for (const r of rows) console.log(r.join('\t'));
  for (const size of sizes) {
    const t = metrics[`${size}.engine_torch.train_ratio_vs_wasm`];
    if (t)
      console.log(
        `${size}: torch engine / tfjs wasm: training ${t.toFixed(2)}x, sampling ${metrics[`${size}.engine_torch.sample_ratio_vs_wasm`].toFixed(2)}x (goal: training >= 3x)`,
      );
  }
  const machine = `${cpus().length}x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`;
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(join('bench', 'results', 'model.json'), JSON.stringify({ date: new Date().toISOString(), machine, quick, metrics }, null, 2) + '\n');
  console.log('wrote bench/results/model.json');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
