/**
 * `npm run bench:learning [-- --sample calc] [-- --quick]` (bench/README.md): does training make each
 * sample agent better? For each sample: held-out score of the starting policy and after training, and the
 * wall-clock minutes, through the real gateway and runner. Writes bench/results/learning.json with
 * `<sample>.before`, `<sample>.after`, `<sample>.minutes` (+ `<sample>.warmup_minutes` when a warm-up ran).
 * Adding a sample = one entry in SAMPLES: a function that trains it and returns those figures.
 * `--credit-sweep` compares credit strategies and AIR on one sample instead (bench/credit-sweep.ts).
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { dirname, join } from 'node:path';
import type { RoleRowName } from './roles.js';

export interface LearningResult {
  before: number;
  after: number;
  minutes: number;
  warmupMinutes?: number;
  testBefore?: number;
  testAfter?: number;
}
export interface LearningSample {
  describe: string;
  run(o: { quick: boolean }): Promise<LearningResult>;
}

export const SAMPLES: Record<string, LearningSample> = {
  calc: {
    describe: 'calc (tool use): SFT warm-up checkpoint, then GRPO; greedy exact-answer accuracy on 100 held-out problems',
    async run({ quick }) {
      const { runCalcDemo } = await import('../samples/calc/demo.js');
      const { calcScore } = await import('../samples/calc/inspect.js');
      const r = await runCalcDemo({ minutes: quick ? 1.5 : undefined, quiet: true });
      const test = 'samples/calc/data/test.jsonl';
      return {
        before: r.before ?? 0,
        after: r.after ?? 0,
        minutes: r.minutes,
        warmupMinutes: r.warmupMinutes,
        testBefore: await calcScore(r.warmup, test),
        testAfter: await calcScore(r.checkpoint, test),
      };
    },
  },
  'calc-torch': {
    describe: 'calc on the torch engine (engines/torch: transformers GPT-2, one process): the same shipped warm-up, train.yaml and budget as calc',
    async run({ quick }) {
      const { runCalcDemo } = await import('../samples/calc/demo.js');
      const { calcScore } = await import('../samples/calc/inspect.js');
      const r = await runCalcDemo({ minutes: quick ? 1.5 : undefined, quiet: true, engine: 'torch' });
      const test = 'samples/calc/data/test.jsonl';
      return {
        before: r.before ?? 0,
        after: r.after ?? 0,
        minutes: r.minutes,
        warmupMinutes: r.warmupMinutes,
        testBefore: await calcScore(r.warmup, test),
        testAfter: await calcScore(r.checkpoint, test),
      };
    },
  },
  // The samples' entries: SFT warm-up from the sample's demonstrations, then agl train (samples/harness/learning.ts).
  sql: learnedSample('sql (three LangChain.js agents, writer+rewriter trained): greedy execution accuracy on 40 held-out questions', 'sql', 'SQL_LEARNING', 20),
  rag: learnedSample('rag (OpenAI Agents SDK, two-hop retrieval): greedy token F1 on 40 held-out questions', 'rag', 'RAG_LEARNING', 20),
  'calc-py': learnedSample(
    'calc-py (standard-library Python agent via the Python runner): greedy exact-answer accuracy on 100 held-out problems',
    'calc-py',
    'CALC_PY_LEARNING',
    6,
  ),
};

/** A sample trained by the learning harness with its samples/<dir>/learn.ts description (SFT warm-up, then GRPO). */
function learnedSample(describe: string, dir: string, entry: string, minutes: number): LearningSample {
  return {
    describe,
    async run({ quick }) {
      const mod = (await import(`../samples/${dir}/learn.js`)) as Record<string, unknown>;
      const { learnSample } = await import('../samples/harness/learning.js');
      const r = await learnSample(mod[entry] as Parameters<typeof learnSample>[0], {
        minutes: quick ? 1.5 : minutes,
        sftSteps: quick ? 30 : undefined,
        quiet: true,
      });
      return {
        before: r.before ?? 0,
        after: r.after ?? 0,
        minutes: r.minutes,
        warmupMinutes: r.warmupMinutes,
        testBefore: r.testBefore,
        testAfter: r.testAfter,
      };
    },
  };
}

/** The command line (--roles, --credit-sweep or the samples' learning runs, and their settings). */
function parseLearningArgs() {
  return parseArgs({
    options: {
      sample: { type: 'string', multiple: true },
      quick: { type: 'boolean', default: false },
      // --credit-sweep (bench/credit-sweep.ts) and its budget
      'credit-sweep': { type: 'boolean', default: false },
      // --roles (bench/roles.ts): one policy per role against one shared policy
      roles: { type: 'boolean', default: false },
      // ... which rows: shared, own, own-task-role (comma-separated; default shared,own)
      'roles-rows': { type: 'string' },
      // --roles-chart: only redraw samples/<sample>/results/roles-curves.png from the results file (--out: beside it)
      'roles-chart': { type: 'boolean', default: false },
      seeds: { type: 'string', default: '2' },
      minutes: { type: 'string' },
      'max-steps': { type: 'string' },
      'sft-steps': { type: 'string' },
      out: { type: 'string', default: 'bench/results/credit.json' },
      workers: { type: 'string' },
      'val-size': { type: 'string' },
      'batch-size': { type: 'string' },
      'group-size': { type: 'string' },
    },
  }).values;
}
type LearningArgs = ReturnType<typeof parseLearningArgs>;

/** --roles (bench/roles.ts) and --roles-chart: one policy per role against one shared policy, and its chart. */
async function rolesRun(values: LearningArgs): Promise<void> {
  const { rolesBench, formatRoles, ROLE_ROWS } = await import('./roles.js');
  const { writeRolesChart } = await import('./roles-chart.js');
  const out = values.out === 'bench/results/credit.json' ? 'bench/results/roles.json' : values.out!;
  const sample = values.sample?.[0] ?? 'sql';
  // The samples' READMEs show the results file's curves; another --out gets its chart beside it.
  const chart = out === 'bench/results/roles.json' ? `samples/${sample}/results/roles-curves.png` : join(dirname(out), `${sample}-roles-curves.png`);
  if (!values.roles) {
    writeRolesChart(out, sample, chart);
    process.stdout.write(`drawn ${chart} from ${out}\n`);
    return;
  }
  const wanted = values['roles-rows']?.split(',').map((r) => r.trim());
  const bad = wanted?.find((r) => !(ROLE_ROWS as readonly string[]).includes(r));
  if (bad) throw new Error(`--roles-rows: '${bad}' is not one of ${ROLE_ROWS.join(', ')}`);
  const rows = await rolesBench({
    sample,
    rows: wanted as RoleRowName[] | undefined,
    seeds: Number(values.seeds),
    minutes: Number(values.minutes ?? 20),
    out,
  });
  writeRolesChart(out, sample, chart);
  process.stdout.write(`\n${formatRoles(rows)}\nwritten ${out}, ${chart}\n`);
}

/** --credit-sweep (bench/credit-sweep.ts). */
async function creditSweepRun(values: LearningArgs): Promise<void> {
  const { creditSweep, formatSweep } = await import('./credit-sweep.js');
  const num = (v: string | undefined, name: string) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${v}'`);
    return n;
  };
  const rows = await creditSweep({
    sample: values.sample?.[0] ?? 'rag',
    seeds: num(values.seeds, 'seeds')!,
    minutes: num(values.minutes, 'minutes'),
    maxSteps: num(values['max-steps'], 'max-steps'),
    sftSteps: num(values['sft-steps'], 'sft-steps'),
    out: values.out!,
    workers: num(values.workers, 'workers'),
    valSize: num(values['val-size'], 'val-size'),
    batchSize: num(values['batch-size'], 'batch-size'),
    groupSize: num(values['group-size'], 'group-size'),
  });
  process.stdout.write(`\n${formatSweep(rows)}\nwritten ${values.out}\n`);
}

/** The samples' learning runs (every sample, or those --sample names), into bench/results/learning.json. */
async function samplesRun(values: LearningArgs): Promise<void> {
  const names = values.sample?.length ? values.sample : Object.keys(SAMPLES);
  for (const n of names) if (!SAMPLES[n]) throw new Error(`unknown sample '${n}': one of ${Object.keys(SAMPLES).join(', ')}`);
  const file = 'bench/results/learning.json';
  // Keep other samples' figures from earlier runs: one sample at a time is the common case.
  const previous = existsSync(file) ? ((JSON.parse(readFileSync(file, 'utf8')) as { metrics?: Record<string, number> }).metrics ?? {}) : {};
  const metrics: Record<string, number> = { ...previous };
  for (const n of names) {
    process.stderr.write(`bench:learning: ${n}: ${SAMPLES[n].describe}\n`);
    const r = await SAMPLES[n].run({ quick: values.quick ?? false });
    metrics[`${n}.before`] = round(r.before);
    metrics[`${n}.after`] = round(r.after);
    metrics[`${n}.minutes`] = round(r.minutes, 2);
    if (r.warmupMinutes) metrics[`${n}.warmup_minutes`] = round(r.warmupMinutes, 2);
    if (r.testBefore !== undefined) metrics[`${n}.test_before`] = round(r.testBefore);
    if (r.testAfter !== undefined) metrics[`${n}.test_after`] = round(r.testAfter);
  }
  const machine = `${cpus().length}x ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`;
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), machine, quick: values.quick ?? false, metrics }, null, 2)}\n`);
  const f = (k: string) => (metrics[k] === undefined ? '-' : metrics[k].toFixed(2)).padStart(6);
  process.stdout.write(
    `\nsample   before  after  test before  test after  minutes\n${names.map((n) => `${n.padEnd(8)} ${f(`${n}.before`)} ${f(`${n}.after`)} ${f(`${n}.test_before`).padStart(11)} ${f(`${n}.test_after`).padStart(11)} ${metrics[`${n}.minutes`].toFixed(1).padStart(8)}`).join('\n')}\nwritten ${file}\n`,
  );
}

async function main(): Promise<void> {
  const values = parseLearningArgs();
  if (values.roles || values['roles-chart']) return rolesRun(values);
  if (values['credit-sweep']) return creditSweepRun(values);
  return samplesRun(values);
}

function round(x: number, d = 3): number {
  return Math.round(x * 10 ** d) / 10 ** d;
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench:learning failed: ${(e as Error).message}\n`);
    process.exit(1);
  },
);
