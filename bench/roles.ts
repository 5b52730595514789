/**
 * `npm run bench:learning -- --roles [--sample sql|rag] [--seeds 2] [--minutes M]` (issue #26 item 5): one policy per
 * role against one shared policy, on a multi-agent sample, from the same shipped warm-up and the same time budget.
 *  - shared: the sample's own train.yaml (sql: writer and rewriter trained, one set of weights; rag: every call);
 *  - own: `policies:` with a policy per trained role (sql: writer, rewriter; rag: query_writer, answerer), each
 *    starting from the warm-up; the other roles (sql's checker) served, untrained, by the default policy.
 * Each row runs `agl train` once per seed (training.seed 1..n). Reports the held-out (val split, greedy) score before
 * and after training, the steps it made in the budget, each role's calls at the last step, and the process's peak
 * resident memory while it trained (sampled every 0.5 s); then the test split (never used in training or selection),
 * scored greedily by the sample's inspect script on the final checkpoint, served as the run served it (`agl serve
 * --model <checkpoint>`: each role from its own policy), with what each role did there (`behaviour`). Writes the
 * sample's entry of bench/results/roles.json (or --out), keeping the other samples' entries.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { deepMerge, readConfigFile } from '../daemon/algorithm/config.js';
import { trainAgent } from '../daemon/commands/train.js';
import { SqliteStore } from '../daemon/store/sqlite.js';
import { METRICS, parseRoleMetric } from '../protocol/metrics.js';
import { RAG_LEARNING } from '../samples/rag/learn.js';
import { SQL_LEARNING } from '../samples/sql/learn.js';
import { readJsonl } from '../daemon/algorithm/sft-trainer.js';
import type { RagTask } from '../samples/rag/corpus.js';
import type { SqlTask } from '../samples/sql/task.js';
import { makeWarmup, type SampleLearning } from '../samples/harness/learning.js';

/** What each role did on the test split (shares of episodes, 0..1) and the split's score (sql: accuracy, rag: token F1). */
export type Behaviour = { score: number } & Record<string, number>;

const share = <T>(xs: T[], f: (x: T) => boolean) => (xs.length ? xs.filter(f).length / xs.length : 0);

/** Scores a checkpoint greedily on the test split with the sample's inspect script, and sorts what each role did. */
async function sqlBehaviour(checkpoint: string, file: string): Promise<Behaviour> {
  const { inspectSql } = await import('../samples/sql/inspect.js');
  const eps = await inspectSql(checkpoint, readJsonl<SqlTask>(file));
  const rewritten = eps.filter((e) => e.rewrites > 0);
  return {
    score: mean(eps.map((e) => e.reward)),
    // writer: its first query returns the gold rows
    writerGold: share(eps, (e) => e.writer === 'gold rows'),
    writerError: share(eps, (e) => e.writer === 'plural table' || e.writer === 'other error'),
    // checker said no (the rewriter was called) and, of those, the final query was right (the rewriter repaired it)
    rewritten: share(eps, (e) => e.rewrites > 0),
    repaired: share(rewritten, (e) => e.reward === 1),
  };
}

async function ragBehaviour(checkpoint: string, file: string): Promise<Behaviour> {
  const { inspectRag } = await import('../samples/rag/inspect.js');
  const eps = await inspectRag(checkpoint, readJsonl<RagTask>(file));
  const found = eps.filter((e) => e.bridgeFound);
  return {
    score: mean(eps.map((e) => e.f1)),
    // query_writer: hop 1 names the question's entity, hop 2 follows the bridge, the answer's document was found
    hop1Expert: share(eps, (e) => e.hop1Expert),
    hop2Bridge: share(eps, (e) => e.hop2 === 'bridge'),
    found: share(eps, (e) => e.bridgeFound),
    // answerer: given the answer's document, the answer's F1 and how often it is exactly the gold
    answerF1GivenFound: mean(found.map((e) => e.f1)),
    exactGivenFound: share(found, (e) => e.f1 === 1),
  };
}

const SAMPLES: Record<string, { learning: SampleLearning; roles: string[]; behaviour: (checkpoint: string, file: string) => Promise<Behaviour> }> = {
  sql: { learning: SQL_LEARNING, roles: ['writer', 'rewriter'], behaviour: sqlBehaviour },
  rag: { learning: RAG_LEARNING, roles: ['query_writer', 'answerer'], behaviour: ragBehaviour },
};

export interface RolesRun {
  seed: number;
  before: number;
  after: number;
  steps: number;
  minutes: number;
  peakRssMiB: number;
  /** Each role's LLM calls in the last training step. */
  calls: Record<string, number>;
  /** The test split on the final checkpoint (greedy), and what each role did there. */
  test: Behaviour;
  /** Training reward (mean over the step's rollouts, 3 decimals) at each step, from the run's store; drawn by roles-chart.ts. */
  curve?: number[];
}
/** A row: one shared policy or one per role, GRPO groups per task or per task and role (training.groupBy). */
export const ROLE_ROWS = ['shared', 'own', 'own-task-role'] as const;
export type RoleRowName = (typeof ROLE_ROWS)[number];
export interface RolesRow {
  policies: RoleRowName;
  /** When and under what load the row ran (rows of a sample may come from different runs of the bench). */
  date?: string;
  loadAverageAtEnd?: number;
  runs: RolesRun[];
  meanAfter: number;
  meanGain: number;
  meanTestAfter: number;
}
export interface RolesOptions {
  sample: string;
  /** The rows to run (default shared and own); a row already in the results file for the sample is replaced. */
  rows?: RoleRowName[];
  seeds: number;
  minutes: number;
  out: string;
}

const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);

/** The run's steps, each role's calls at its last step, and its training reward at each step. */
async function runRecord(dataDir: string): Promise<{ steps: number; calls: Record<string, number>; curve: number[] }> {
  const store = new SqliteStore(join(dataDir, 'store.sqlite'));
  try {
    const [run] = await store.listTrainingRuns();
    if (!run) return { steps: 0, calls: {}, curve: [] };
    const points = await store.queryMetrics(run.id);
    const rewards = points.filter((p) => p.name === METRICS.rewardMean).sort((a, b) => a.step - b.step);
    const last = Math.max(-1, ...rewards.map((p) => p.step));
    const calls: Record<string, number> = {};
    for (const p of points) {
      const m = parseRoleMetric(p.name);
      if (m?.metric === 'calls' && p.step === last) calls[m.role] = p.value;
    }
    return { steps: run.step, calls, curve: rewards.map((p) => Math.round(p.value * 1000) / 1000) };
  } finally {
    await store.close();
  }
}

type RoleSample = (typeof SAMPLES)[string];
/** What every run of the bench shares: the sample, the warm-up it starts from, the sample's config and the test split. */
interface Bench {
  s: RoleSample;
  o: RolesOptions;
  warmup: string;
  base: Record<string, unknown>;
  testFile: string;
  testBefore: Behaviour;
}

/** One training run of a row at one seed, in `dir`: its val scores, steps, peak memory, calls and test behaviour. */
async function roleRun(b: Bench, policies: RoleRowName, seed: number, dir: string): Promise<RolesRun> {
  const { s, o } = b;
  mkdirSync(dir, { recursive: true });
  const config = deepMerge(b.base, {
    training: { seed, maxMinutes: o.minutes, ...(policies === 'own-task-role' ? { groupBy: 'task-role' } : {}) },
    runtime: { checkpointDir: join(dir, 'checkpoint') },
    ...(policies === 'shared' ? {} : { policies: Object.fromEntries(s.roles.map((r) => [r, {}])) }),
  });
  writeFileSync(join(dir, 'train.yaml'), stringify(config));
  process.stderr.write(`roles bench: ${o.sample} ${policies} seed ${seed} (${o.minutes} min), load ${loadavg()[0]!.toFixed(2)}\n`);
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 500);
  try {
    const { agent, train, val } = s.learning;
    const r = await trainAgent({ agent, train, val, model: b.warmup, config: join(dir, 'train.yaml'), 'data-dir': dir, quiet: true });
    if (!r) throw new Error('training was interrupted');
    clearInterval(sampler);
    const { steps, calls, curve } = await runRecord(dir);
    const test = await s.behaviour(r.checkpoint, b.testFile);
    process.stderr.write(
      `  -> val ${(r.before ?? 0).toFixed(3)} -> ${(r.after ?? 0).toFixed(3)} in ${steps} steps, peak RSS ${Math.round(peak / 2 ** 20)} MiB; ` +
        `test ${b.testBefore.score.toFixed(3)} -> ${test.score.toFixed(3)} ${JSON.stringify(test)}\n`,
    );
    return { seed, before: r.before ?? 0, after: r.after ?? 0, steps, minutes: r.minutes, peakRssMiB: Math.round(peak / 2 ** 20), calls, test, curve };
  } finally {
    clearInterval(sampler);
  }
}

/** The results file: one entry per sample, one row per setting; this run's rows replace the same rows, the others stay. */
function writeRoles(b: Bench, rows: RolesRow[]): void {
  const { s, o } = b;
  mkdirSync(dirname(o.out), { recursive: true });
  const machine = `${cpus().length}x ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`;
  const prior = existsSync(o.out) ? (JSON.parse(readFileSync(o.out, 'utf8')) as { samples?: Record<string, { rows?: RolesRow[] }> }) : {};
  const kept = (prior.samples?.[o.sample]?.rows ?? []).filter((r) => !rows.some((n) => n.policies === r.policies));
  const entry = {
    ...prior.samples?.[o.sample],
    date: new Date().toISOString(),
    machine,
    loadAverageAtEnd: loadavg()[0],
    seeds: o.seeds,
    minutesPerRun: o.minutes,
    warmup: b.warmup,
    roles: s.roles,
    score:
      'held-out val split (greedy) before and after training as agl train scores it; test split (greedy, never seen in training or selection) ' +
      'on the final checkpoint served as the run served it, scored by the sample inspect script; the same warm-up, config and budget per row',
    testBefore: b.testBefore,
    rows: [...kept, ...rows].sort((a, r) => ROLE_ROWS.indexOf(a.policies) - ROLE_ROWS.indexOf(r.policies)),
  };
  writeFileSync(o.out, `${JSON.stringify({ samples: { ...(prior.samples ?? {}), [o.sample]: entry } }, null, 2)}\n`);
}

export async function rolesBench(o: RolesOptions): Promise<RolesRow[]> {
  const s = SAMPLES[o.sample];
  if (!s) throw new Error(`--roles --sample ${o.sample}: one of ${Object.keys(SAMPLES).join(', ')}`);
  const work = mkdtempSync(join(tmpdir(), `agl-roles-${o.sample}-`));
  try {
    const { warmup } = await makeWarmup(s.learning, work);
    const base = readConfigFile(s.learning.config) as Record<string, unknown>;
    const testFile = s.learning.test!.file;
    process.stderr.write(`roles bench: the warm-up on the test split\n`);
    const bench: Bench = { s, o, warmup, base, testFile, testBefore: await s.behaviour(warmup, testFile) };
    const rows: RolesRow[] = [];
    let k = 0;
    for (const policies of o.rows ?? (['shared', 'own'] as const)) {
      const runs: RolesRun[] = [];
      for (let seed = 1; seed <= o.seeds; seed++) runs.push(await roleRun(bench, policies, seed, join(work, `run-${++k}`)));
      rows.push({
        policies,
        date: new Date().toISOString(),
        loadAverageAtEnd: loadavg()[0],
        runs,
        meanAfter: mean(runs.map((r) => r.after)),
        meanGain: mean(runs.map((r) => r.after - r.before)),
        meanTestAfter: mean(runs.map((r) => r.test.score)),
      });
    }
    writeRoles(bench, rows);
    return rows;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export function formatRoles(rows: RolesRow[]): string {
  return [
    'policies      val after  val gain  test after  runs (seed: val before -> after, test, steps, peak RSS)',
    ...rows.map(
      (r) =>
        `${r.policies.padEnd(13)} ${r.meanAfter.toFixed(3).padStart(9)}  ${r.meanGain.toFixed(3).padStart(8)}  ${r.meanTestAfter.toFixed(3).padStart(10)}  ` +
        r.runs
          .map((x) => `${x.seed}: ${x.before.toFixed(3)} -> ${x.after.toFixed(3)}, test ${x.test.score.toFixed(3)}, ${x.steps} steps, ${x.peakRssMiB} MiB`)
          .join('; '),
    ),
  ].join('\n');
}
