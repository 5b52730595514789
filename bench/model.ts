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
import type { PolicyModel, SequencePair, TrainLoss } from '../daemon/model/policy-contract.js';

interface Run {
  train_tok_s: number;
  sample_tok_s: number;
  params: number;
  backend: string;
}
/** The standalone PyTorch peer's figures (bench/model_torch.py). */
interface TorchRun {
  train_tok_s: number;
  sample_tok_s: number;
  matmul_gflops: number;
  params: number;
}
/** The command line: what to measure, and how long. */
interface Options {
  quick: boolean;
  sizes: string[];
  backends: string[];
  /** e.g. --engines torch: only the torch engine's rows (with the peer). */
  engineFilter: string[] | undefined;
  steps: number;
  newTokens: number;
}
/** What a run gathers: the metrics written to bench/results/model.json and the table's rows. */
interface Results {
  metrics: Record<string, number>;
  rows: string[][];
}
/** Each update's own settings: a learning rate (no policy has one of its own; the figures do not depend on its value). */
const UPDATE = { lr: 3e-4 };
const BATCH = 16,
  SEQ = 128;

/** The same batch every engine trains on: one token of prompt, SEQ - 1 of completion, from a fixed generator. */
function benchPairs(): SequencePair[] {
  let seed = 7;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % 256;
  };
  return Array.from({ length: BATCH }, () => ({ promptIds: [rnd()], completionIds: Array.from({ length: SEQ - 1 }, rnd) }));
}

/** Sampling tokens/s: a short warm-up, then `newTokens` per prompt, timed around the call. */
async function samplingRate(model: PolicyModel, pairs: SequencePair[], newTokens: number): Promise<number> {
  const prompts = pairs.map((p) => p.completionIds.slice(0, 8));
  await model.generate(prompts, { maxTokens: 4, temperature: 1, seed: 1 });
  const t0 = performance.now();
  const gens = await model.generate(prompts, { maxTokens: newTokens, temperature: 1, seed: 2 });
  const sampleS = (performance.now() - t0) / 1000;
  return gens.reduce((n, g) => n + g.tokenIds.length, 0) / sampleS;
}

async function worker(backend: string, size: string, steps: number, newTokens: number): Promise<void> {
  const { createPolicy } = await import('../daemon/model/policy.js');
  const model = await createPolicy({ backend, size, contextLength: SEQ, seed: 1, optimizer: { microBatchSize: size === '5m' ? 8 : 16 } });
  const pairs = benchPairs();
  const loss: TrainLoss = { kind: 'nll' }; // token-mean NLL, the same definition in every engine
  await model.trainStep(pairs, loss, UPDATE); // warm-up: kernel setup, XNNPACK operator creation
  let tokens = 0,
    seconds = 0;
  for (let s = 0; s < steps; s++) {
    const r = await model.trainStep(pairs, loss, UPDATE);
    tokens += r.tokens;
    seconds += r.seconds;
  }
  const sampleRate = await samplingRate(model, pairs, newTokens);
  const out: Run = { train_tok_s: tokens / seconds, sample_tok_s: sampleRate, params: model.parameterCount, backend: model.backend };
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
    const pairs = benchPairs();
    await model.trainStep(pairs, { kind: 'nll' }, UPDATE); // warm-up
    let tokens = 0;
    const t0 = performance.now();
    for (let s = 0; s < steps; s++) tokens += (await model.trainStep(pairs, { kind: 'nll' }, UPDATE)).tokens;
    const trainS = (performance.now() - t0) / 1000;
    const sampleRate = await samplingRate(model, pairs, newTokens);
    const params = (model as { parameterCount?: number }).parameterCount ?? 0;
    return { train_tok_s: tokens / trainS, sample_tok_s: sampleRate, params, backend: model.backend };
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

const ratio = (x: number, y?: number) => (y ? (x / y).toFixed(2) : '-');

/** A flag's value (the argument after it), or undefined. */
function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

function parseOptions(args: string[]): Options {
  const opt = (name: string) => flag(args, name);
  const quick = args.includes('--quick');
  return {
    quick,
    sizes: (opt('--sizes') ?? '0.8m,5m').split(','),
    backends: (opt('--backends') ?? 'node-gpu,node,webgpu,wasm,cpu').split(','),
    engineFilter: opt('--engines')?.split(','),
    steps: quick ? 2 : 5,
    newTokens: quick ? 32 : 64,
  };
}

/**
 * The standalone PyTorch peer at one size, with 1 and with 2 threads; the better of each figure counts: on a shared
 * machine OpenMP's 2 threads can be several times slower than 1 (spinning while the other core is busy).
 */
function peerRow(size: string, o: Options, peerPython: string, r: Results): TorchRun | null {
  const torchRuns: TorchRun[] = [];
  let torchError = '';
  for (const threads of ['1', '2']) {
    const args = ['--size', size, '--batch', String(BATCH), '--seq', String(SEQ), '--steps', String(o.steps), '--new-tokens', String(o.newTokens)];
    const run = spawnSync(peerPython, ['bench/model_torch.py', ...args, '--threads', threads], { encoding: 'utf8' });
    const t = lastJson<TorchRun>(run.stdout ?? '');
    if (t) {
      torchRuns.push(t);
      r.metrics[`${size}.torch_${threads}thread.train_tok_s`] = t.train_tok_s;
      r.metrics[`${size}.torch_${threads}thread.sample_tok_s`] = t.sample_tok_s;
    } else torchError = (run.stderr ?? String(run.error ?? '')).trim().split('\n').pop() ?? '';
  }
  if (!torchRuns.length) {
    console.error(`torch peer unavailable (apt-get install -y python3-torch libopenblas0-pthread): ${torchError}`);
    return null;
  }
  const torch: TorchRun = {
    train_tok_s: Math.max(...torchRuns.map((t) => t.train_tok_s)),
    sample_tok_s: Math.max(...torchRuns.map((t) => t.sample_tok_s)),
    matmul_gflops: Math.max(...torchRuns.map((t) => t.matmul_gflops)),
    params: torchRuns[0].params,
  };
  r.metrics[`${size}.torch.train_tok_s`] = torch.train_tok_s;
  r.metrics[`${size}.torch.sample_tok_s`] = torch.sample_tok_s;
  r.metrics[`${size}.machine_matmul_gflops`] = torch.matmul_gflops;
  r.rows.push([size, 'torch (cpu)', torch.train_tok_s.toFixed(0), torch.sample_tok_s.toFixed(0), '1.00', '1.00']);
  return torch;
}

/** One TF.js backend at one size, in a process of its own (the backend is process-wide); null where it is not available. */
function tfjsRun(size: string, backend: string, o: Options): Run | null {
  // The pure-JS cpu backend is ~20x slower than wasm: one step at 0.8m only (skipped at 5m by the caller).
  const steps = String(backend === 'cpu' ? 1 : o.steps),
    newTokens = String(backend === 'cpu' ? 16 : o.newTokens);
  const args = ['--import', 'tsx', 'bench/model.ts', '--worker', '--backend', backend, '--size', size, '--steps', steps, '--new-tokens', newTokens];
  const child = spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, AGL_BACKEND: backend } });
  const r = lastJson<Run>(child.stdout ?? '');
  if (!r) {
    const lines = (child.stderr ?? '').trim().split('\n');
    const why = lines.find((l) => l.includes('no TF.js backend could be loaded')) ?? lines.find((l) => /Error/.test(l)) ?? 'failed';
    console.error(`${size} ${backend}: not available (${why.trim()})`);
  }
  return r;
}

/** Every TF.js backend's row at one size, against the peer; the best backend's ratios to the peer. */
function tfjsRows(size: string, o: Options, torch: TorchRun | null, res: Results): void {
  let best: Run | null = null;
  for (const backend of o.backends) {
    if (backend === 'cpu' && size !== '0.8m') continue;
    const r = tfjsRun(size, backend, o);
    if (!r) continue;
    res.metrics[`${size}.${backend}.train_tok_s`] = r.train_tok_s;
    res.metrics[`${size}.${backend}.sample_tok_s`] = r.sample_tok_s;
    res.rows.push([
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
      res.metrics[`${size}.${backend}.matmul_fraction`] = (6 * r.params * r.train_tok_s) / (torch.matmul_gflops * 1e9);
    }
  }
  if (best && torch) {
    res.metrics[`${size}.train_ratio_vs_torch`] = best.train_tok_s / torch.train_tok_s;
    res.metrics[`${size}.sample_ratio_vs_torch`] = best.sample_tok_s / torch.sample_tok_s;
  }
}

/** The torch engine's row at one size: the better of 1 and 2 threads, against the peer and TF.js's wasm. */
async function engineTorchRow(size: string, o: Options, torch: TorchRun | null, res: Results): Promise<void> {
  const runs: Run[] = [];
  for (const threads of [1, 2]) {
    try {
      const r = await torchEngineRun(size, o.steps, o.newTokens, threads);
      runs.push(r);
      res.metrics[`${size}.engine_torch_${threads}thread.train_tok_s`] = r.train_tok_s;
      res.metrics[`${size}.engine_torch_${threads}thread.sample_tok_s`] = r.sample_tok_s;
    } catch (e) {
      console.error(`${size} torch engine (${threads} thread): ${(e as Error).message}`);
    }
  }
  if (!runs.length) return;
  const e = { train_tok_s: Math.max(...runs.map((r) => r.train_tok_s)), sample_tok_s: Math.max(...runs.map((r) => r.sample_tok_s)) };
  res.metrics[`${size}.engine_torch.train_tok_s`] = e.train_tok_s;
  res.metrics[`${size}.engine_torch.sample_tok_s`] = e.sample_tok_s;
  res.rows.push([
    size,
    'engine torch',
    e.train_tok_s.toFixed(0),
    e.sample_tok_s.toFixed(0),
    ratio(e.train_tok_s, torch?.train_tok_s),
    ratio(e.sample_tok_s, torch?.sample_tok_s),
  ]);
  const wasm = res.metrics[`${size}.wasm.train_tok_s`];
  if (wasm) {
    res.metrics[`${size}.engine_torch.train_ratio_vs_wasm`] = e.train_tok_s / wasm;
    res.metrics[`${size}.engine_torch.sample_ratio_vs_wasm`] = e.sample_tok_s / res.metrics[`${size}.wasm.sample_tok_s`];
  }
}

/** The table, the torch engine's ratios to wasm, and bench/results/model.json. */
function report(o: Options, { metrics, rows }: Results): void {
  console.log(`batch ${BATCH} x seq ${SEQ}, float32${o.quick ? ' (quick)' : ''}`);
  console.log(['size', 'engine', 'train tok/s', 'sample tok/s', 'train x torch', 'sample x torch'].join('\t'));
  for (const r of rows) console.log(r.join('\t'));
  for (const size of o.sizes) {
    const t = metrics[`${size}.engine_torch.train_ratio_vs_wasm`];
    if (t)
      console.log(
        `${size}: torch engine / tfjs wasm: training ${t.toFixed(2)}x, sampling ${metrics[`${size}.engine_torch.sample_ratio_vs_wasm`].toFixed(2)}x (goal: training >= 3x)`,
      );
  }
  const machine = `${cpus().length}x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`;
  mkdirSync(join('bench', 'results'), { recursive: true });
  const quick = o.quick;
  writeFileSync(join('bench', 'results', 'model.json'), JSON.stringify({ date: new Date().toISOString(), machine, quick, metrics }, null, 2) + '\n');
  console.log('wrote bench/results/model.json');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--worker')) {
    const opt = (name: string) => flag(args, name);
    return worker(opt('--backend')!, opt('--size')!, Number(opt('--steps')), Number(opt('--new-tokens')));
  }
  const o = parseOptions(args);
  const res: Results = { metrics: {}, rows: [] };
  const { resolveTorchPython, torchDoctor } = await import('../daemon/model/torch-env.js');
  const enginePython = resolveTorchPython().python;
  const engineOk = !torchDoctor(enginePython).error && !(torchDoctor(enginePython).missing as string[] | undefined)?.length;
  const peerPython = engineOk ? enginePython : '/usr/bin/python3';
  if (!engineOk) console.error(`torch engine unavailable (${enginePython}): its rows are left out. agl engine install torch, or set AGL_PYTHON`);
  for (const size of o.sizes) {
    const torch = peerRow(size, o, peerPython, res);
    tfjsRows(size, o, torch, res);
    if (engineOk && (!o.engineFilter || o.engineFilter.includes('torch'))) await engineTorchRow(size, o, torch, res);
  }
  report(o, res);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
