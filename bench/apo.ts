/**
 * `npm run bench:apo [-- --quick]` (bench/README.md): what prompt optimization costs to reach a score. The order desk
 * (samples/apo: hidden rules the seed prompt states none of, feedback naming what broke) on its scripted
 * OpenAI-compatible server, GEPA and the beam search on the same tasks and seeds, each run a real `agl optimize`
 * (daemon/optimize/optimize-run.ts) through the daemon's gateway and one runner pool. Per algorithm: how many runs reach
 * a best val score of 0.9, the rollouts and optimizer tokens they spent until then (median), the held-out test score of
 * the seed and of the best, the rollouts spent in all. Writes bench/results/apo.json.
 *   --quick: 3 seeds instead of 10 (the same budgets).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { OptimizeOutcome } from '../daemon/optimize/optimize-run.js';
import { METRICS } from '../protocol/metrics.js';
import { deskFlags, DESK_AGENT, type OptimizeStack, startOptimizeStack } from '../test/helpers/optimize-stack.js';
import { machine, round } from './gateway-processes.js';

const { values } = parseArgs({ options: { quick: { type: 'boolean' } } });
const quick = values.quick === true;
const SEEDS = Array.from({ length: quick ? 3 : 10 }, (_, i) => i);
/** GEPA's budget is the 300; the beam's is what AGL's defaults (4 x 4 x 3 rounds, val batches of 16) need. */
const ALGORITHMS = { gepa: { budget: 300 }, beam: { budget: 1200 } } as const;
const TARGET = 0.9;
/** Runs at once (their rollouts share the runner pool). */
const PARALLEL = 5;

interface RunFigures {
  reached: boolean;
  rolloutsTo: number | null;
  tokensTo: number | null;
  seedTest: number;
  bestTest: number;
  rollouts: number;
  tokens: number;
}

/** When a run's best val first reached the target: the rollouts spent then and the optimizer tokens spent until then. */
async function figures(stack: OptimizeStack, o: OptimizeOutcome): Promise<RunFigures> {
  const store = stack.conn.store;
  const points = (await store.queryMetrics(o.runId)).filter((p) => p.name === METRICS.optimizeBestVal).sort((a, b) => a.step - b.step);
  const hit = points.find((p) => p.value >= TARGET) ?? null;
  const calls = await store.listOptimizerCalls(o.runId);
  const tokens = (cs: typeof calls) => cs.reduce((a, c) => a + c.promptTokens + c.completionTokens, 0);
  return {
    reached: hit !== null,
    rolloutsTo: hit?.step ?? null,
    tokensTo: hit ? tokens(calls.filter((c) => c.createdAt <= hit.time)) : null,
    seedTest: o.scores.seed.test ?? 0,
    bestTest: o.scores.best.test ?? 0,
    rollouts: o.rollouts,
    tokens: tokens(calls),
  };
}

const median = (xs: number[]) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const avg = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);

async function main(): Promise<void> {
  const started = Date.now();
  const load = loadavg()[0]!;
  const stack = await startOptimizeStack({ workers: 10, perProcess: 5 });
  const metrics: Record<string, number> = {};
  const rows: string[] = [];
  try {
    for (const [algorithm, { budget }] of Object.entries(ALGORITHMS)) {
      const runs: RunFigures[] = [];
      for (let i = 0; i < SEEDS.length; i += PARALLEL) {
        const batch = SEEDS.slice(i, i + PARALLEL).map((seed) =>
          stack.optimize(DESK_AGENT, deskFlags(stack.llm, { algorithm, budget: String(budget), seed: String(seed) })).then((o) => figures(stack, o)),
        );
        runs.push(...(await Promise.all(batch)));
      }
      const reached = runs.filter((r) => r.reached);
      const m = {
        runs: runs.length,
        runs_reaching_val_0_9: reached.length,
        rollouts_to_val_0_9_median: median(reached.map((r) => r.rolloutsTo!)),
        optimizer_tokens_to_val_0_9_median: median(reached.map((r) => r.tokensTo!)),
        test_seed_mean: round(avg(runs.map((r) => r.seedTest))),
        test_best_mean: round(avg(runs.map((r) => r.bestTest))),
        runs_test_best_at_least_0_9: runs.filter((r) => r.bestTest >= TARGET).length,
        rollouts_spent_mean: round(avg(runs.map((r) => r.rollouts)), 1),
        budget_rollouts: budget,
        optimizer_tokens_mean: round(avg(runs.map((r) => r.tokens)), 0),
      };
      for (const [k, v] of Object.entries(m)) if (v !== null) metrics[`${algorithm}.${k}`] = v;
      rows.push(
        `${algorithm.padEnd(5)} ${String(reached.length).padStart(2)}/${runs.length} reach val ${TARGET}   rollouts ${String(m.rollouts_to_val_0_9_median ?? '-').padStart(6)}   ` +
          `optimizer tokens ${String(m.optimizer_tokens_to_val_0_9_median ?? '-').padStart(7)}   test ${m.test_seed_mean.toFixed(3)} -> ${m.test_best_mean.toFixed(3)}   ` +
          `spent ${m.rollouts_spent_mean} of ${budget}`,
      );
    }
  } finally {
    await stack.close();
  }
  metrics.minutes = round((Date.now() - started) / 60000, 2);
  metrics.load_average_at_start = round(load, 2);
  process.stdout.write(`order desk, ${SEEDS.length} seeds (medians over the runs that reached val ${TARGET}):\n${rows.join('\n')}\n`);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/apo.json', JSON.stringify({ date: new Date().toISOString(), machine: machine(), quick, metrics }, null, 2) + '\n');
  process.stdout.write('wrote bench/results/apo.json\n');
}

void main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
