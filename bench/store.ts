/**
 * `npm run bench:store [-- --quick] [--only minimal,heavy] [--runner-procs N] [--store postgres://... | --postgres]`
 * (--bounds-only: print what each scenario's workload allows a zero-cost store, and stop)
 * (--postgres: a throwaway local PostgreSQL cluster, as the tests use, one fresh database per scenario;
 * --out FILE: write the results there instead of bench/results/store.json)
 * agent-lightning v0.3's store benchmark (bench/README.md) against a real `agl serve` daemon over HTTP:
 * per scenario a fresh daemon (SQLite in a temp data dir unless --store), a runner process with N concurrent
 * runner loops running the synthetic agent (bench/store-runner.ts), and the algorithm side here, batch or
 * queue pattern, checking every finished rollout (succeeded, `task` attribute among its spans, final reward
 * in [1, 2]). Writes bench/results/store.json.
 *
 * efficiency = achieved / limit, limit = runners / mean rollout sleep. `pattern_bound` is what a store with
 * zero overhead would reach with the same sampled sleeps and the same batch barriers (simulated), so
 * efficiency / pattern_bound isolates the store's (and HTTP path's) own cost. `pattern_bound` is one draw of a random
 * quantity (a run's sleeps may be luckier or not), so each scenario also reports `pattern_bound_expected`, the
 * mean over 200 fresh draws, and `pattern_share_reaching_90pct`, how many of them reach 90% of the limit.
 * On a shared machine wall-clock throughput depends on what else runs (load averages are recorded), so each
 * scenario also reports CPU ms per rollout of the daemon, the runners and the algorithm side, and
 * cpu_ceiling_rollouts_per_s = cores * 1000 / (their sum): the rate the measured CPU cost would allow with
 * the machine to itself (a projection, named as such).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AglClient } from '../client/client.js';
import { AGL, SPAN } from '../protocol/spans.js';
import type { Rollout } from '../protocol/store.js';
import { SERVE_COMMAND } from '../protocol/cli-commands.js';
import { commandLine } from '../protocol/cli-options.js';
import { patternBound, patternOdds, percentile, type Pattern } from './store-sim.js';
import { startPostgres, type PostgresServer } from '../test/helpers/postgres.js';

interface Scenario {
  name: string;
  pattern: Pattern;
  tasks: number;
  quickTasks: number;
  batch: number;
  threshold?: number;
  runners: number;
  maxRounds: number;
  sleep: number;
  aglMongo: number;
}
// From agent-lightning's .github/workflows/benchmark.yml; queue = its batch_partial (enqueue 1024 whenever fewer than `threshold` are in flight).
const SCENARIOS: Scenario[] = [
  { name: 'minimal', pattern: 'batch', tasks: 4096, quickTasks: 256, batch: 256, runners: 32, maxRounds: 6, sleep: 0.5, aglMongo: 8.71 },
  { name: 'medium', pattern: 'batch', tasks: 10000, quickTasks: 2000, batch: 1000, runners: 100, maxRounds: 10, sleep: 0.1, aglMongo: 32.79 },
  { name: 'midhigh', pattern: 'batch', tasks: 20000, quickTasks: 4096, batch: 2048, runners: 300, maxRounds: 6, sleep: 0.1, aglMongo: 40.24 },
  { name: 'large', pattern: 'batch', tasks: 50000, quickTasks: 8192, batch: 8192, runners: 1000, maxRounds: 3, sleep: 0.1, aglMongo: 50.05 },
  {
    name: 'longqueue',
    pattern: 'queue',
    tasks: 50000,
    quickTasks: 8192,
    batch: 1024,
    threshold: 4096,
    runners: 256,
    maxRounds: 4,
    sleep: 0.1,
    aglMongo: 57.01,
  },
  { name: 'heavy', pattern: 'queue', tasks: 10000, quickTasks: 2048, batch: 1024, threshold: 256, runners: 512, maxRounds: 20, sleep: 1.0, aglMongo: 29.41 },
];

/** The agents' limit (bench/README.md): runners / the mean sleep of a rollout. */
const limitOf = (sc: Scenario) => sc.runners / ((sc.sleep * (sc.maxRounds + 1)) / 2 + sc.sleep / 2);

/** Run from the repository root (npm run bench:store does). */
const root = process.cwd();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startDaemon(dataDir: string, store?: string): Promise<{ proc: ChildProcess; client: AglClient }> {
  // AGL_BENCH_PROFILE=<dir> writes CPU profiles of the daemon (and runners, in runner/) there.
  const profile = process.env.AGL_BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.AGL_BENCH_PROFILE] : [];
  const args = [...profile, '--import', 'tsx', join(root, 'daemon/cli.ts'), ...commandLine(SERVE_COMMAND, { port: '0', 'data-dir': dataDir, store })];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr!.on('data', (d) => {
    log = (log + d).slice(-4000);
  });
  for (let i = 0; i < 600; i++) {
    if (proc.exitCode !== null) throw new Error(`agl serve exited with ${proc.exitCode}: ${log}`);
    try {
      const client = AglClient.fromDataDir(dataDir, { timeoutMs: 180_000 });
      await client.health();
      return { proc, client };
    } catch {
      await sleep(100);
    }
  }
  proc.kill('SIGKILL');
  throw new Error(`agl serve did not come up: ${log}`);
}

/** CPU time a process has used so far (user + system), from /proc. */
function cpuMsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime in clock ticks of 10 ms
  } catch {
    return 0;
  }
}

function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

interface RunnerStats {
  cpuMs: number;
  rollouts: number;
  spans: number;
  claimLatenciesMs: number[];
  plannedSleepS: number[];
  errors: string[];
}

function startRunners(client: AglClient, token: string, sc: Scenario, procs: number) {
  const children = Array.from({ length: procs }, (_, p) => {
    const n = Math.floor(sc.runners / procs) + (p < sc.runners % procs ? 1 : 0);
    const profile = process.env.AGL_BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', join(process.env.AGL_BENCH_PROFILE, 'runner')] : [];
    const child = spawn(
      process.execPath,
      [
        ...profile,
        '--import',
        'tsx',
        join(root, 'bench/store-runner.ts'),
        client.url,
        token,
        String(n),
        String(sc.maxRounds),
        String(sc.sleep),
        `${sc.name}-p${p}`,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    let out = '';
    let markReady!: () => void;
    const ready = new Promise<void>((r) => (markReady = r));
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('ready\n')) markReady();
    });
    const stats = new Promise<RunnerStats>((resolve, reject) =>
      child.on('exit', (code) => {
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (code !== 0 || !line) reject(new Error(`runner process exited with ${code}`));
        else resolve(JSON.parse(line));
      }),
    );
    return { child, ready, stats };
  });
  return {
    ready: () => Promise.all(children.map((c) => c.ready)),
    async stop(): Promise<RunnerStats> {
      children.forEach((c) => c.child.stdin!.end());
      const all = await Promise.all(children.map((c) => c.stats));
      return {
        cpuMs: all.reduce((a, s) => a + s.cpuMs, 0),
        rollouts: all.reduce((a, s) => a + s.rollouts, 0),
        spans: all.reduce((a, s) => a + s.spans, 0),
        claimLatenciesMs: all.flatMap((s) => s.claimLatenciesMs),
        plannedSleepS: all.flatMap((s) => s.plannedSleepS),
        errors: all.flatMap((s) => s.errors),
      };
    },
  };
}

/** The algorithm side's check of one finished rollout (as agent-lightning's check_spans). */
async function checkRollout(client: AglClient, r: Rollout, task: string): Promise<string | null> {
  if (r.status !== 'succeeded') return `rollout ${r.id} ended ${r.status}`;
  const spans = await client.querySpans({ rolloutId: r.id, attemptId: 'latest' });
  if (!spans.some((s) => s.attributes.task === task)) return `task ${task} not found in the spans of ${r.id}`;
  const rewards = spans.filter((s) => s.name === SPAN.reward).sort((a, b) => a.sequenceId - b.sequenceId);
  const final = rewards.at(-1)?.attributes[AGL.rewardValue];
  if (typeof final !== 'number' || final < 1 || final > 2) return `final reward ${final} of ${r.id} not in [1, 2]`;
  return null;
}

/** Runs checks with bounded concurrency, collecting failures. */
class Checker {
  private inFlight = new Set<Promise<void>>();
  readonly failures: string[] = [];
  checked = 0;
  constructor(
    private readonly client: AglClient,
    private readonly limit = 16,
  ) {}
  async add(r: Rollout, task: string): Promise<void> {
    while (this.inFlight.size >= this.limit) await Promise.race(this.inFlight);
    const p: Promise<void> = checkRollout(this.client, r, task)
      .then(
        (f) => {
          this.checked++;
          if (f) this.failures.push(f);
        },
        (e) => {
          this.failures.push(String(e));
        },
      )
      .finally(() => {
        this.inFlight.delete(p);
      });
    this.inFlight.add(p);
  }
  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
  }
}

async function publishResources(client: AglClient, submitted: number): Promise<void> {
  await client.addResources({ resources: { llm: { type: 'llm', endpoint: `http://localhost:${submitted}/v1`, model: `test-model-${submitted}` } } });
}

async function runAlgorithm(client: AglClient, sc: Scenario, total: number, checker: Checker): Promise<void> {
  let submitted = 0;
  const active = new Map<string, string>();
  const enqueue = async (n: number) => {
    await publishResources(client, submitted);
    const tasks = Array.from({ length: n }, (_, i) => `task-${submitted + i}`);
    const rollouts = await client.enqueueRollouts(tasks.map((input) => ({ input, mode: 'train' as const })));
    rollouts.forEach((r, i) => active.set(r.id, tasks[i]!));
    submitted += n;
  };
  const collect = async (timeoutMs: number) => {
    for (const r of await client.waitForRollouts([...active.keys()], timeoutMs)) {
      const task = active.get(r.id)!;
      active.delete(r.id);
      await checker.add(r, task);
    }
  };
  if (sc.pattern === 'batch') {
    while (submitted < total) {
      await enqueue(Math.min(sc.batch, total - submitted));
      while (active.size > 0) await collect(2000);
      await checker.drain();
    }
  } else {
    while (submitted < total || active.size > 0) {
      if (submitted < total && active.size < sc.threshold!) {
        await enqueue(Math.min(sc.batch, total - submitted));
        continue;
      }
      await collect(200);
    }
    await checker.drain();
  }
}

async function runScenario(sc: Scenario, quick: boolean, procs: number, store?: string) {
  const total = quick ? sc.quickTasks : sc.tasks;
  const dataDir = mkdtempSync(join(tmpdir(), `agl-bench-${sc.name}-`));
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon(dataDir, store);
  } catch (e) {
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
  const { proc, client } = daemon;
  try {
    const token = readFileSync(join(dataDir, 'token'), 'utf8').trim();
    const runners = startRunners(client, token, sc, procs);
    await runners.ready();
    const checker = new Checker(client);
    const daemonCpu0 = cpuMsOf(proc.pid!);
    const algoCpu0 = process.cpuUsage();
    const t0 = performance.now();
    await runAlgorithm(client, sc, total, checker);
    const seconds = (performance.now() - t0) / 1000;
    const daemonCpuMs = cpuMsOf(proc.pid!) - daemonCpu0;
    const algoCpu = process.cpuUsage(algoCpu0);
    const stats = await runners.stop();
    const rss = peakRssMb(proc.pid!);
    const limit = limitOf(sc);
    const achieved = total / seconds;
    const bound = patternBound(sc, total, stats.plannedSleepS, limit);
    const odds = patternOdds(sc, total, limit);
    return {
      name: sc.name,
      total,
      seconds,
      achieved,
      limit,
      efficiency: achieved / limit,
      bound,
      odds,
      spansPerS: stats.spans / seconds,
      rss,
      cpuPerRollout: { daemon: daemonCpuMs / total, runners: stats.cpuMs / total, algorithm: (algoCpu.user + algoCpu.system) / 1000 / total },
      claims: stats.claimLatenciesMs,
      failures: [...checker.failures, ...stats.errors],
      checked: checker.checked,
      vsMongo: achieved / sc.aglMongo,
    };
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => {
      if (proc.exitCode !== null) r(null);
      else proc.once('exit', r);
    });
    rmSync(dataDir, { recursive: true, force: true });
  }
}

type ScenarioResult = Awaited<ReturnType<typeof runScenario>>;

/** A scenario's figures for bench/results/store.json. */
function scenarioMetrics(r: ScenarioResult): Record<string, number> {
  return {
    [`${r.name}.rollouts_per_s`]: +r.achieved.toFixed(2),
    [`${r.name}.efficiency`]: +r.efficiency.toFixed(4),
    [`${r.name}.spans_per_s`]: +r.spansPerS.toFixed(1),
    [`${r.name}.limit_rollouts_per_s`]: +r.limit.toFixed(2),
    [`${r.name}.pattern_bound`]: +r.bound.toFixed(4),
    [`${r.name}.pattern_bound_expected`]: +r.odds.mean.toFixed(4),
    [`${r.name}.pattern_share_reaching_90pct`]: +r.odds.shareAtTarget.toFixed(3),
    [`${r.name}.daemon_cpu_ms_per_rollout`]: +r.cpuPerRollout.daemon.toFixed(2),
    [`${r.name}.runner_cpu_ms_per_rollout`]: +r.cpuPerRollout.runners.toFixed(2),
    [`${r.name}.algorithm_cpu_ms_per_rollout`]: +r.cpuPerRollout.algorithm.toFixed(2),
    [`${r.name}.cpu_ceiling_rollouts_per_s`]: +(
      (cpus().length * 1000) /
      (r.cpuPerRollout.daemon + r.cpuPerRollout.runners + r.cpuPerRollout.algorithm)
    ).toFixed(1),
    [`${r.name}.load_avg_1m`]: +loadavg()[0]!.toFixed(2),
    [`${r.name}.vs_agl_mongo`]: +r.vsMongo.toFixed(2),
    [`${r.name}.tasks`]: r.total,
  };
}

/** A scenario's row of the table. */
function scenarioLine(r: ScenarioResult): string {
  return (
    `${r.name.padEnd(9)} ${String(r.total).padStart(6)} ${r.seconds.toFixed(1).padStart(8)} ${r.achieved.toFixed(1).padStart(11)} ${r.limit.toFixed(1).padStart(8)}` +
    ` ${(r.efficiency * 100).toFixed(1).padStart(10)}% ${(r.bound * 100).toFixed(1).padStart(13)}% ${r.vsMongo.toFixed(1).padStart(12)}x ${r.spansPerS.toFixed(0).padStart(8)}  ${r.checked - r.failures.length}/${r.total}` +
    `   cpu ms/rollout: daemon ${r.cpuPerRollout.daemon.toFixed(2)}, runners ${r.cpuPerRollout.runners.toFixed(2)}, algorithm ${r.cpuPerRollout.algorithm.toFixed(2)}; load ${loadavg()[0]!.toFixed(1)}`
  );
}

/** --bounds-only: what the workload allows a zero-cost store, per scenario, without running anything (seconds). */
function printBounds(only: string[] | null, quick: boolean): void {
  console.log('scenario   tasks  zero-overhead efficiency (mean of 1000 draws)  draws reaching 90% of the limit');
  for (const sc of SCENARIOS.filter((s) => !only || only.includes(s.name))) {
    const total = quick ? sc.quickTasks : sc.tasks;
    const odds = patternOdds(sc, total, limitOf(sc), 0.9, 1000);
    console.log(
      `${sc.name.padEnd(9)} ${String(total).padStart(6)}  ${(odds.mean * 100).toFixed(1).padStart(42)}%  ${(odds.shareAtTarget * 100).toFixed(1).padStart(31)}%`,
    );
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean' },
      only: { type: 'string' },
      'runner-procs': { type: 'string' },
      store: { type: 'string' },
      postgres: { type: 'boolean' },
      out: { type: 'string' },
      'bounds-only': { type: 'boolean' },
    },
  });
  if (values['bounds-only']) {
    printBounds(values.only ? values.only.split(',') : null, Boolean(values.quick));
    return;
  }
  const pg: PostgresServer | null = values.postgres ? await startPostgres() : null;
  const quick = Boolean(values.quick);
  const only = values.only ? values.only.split(',') : null;
  const procs = Number(values['runner-procs'] ?? 1);
  const metrics: Record<string, number> = {};
  const claims: number[] = [];
  let peakRss = 0;
  let failed = 0;
  const oddsLines: string[] = [];
  metrics.load_avg_1m_start = +loadavg()[0]!.toFixed(2);
  console.log(
    `store benchmark (${quick ? 'quick' : 'full'}), ${pg ? 'PostgreSQL (throwaway cluster)' : values.store ? 'store ' + values.store.replace(/\/\/[^@]*@/, '//') : 'SQLite'}, ${procs} runner process(es)`,
  );
  console.log('scenario   tasks  seconds  rollouts/s  limit/s  efficiency  pattern-bound  vs-agl-mongo  spans/s  checks');
  for (const sc of SCENARIOS.filter((s) => !only || only.includes(s.name))) {
    const r = await runScenario(sc, quick, procs, pg ? await pg.createDatabase() : values.store);
    claims.push(...r.claims);
    peakRss = Math.max(peakRss, r.rss);
    failed += r.failures.length + (r.total - r.checked);
    for (const f of r.failures.slice(0, 5)) console.error(`  ${sc.name}: ${f}`);
    Object.assign(metrics, scenarioMetrics(r));
    oddsLines.push(
      `${sc.name.padEnd(9)} zero-overhead efficiency over 200 fresh draws of the sleeps: mean ${(r.odds.mean * 100).toFixed(1)}%,` +
        ` ${(r.odds.shareAtTarget * 100).toFixed(1)}% of draws reach 90%`,
    );
    console.log(scenarioLine(r));
  }
  for (const line of oddsLines) console.log(line);
  claims.sort((a, b) => a - b);
  metrics.load_avg_1m_end = +loadavg()[0]!.toFixed(2);
  Object.assign(metrics, {
    claim_p50_ms: +percentile(claims, 0.5).toFixed(2),
    claim_p99_ms: +percentile(claims, 0.99).toFixed(2),
    peak_rss_mb: +peakRss.toFixed(1),
    failed_checks: failed,
  });
  console.log(`claims p50 ${metrics.claim_p50_ms} ms, p99 ${metrics.claim_p99_ms} ms; daemon peak RSS ${metrics.peak_rss_mb} MB; failed checks ${failed}`);
  const outDir = join(root, 'bench/results');
  if (!existsSync(outDir)) mkdirSync(outDir, { recursive: true });
  const machine = `${cpus().length}x ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`;
  const backend = pg || values.store?.startsWith('postgres') ? 'postgres' : 'sqlite';
  // SQLite (the default) writes store.json; a PostgreSQL run writes store-postgres.json beside it.
  writeFileSync(
    values.out ?? join(outDir, backend === 'sqlite' ? 'store.json' : 'store-postgres.json'),
    JSON.stringify({ date: new Date().toISOString(), machine, backend, quick, metrics }, null, 2) + '\n',
  );
  await pg?.stop();
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
