/**
 * `agl eval <agent> --data F [--model SPEC | --upstream URL --upstream-model M] [--prompt NAME=VERSION] [--repeat K]
 * [--baseline RUN] [--min SCORE] [--no-worse-than RUN] [--junit F] [--json]`: evaluates the agent on a dataset
 * (daemon/eval/). This command parses its flags, checks what it can before anything runs (the dataset's rows, the
 * pinned prompts, the baseline runs: daemon/eval/eval-plan.ts), runs the evaluation with a progress bar and Ctrl-C,
 * prints per-task results, the mean and the comparisons, writes the JUnit XML, and sets the exit code from the gates.
 * Its store and host are `agl optimize`'s (the data dir's store with its own gateway and workers, or --url's daemon).
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { commandHelp } from '../../protocol/cli-options.js';
import { EVAL_COMMAND, type EvalFlags } from '../../protocol/cli-commands.js';
import { compareUri } from '../../protocol/eval-compare.js';
import { planEval, type EvalPlan } from '../eval/eval-plan.js';
import { baselineMeans, compareWithBaseline, runEval, type EvalOutcome } from '../eval/eval-run.js';
import { comparisonLines, gates, junitXml, outcomeJson, resultLines } from '../eval/report.js';
import type { Comparison } from '../../protocol/eval-stats.js';
import type { OptimizeConnection } from '../optimize/optimize-run.js';
import { parseCommand } from './flags.js';
import { connect } from './optimize.js';
import { Progress } from './progress.js';

const HELP = commandHelp(EVAL_COMMAND);
const say = (line: string) => process.stderr.write(`${line}\n`);
/** The flags naming an earlier eval run to compare with. */
const BASELINE_FLAGS = ['baseline', 'no-worse-than'] as const;

export async function run(argv: string[]): Promise<number> {
  const a = parseCommand(EVAL_COMMAND, argv, HELP);
  if ('exit' in a) return a.exit;
  const f = a.values;
  const agent = a.positionals[0];
  if (!agent || a.positionals.length > 1) {
    process.stderr.write(`agl eval: give one agent (file.ts#export or module:function)\n\n${HELP}`);
    return 2;
  }
  const conn = await connect(f);
  try {
    let plan: EvalPlan;
    const baselines = new Map<string, Map<string, number>>();
    try {
      plan = await planEval(agent, f, conn.store);
      for (const flag of BASELINE_FLAGS) {
        const id = f[flag];
        if (!id || baselines.has(id)) continue;
        const means = await baselineMeans(conn.store, flag, id);
        if (!plan.tasks.some((t) => means.has(t.id)))
          throw new Error(`--${flag} ${id}: it has none of this dataset's task ids: nothing to compare task by task`);
        baselines.set(id, means);
      }
    } catch (e) {
      say(`agl eval: ${(e as Error).message}`);
      return 2;
    }
    const outcome = await evaluate(plan, conn, f);
    if (!outcome) return 130;
    return finish(plan, outcome, baselines, f);
  } finally {
    await conn.store.close();
  }
}

/** Runs the plan with a progress bar on stderr (none with --json or --quiet) and Ctrl-C stopping it; null when stopped. */
async function evaluate(plan: EvalPlan, conn: OptimizeConnection, f: EvalFlags): Promise<EvalOutcome | null> {
  const controller = new AbortController();
  const onSignal = () => {
    say('\nagl eval: stopping (the run is recorded cancelled)');
    controller.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const bar = f.quiet || f.json ? null : new Progress('eval', plan.tasks.length * plan.config.repeat);
  try {
    const report = { log: (m: string) => (bar ? bar.log(m) : say(m)), progress: (done: number, _total: number, note: string) => bar?.update(done, note) };
    return await runEval(plan, conn, { signal: controller.signal, report });
  } catch (e) {
    if (controller.signal.aborted) return null;
    throw e;
  } finally {
    bar?.done();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Prints the results and comparisons, writes --junit, and returns the exit code the gates give. */
function finish(plan: EvalPlan, outcome: EvalOutcome, baselines: Map<string, Map<string, number>>, f: EvalFlags): number {
  const { runId, summary } = outcome;
  const comparisons: Record<string, Comparison> = {};
  for (const flag of BASELINE_FLAGS) {
    const id = f[flag];
    if (id && !comparisons[id]) comparisons[id] = compareWithBaseline(flag, id, baselines.get(id)!, summary);
  }
  const min = f.min === undefined ? null : Number(f.min);
  const results = gates(summary, min, f['no-worse-than'] ? comparisons[f['no-worse-than']]! : null);
  if (f.junit) writeFileSync(resolve(f.junit), junitXml(runId, plan.config, summary));
  if (f.json) process.stdout.write(`${JSON.stringify(outcomeJson(runId, summary, comparisons, results))}\n`);
  else {
    const lines = [
      ...resultLines(runId, summary),
      ...Object.values(comparisons).flatMap(comparisonLines),
      ...results.map((g) => `${g.ok ? 'ok' : 'FAILED'}: ${g.said}`),
    ];
    process.stdout.write(lines.map((l) => `${l}\n`).join(''));
  }
  if (f.junit && !f.json) say(`agl eval: JUnit XML written to ${f.junit}`);
  // Where the two runs show side by side: the editor's compare view (its command, or this URI).
  if (f.baseline) say(`agl eval: compare them in VS Code: ${compareUri(f.baseline, runId)} (or "Agent Lightning: Compare Eval Runs")`);
  return results.every((g) => g.ok) ? 0 : 1;
}
