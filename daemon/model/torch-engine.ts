/**
 * PolicyModel (policy-contract.ts) on the PyTorch engine: a Python child process (engines/torch, transformers
 * models) that this class starts, talks to over a private Unix socket (one JSON object per line: protocol/engine.ts)
 * and stops. With `procs` > 1 it is torchrun with that many data-parallel ranks (DDP; gloo on CPU, NCCL on CUDA).
 * Tokenization stays here (the same byte tokenizer or tokenizer.json + chat template as the TF.js engine), so
 * both engines see the same token ids; the engine gets and returns ids and log-probs only.
 * A dead engine (killed, crashed, a failed rank) fails every pending and later call with an error that names
 * what happened and quotes its last output; nothing in the store depends on the engine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  configuredOptimizer,
  updateSettings,
  EngineHelloSchema,
  type EngineHello,
  type EngineMessage,
  type EngineMethod,
  type EngineMethods,
  type EngineAdapterInfo,
  type EnginePeakMemory,
  type LoraSettings,
  type OptimizerSettings,
} from '../../protocol/engine.js';
import type {
  EngineFacts,
  GenerateOptions,
  Generation,
  OpenSettings,
  PolicyModel,
  SequencePair,
  Tokenizer,
  TrainLoss,
  TrainStepResult,
  UpdateSettings,
} from './policy-contract.js';
import { readHfConfig, savedOptimizerSettings } from './model-folder.js';
import { tokenizerFor } from './policy.js';
import { checkPython, engineEnv, INSTALL_HINT, resolveTorchPython } from './torch-env.js';

export interface TorchEngineOptions {
  /** The Python to run (default: resolveTorchPython's choice). */
  python?: string | null;
  /** Data-parallel ranks (torchrun --nproc-per-node); 1 = a plain process. */
  procs?: number;
  /** cpu, cuda or auto. */
  device?: string;
  dtype?: string;
  /** transformers' attn_implementation: sdpa (default) or eager. */
  attn?: string;
  /** torch threads per rank (0: torch decides; torchrun sets 1 per rank). */
  threads?: number;
  /**
   * What the engine trains: `full` weights (below float32, with float32 master weights and moments), only LoRA
   * `adapters` on a frozen base (no master copy, no moments for the base), or `none` (serving).
   */
  trainable?: 'full' | 'adapters' | 'none';
  /** Recompute each decoder layer's activations in the backward pass (less memory, about a third more compute). */
  gradientCheckpointing?: boolean;
  /** Several ranks: DDP (`none`) or FSDP2 (`fsdp`: each rank holds 1/ranks of the weights and Adam state). */
  shard?: 'none' | 'fsdp';
  /** Machines taking part; this one's number; node 0's rendezvous (host:port). */
  nodes?: number;
  nodeRank?: number;
  rdzv?: string | null;
  /** Its configured optimizer settings, over protocol/engine.ts DEFAULT_OPTIMIZER and those the folder saved. */
  optimizer?: OpenSettings;
  name?: string;
  seed?: number;
  /** For the default venv's location. */
  dataDir?: string;
  /** Each line the engine writes to stderr. */
  log?: (line: string) => void;
  /** How long loading may take (importing torch, reading the weights, starting ranks). */
  startTimeoutMs?: number;
}

export class EngineError extends Error {
  constructor(
    message: string,
    readonly fatal = false,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

interface Pending {
  method: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onTokens?: (events: [number, number, number][]) => void;
}

/** Starts the engine on a model folder; resolves once the model is loaded (and every rank is up). */
export async function startTorchEngine(dir: string, o: TorchEngineOptions = {}): Promise<TorchPolicyModel> {
  const folder = resolve(dir);
  const hf = readHfConfig(folder); // a folder that is no model folder fails here, before Python starts
  const tokenizer = tokenizerFor(folder, hf);
  // Its configured settings, all of them: the engine has no defaults of its own (protocol/engine.ts DEFAULT_OPTIMIZER).
  const optimizer = configuredOptimizer(savedOptimizerSettings(folder), o.optimizer);
  const { python, source } = resolveTorchPython(o.python, o.dataDir);
  if (python === 'python3' && source.startsWith('python3')) checkPython(python); // ENOENT / too old -> what to install
  const procs = Math.max(1, Math.floor(o.procs ?? 1));
  const sockDir = mkdtempSync(join(tmpdir(), 'agl-torch-'));
  const sockPath = join(sockDir, 'engine.sock');
  const server = createServer();
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(sockPath, () => res());
  });
  const serve = [
    '-m',
    'agl_torch',
    'serve',
    '--connect',
    sockPath,
    '--model',
    folder,
    '--device',
    o.device ?? 'cpu',
    '--dtype',
    o.dtype ?? 'float32',
    '--attn',
    o.attn ?? 'sdpa',
    '--seed',
    String(o.seed ?? 1),
  ];
  if (o.threads) serve.push('--threads', String(o.threads));
  if (o.trainable && o.trainable !== 'full') serve.push('--trainable', o.trainable);
  if (o.gradientCheckpointing) serve.push('--gradient-checkpointing');
  if (o.shard === 'fsdp') serve.push('--shard', 'fsdp');
  if (o.name) serve.push('--name', o.name);
  serve.push('--optimizer', JSON.stringify(optimizer));
  const args = launcher(procs, o, serve);
  const child = spawn(python, args, { env: engineEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const engine = new TorchPolicyModel(child, server, sockDir, tokenizer, procs, python, optimizer, o);
  try {
    await engine.started(o.startTimeoutMs ?? 300_000);
  } catch (e) {
    engine.dispose();
    throw e;
  }
  return engine;
}

/**
 * `python -m agl_torch serve ...` as it runs: one process, torchrun with `procs` ranks on this machine, or torchrun on
 * one of several machines meeting at node 0's static rendezvous (so node 0 holds global rank 0, the one that talks to
 * the daemon).
 */
function launcher(procs: number, o: TorchEngineOptions, serve: string[]): string[] {
  const nodes = o.nodes ?? 1;
  if (nodes > 1) {
    if (!o.rdzv) throw new EngineError('several machines (--nodes) meet at a rendezvous: give --rdzv HOST:PORT (node 0 listens there)');
    const rdzv = ['--nnodes', String(nodes), '--node-rank', String(o.nodeRank ?? 0), '--rdzv-backend', 'static', '--rdzv-endpoint', o.rdzv];
    return ['-m', 'torch.distributed.run', ...rdzv, `--nproc-per-node=${procs}`, ...serve];
  }
  return procs > 1 ? ['-m', 'torch.distributed.run', '--standalone', `--nproc-per-node=${procs}`, ...serve] : serve;
}

/**
 * A machine other than node 0 lending its ranks to a training run (`agl train ... --nodes N --node-rank R`, R > 0): it
 * runs the engine's ranks only (no daemon, no runner), which meet node 0's at the rendezvous and follow its rank 0.
 * Resolves with their exit code when node 0's run ends (or one of them fails).
 */
export async function joinTorchEngine(dir: string, o: TorchEngineOptions & { log: (line: string) => void }): Promise<number> {
  const folder = resolve(dir);
  readHfConfig(folder);
  const { python } = resolveTorchPython(o.python, o.dataDir);
  const serve = ['-m', 'agl_torch', 'serve', '--model', folder, '--device', o.device ?? 'cpu', '--dtype', o.dtype ?? 'float32', '--attn', o.attn ?? 'sdpa'];
  // The same configured settings as node 0's ranks (the same folder, the same flags): every rank splits an update alike.
  serve.push('--seed', String(o.seed ?? 1), '--optimizer', JSON.stringify(configuredOptimizer(savedOptimizerSettings(folder), o.optimizer)));
  if (o.threads) serve.push('--threads', String(o.threads));
  if (o.gradientCheckpointing) serve.push('--gradient-checkpointing');
  if (o.shard === 'fsdp') serve.push('--shard', 'fsdp');
  const child = spawn(python, launcher(Math.max(1, Math.floor(o.procs ?? 1)), o, serve), { env: engineEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.setEncoding('utf8');
    let partial = '';
    stream.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) o.log(line);
    });
  }
  return new Promise((res, rej) => {
    child.once('error', (e) => rej(new EngineError(`cannot start the torch engine with \`${python}\`: ${e.message}`, true)));
    child.once('exit', (code, signal) => res(code ?? (signal ? 128 : 1)));
  });
}

export class TorchPolicyModel implements PolicyModel {
  readonly tokenizer: Tokenizer;
  hello: EngineHello | null = null;
  private socket: Socket | null = null;
  private buffer = '';
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly stderrTail: string[] = [];
  private dead: EngineError | null = null;
  private disposed = false;
  private readonly exited: Promise<void>;
  private ready: { resolve: () => void; reject: (e: Error) => void } | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  /** The peak memory of the last request the engine answered (CUDA's allocator on a GPU, the resident set on a CPU). */
  lastPeakMemory: EnginePeakMemory | null = null;
  private readonly killOnExit = () => {
    try {
      this.child.kill('SIGKILL');
    } catch {
      /* gone */
    }
  };

  constructor(
    private readonly child: ChildProcess,
    private readonly server: Server,
    private readonly sockDir: string,
    tokenizer: Tokenizer,
    readonly procs: number,
    readonly python: string,
    /** Its configured optimizer settings (given to the engine at start). */
    readonly optimizerConfig: OptimizerSettings,
    private readonly o: TorchEngineOptions,
  ) {
    this.tokenizer = tokenizer;
    process.on('exit', this.killOnExit);
    child.stderr!.setEncoding('utf8');
    let partial = '';
    child.stderr!.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.trim()) continue;
        this.stderrTail.push(line);
        if (this.stderrTail.length > 40) this.stderrTail.shift();
        o.log?.(line);
      }
    });
    child.stdout!.on('data', (chunk: Buffer) => o.log?.(chunk.toString('utf8').trimEnd()));
    this.exited = new Promise((res) => child.once('exit', () => res()));
    child.once('error', (e) => {
      const code = (e as NodeJS.ErrnoException).code;
      this.fail(
        new EngineError(
          code === 'ENOENT' ? `Python was not found (\`${python}\`): ${INSTALL_HINT}` : `cannot start the torch engine with \`${python}\`: ${e.message}`,
          true,
        ),
      );
    });
    child.once('exit', (code, signal) => {
      if (this.disposed && !this.pending.size) return;
      const what = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const during = [...this.pending.values()].map((p) => p.method);
      const missing = this.stderrTail.some((l) => /lacks a package|No module named/.test(l)) ? ` (${INSTALL_HINT})` : '';
      // The engine's own sentence (a failed rank's, or its argument parser's) before torchrun's report.
      const own = this.stderrTail.find((l) => /^\[agl-torch\] |^python -m agl_torch: error/.test(l));
      const rank = own ?? this.stderrTail.find((l) => /rank \d+ .*fail|Root Cause/i.test(l));
      this.fail(
        new EngineError(
          `the torch engine (pid ${child.pid}${procs > 1 ? `, ${procs} ranks` : ''}) ${what}` +
            `${during.length ? ` during ${during.join(', ')}` : this.hello ? '' : ' while loading the model'}${missing}` +
            `${rank ? `; ${rank.trim()}` : ''}. Its last output:\n${this.lastOutput()}`,
          true,
        ),
      );
    });
    server.on('connection', (s) => {
      if (this.socket) {
        s.destroy();
        return;
      } // one engine per socket: anything else connecting is refused
      this.socket = s;
      s.setEncoding('utf8');
      s.on('data', (chunk: string) => this.onData(chunk));
      // A dying engine closes the socket before the process is reaped (torchrun first stops its other ranks, which takes
      // seconds on a busy machine): wait for the exit, so the error says how it died; a process that lingers is reported.
      s.on('close', () => {
        if (this.disposed) return;
        setTimeout(() => this.fail(new EngineError(`the torch engine closed its connection. Its last output:\n${this.lastOutput()}`, true)), 30_000).unref();
      });
      s.on('error', () => {
        /* the close handler reports it */
      });
    });
  }

  get name(): string {
    return this.hello?.model.name ?? 'torch';
  }
  get backend(): string {
    if (!this.hello) return 'torch';
    const h = this.hello;
    return `torch ${h.device}${h.ranks > 1 ? ` x${h.ranks} (${this.ranksTogether()})` : ''}`;
  }
  /** How its ranks work together: torch.distributed's backend, FSDP sharding, the nodes they span. */
  private ranksTogether(): string {
    const h = this.hello;
    return [h?.backend, h?.model.shard === 'fsdp' ? 'fsdp' : null, (this.o.nodes ?? 1) > 1 ? `${this.o.nodes} nodes` : null].filter(Boolean).join(', ');
  }
  get engineFacts(): EngineFacts {
    const ranks = this.hello?.ranks ?? this.procs;
    return {
      engine: 'torch',
      device: this.hello?.device ?? 'unknown',
      dtype: this.hello?.model.dtype ?? 'unknown',
      ranks,
      ...(ranks > 1 ? { backend: this.ranksTogether() || null } : {}),
    };
  }
  get contextLength(): number {
    return this.hello?.model.contextLength ?? 0;
  }
  get parameterCount(): number {
    return this.hello?.model.parameters ?? 0;
  }
  get pid(): number | undefined {
    return this.child.pid;
  }

  private lastOutput(): string {
    return (
      this.stderrTail
        .filter((l) => !/^\s*(Loading weights|warnings\.warn)/.test(l))
        .slice(-12)
        .map((l) => `  ${l}`)
        .join('\n') || '  (nothing)'
    );
  }

  /** Resolves when the engine said it is ready (model loaded); rejects with its load error. */
  started(timeoutMs: number): Promise<void> {
    return new Promise((res, rej) => {
      const timer = setTimeout(
        () => rej(new EngineError(`the torch engine did not load its model within ${timeoutMs / 1000} s. Its last output:\n${this.lastOutput()}`, true)),
        timeoutMs,
      );
      this.ready = {
        resolve: () => {
          clearTimeout(timer);
          res();
        },
        reject: (e) => {
          clearTimeout(timer);
          rej(e);
        },
      };
      if (this.dead) this.ready.reject(this.dead);
    });
  }

  private fail(e: EngineError): void {
    if (this.dead) return;
    this.dead = e;
    this.ready?.reject(e);
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      if (!line.trim()) continue;
      let msg: EngineMessage;
      try {
        msg = JSON.parse(line) as EngineMessage;
      } catch {
        this.o.log?.(`engine sent a line that is not JSON: ${line.slice(0, 200)}`);
        continue;
      }
      this.onMessage(msg);
    }
  }

  private onMessage(msg: EngineMessage): void {
    if ('event' in msg && msg.event === 'ready') {
      this.hello = EngineHelloSchema.parse(msg.data);
      this.ready?.resolve();
      return;
    }
    if ('event' in msg && msg.event === 'fatal') {
      this.fail(new EngineError(`the torch engine could not load the model: ${msg.data.message}`, true));
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    if ('event' in msg) {
      p.onTokens?.(msg.data);
      return;
    }
    this.pending.delete(msg.id);
    if ('memory' in msg && msg.memory) this.lastPeakMemory = msg.memory;
    if ('error' in msg) {
      const e = new EngineError(`torch engine, ${p.method}: ${msg.error.message}`, Boolean(msg.error.fatal));
      if (msg.error.fatal) this.fail(e);
      p.reject(e);
    } else p.resolve(msg.result);
  }

  /** One request; requests run one at a time, in order (the engine is single-threaded). For this file's classes. */
  call<M extends EngineMethod>(method: M, params: EngineMethods[M]['params'], onTokens?: Pending['onTokens']): Promise<EngineMethods[M]['result']> {
    const run = () =>
      new Promise<EngineMethods[M]['result']>((res, rej) => {
        if (this.dead) {
          rej(this.dead);
          return;
        }
        if (this.disposed || !this.socket) {
          rej(new EngineError(`the torch engine ${this.disposed ? 'was stopped' : 'is not connected'}`));
          return;
        }
        const id = this.nextId++;
        this.pending.set(id, { method, resolve: res as (v: unknown) => void, reject: rej, onTokens });
        this.socket.write(`${JSON.stringify({ id, method, params })}\n`);
      });
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => {});
    return next;
  }

  async generate(prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
    return this.generateWith(undefined, prompts, opts);
  }

  /** Sampling with a LoRA adapter (undefined: the model itself, every adapter off). */
  async generateWith(adapter: string | undefined, prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
    if (prompts.length === 0) return [];
    const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
    const onToken = opts.onToken;
    const gens = await this.call(
      'generate',
      {
        prompts,
        maxTokens: opts.maxTokens,
        temperature: opts.temperature ?? 1,
        topP: opts.topP,
        topK: opts.topK,
        stop: opts.stop,
        seed,
        eos: this.tokenizer.eosTokenIds,
        stream: Boolean(onToken),
        ...(adapter ? { adapter } : {}),
      },
      onToken
        ? (events) => {
            for (const [b, t, lp] of events) onToken(b, t, lp);
          }
        : undefined,
    );
    const eos = new Set(this.tokenizer.eosTokenIds);
    return gens.map((g) => {
      const ids = g.tokenIds.filter((t, i) => !(i === g.tokenIds.length - 1 && eos.has(t)));
      let text = this.tokenizer.decode(ids);
      for (const s of opts.stop ?? []) {
        const at = s ? text.indexOf(s) : -1;
        if (at >= 0) text = text.slice(0, at);
      }
      return { tokenIds: g.tokenIds, logprobs: g.logprobs, text, finishReason: g.finishReason };
    });
  }

  async scoreLogprobs(pairs: SequencePair[]): Promise<number[][]> {
    if (pairs.length === 0) return [];
    return this.call('score', { pairs });
  }

  async trainStep(pairs: SequencePair[], loss: TrainLoss, settings: UpdateSettings = {}): Promise<TrainStepResult> {
    return this.call('train_step', { pairs, loss, ...updateOptimizer(this.optimizerConfig, settings) });
  }

  async save(dir: string): Promise<void> {
    await this.call('save', { dir: resolve(dir) });
  }

  /**
   * A LoRA adapter on this engine's model, served and trained as a policy of its own (the model itself is frozen from
   * then on, and serves what names no adapter): new, of `lora`'s shape, or from an adapter folder a LoRA run saved.
   */
  async addAdapter(name: string, o: { init?: string | null; lora: LoraSettings; optimizer?: OpenSettings }): Promise<TorchAdapterModel> {
    const init = o.init ? resolve(o.init) : null;
    // Its configured settings: the engine's, under those a saved adapter holds, under those asked for.
    const optimizer = configuredOptimizer(this.optimizerConfig, init ? savedOptimizerSettings(init) : null, o.optimizer);
    const info = await this.call('add_adapter', { name, init, lora: o.lora, optimizer });
    return new TorchAdapterModel(this, info);
  }

  /** Stops the engine: asks it to shut down, then terminates it if it has not within a few seconds. */
  async close(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    process.off('exit', this.killOnExit);
    if (this.socket && !this.dead && this.child.exitCode === null) {
      const id = this.nextId++;
      this.socket.write(`${JSON.stringify({ id, method: 'shutdown', params: {} })}\n`);
    }
    const term = setTimeout(() => this.child.kill('SIGTERM'), 5_000);
    const kill = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    term.unref();
    kill.unref();
    if (this.child.pid !== undefined && this.child.exitCode === null && this.child.signalCode === null) await this.exited;
    clearTimeout(term);
    clearTimeout(kill);
    this.socket?.destroy();
    this.server.close();
    rmSync(this.sockDir, { recursive: true, force: true });
  }

  dispose(): void {
    void this.close();
  }
}

/**
 * One LoRA adapter of a torch engine as a PolicyModel: its own weights (the adapter), optimizer settings, AdamW state
 * and update count, on the engine's frozen base. Closing it frees nothing: the engine's owner stops the engine.
 */
export class TorchAdapterModel implements PolicyModel {
  readonly optimizerConfig: OptimizerSettings;
  constructor(
    readonly engine: TorchPolicyModel,
    readonly info: EngineAdapterInfo,
  ) {
    this.optimizerConfig = { ...info.optimizer };
  }
  get name(): string {
    return this.info.name;
  }
  get backend(): string {
    return `${this.engine.backend}, LoRA r${this.info.rank} on ${this.engine.name}`;
  }
  get engineFacts(): EngineFacts {
    return this.engine.engineFacts;
  }
  get tokenizer(): Tokenizer {
    return this.engine.tokenizer;
  }
  get contextLength(): number {
    return this.engine.contextLength;
  }
  /** Its trainable (LoRA) parameters. */
  get parameterCount(): number {
    return this.info.parameters;
  }
  generate(prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
    return this.engine.generateWith(this.info.name, prompts, opts);
  }
  async scoreLogprobs(pairs: SequencePair[]): Promise<number[][]> {
    if (pairs.length === 0) return [];
    return this.engine.call('score', { pairs, adapter: this.info.name });
  }
  trainStep(pairs: SequencePair[], loss: TrainLoss, settings: UpdateSettings = {}): Promise<TrainStepResult> {
    return this.engine.call('train_step', { pairs, loss, ...updateOptimizer(this.optimizerConfig, settings), adapter: this.info.name });
  }
  async save(dir: string): Promise<void> {
    await this.engine.call('save', { dir: resolve(dir), adapter: this.info.name });
  }
  dispose(): void {
    /* the engine's owner stops the engine */
  }
}

/**
 * The learning rate's hop 3 (of 3), the torch engine's side: an update carries all its settings (the configured ones
 * under its own, protocol/engine.ts updateSettings), which the engine uses for that update only; one without a learning
 * rate is refused here, before anything is sent (the configured settings hold none).
 */
function updateOptimizer(configured: OptimizerSettings, settings: UpdateSettings): { optimizer: OptimizerSettings } {
  return { optimizer: updateSettings(configured, settings) };
}
