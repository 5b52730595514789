/**
 * `npm run bench:judge [-- --quick] [-- --steps N] [-- --ways judge,random]` (bench/README.md): does an LLM judge teach as the reward it stands
 * in for? The calc demo (`npm run demo`: the shipped warm-up, samples/calc/train.yaml, the real gateway and runner)
 * trained three ways for the same number of GRPO steps and the same seed (train.yaml's training.seed), so a loaded
 * machine changes only the wall time, never how much each way trained; held-out accuracy always measured by calc's own
 * exact-answer reward
 * (judge.validation auto: calc rewards its validation rollouts itself):
 *   programmatic  the agent's own reward (the demo as it is)
 *   judge         an LLM judge whose rubric holds the expected answers (a scripted judge model over HTTP,
 *                 test/helpers/scripted-judge.ts: it reads each trajectory's final answer and the rubric's answer for
 *                 the task it is sent), in group mode, its scores replacing the agent's reward
 *   right90/80/70 a judge right 90%, 80%, 70% of the time: the answer key's 0/1 score flipped with probability 0.1,
 *                 0.2, 0.3, a fresh draw per score of every call (scripted-judge.ts noisyJudge), as a model sampled at
 *                 temperature > 0 is; it still carries 80%, 60%, 40% of the signal and must teach most of it
 *   position      a judge that scores only the place a trajectory is shown at (positionJudge): it must teach nothing
 *   random        a judge that scores at random: every score of every call a fresh draw of a seeded sequence
 *                 (scripted-judge.ts randomJudge), so a trajectory shown twice gets two unrelated scores; it must teach
 *                 nothing (judge.retest reads its weight 0 and leaves its groups out of the update)
 *   arbitrary     (only when --ways names it) a judge whose score is a fixed hash of the trajectory's text
 *                 (arbitraryJudge): consistent with itself, so no retest can see it, but unrelated to the answers; what
 *                 the random way was before it drew per call. It is an arbitrary reward function, not noise.
 * The bars (issues #41, #50): judge's held-out within 0.05 of programmatic's; random's and position's within 0.05 of where
 * they started; right80's gain at least 0.8 of programmatic's.
 * Each judged way also reports the judge's mean test-retest reliability (between separate calls) and weight over the
 * steps, and the groups left out at weight 0 (daemon/judge/reliability.ts).
 * Writes bench/results/judge.json (`{date, machine, quick, ways, metrics}`); with --ways naming fewer than the three,
 * bench/results/judge-<ways>.json, and a bar only when both its ways ran. --quick: 3 steps each (the shape only: the
 * bars are for the full budget).
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SqliteStore } from '../daemon/store/sqlite.js';
import { METRICS } from '../protocol/metrics.js';
import { runCalcDemo } from '../samples/calc/demo.js';
import { DATA_DIR } from '../samples/calc/make-data.js';
import {
  answerKeyJudge,
  arbitraryJudge,
  noisyJudge,
  positionJudge,
  randomJudge,
  startScriptedJudge,
  type JudgeRequest,
  type ScoreLine,
} from '../test/helpers/scripted-judge.js';

const ALL_WAYS = ['judge', 'right90', 'right80', 'right70', 'position', 'random', 'programmatic', 'arbitrary'] as const;
type Way = (typeof ALL_WAYS)[number];
/** The judges first: a judge that cannot be reached or read shows in minutes, not after a whole programmatic run. */
const WAYS: Way[] = ['judge', 'right90', 'right80', 'right70', 'position', 'random', 'programmatic'];
/** The bars the issue sets (held-out accuracy, 0-1). */
const BAR = 0.05;
/** A judge right 80% of the time must reach this share of the programmatic reward's held-out gain (issue #50). */
const NOISY_SHARE = 0.8;
/**
 * GRPO steps per way: where `npm run demo`'s held-out curve has levelled off (past 0.84 after 8 steps, 0.88-0.92 from
 * step ~37 in samples/calc/README.md's run), and three runs of it fit a session on a shared 2-core machine. Its
 * 6 minutes made 56-85 steps on a quiet machine; bench/README.md says why the budget is steps.
 */
const STEPS = 32;
const QUICK_STEPS = 3;

/** A rubric that holds every training and held-out task's expected answer, one `- question => answer` line each. */
function answerRubric(): string {
  const lines = ['train.jsonl', 'val.jsonl'].flatMap((f) =>
    readFileSync(join(DATA_DIR, f), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { question: string; answer: number })
      .map((t) => `- ${t.question} => ${t.answer}`),
  );
  return ['A trajectory scores 1 when its final answer is the expected answer the list below gives for its task, else 0.', ...lines].join('\n');
}

/** One way of training the demo for `steps` steps: held-out before and after, minutes, the judge's calls and tokens. */
async function trainOneWay(way: Way, steps: number, rubricFile: string) {
  const scorers: Record<Way, (() => (r: JudgeRequest) => ScoreLine[]) | null> = {
    judge: answerKeyJudge,
    right90: () => noisyJudge(0.9, 11),
    right80: () => noisyJudge(0.8, 11),
    right70: () => noisyJudge(0.7, 11),
    position: positionJudge,
    random: () => randomJudge(11),
    arbitrary: () => arbitraryJudge(11),
    programmatic: null,
  };
  const score = scorers[way]?.() ?? null;
  const judge = score ? await startScriptedJudge({ score }) : null;
  const dataDir = mkdtempSync(join(tmpdir(), `agl-bench-judge-${way}-`));
  try {
    // No time limit (train.yaml's maxMinutes 6 would cut a loaded run short): the steps are the budget.
    const budget = { 'max-steps': String(steps), 'max-minutes': '0' };
    const flags = judge ? { ...budget, 'judge-url': judge.url, 'judge-model': `scripted-${way}`, 'judge-rubric': rubricFile } : budget;
    const r = await runCalcDemo({ dataDir, quiet: true, flags });
    const store = new SqliteStore(join(dataDir, 'store.sqlite'));
    const points = await store.queryMetrics(r.runId);
    await store.close();
    const sum = (name: string) => points.filter((p) => p.name === name).reduce((a, p) => a + p.value, 0);
    const reliability = points.filter((p) => p.name === METRICS.judgeReliability);
    const weight = points.filter((p) => p.name === METRICS.judgeWeight);
    return {
      before: r.before ?? 0,
      after: r.after ?? 0,
      minutes: r.minutes,
      steps: r.steps,
      judgeCalls: sum(METRICS.judgeCalls),
      judgeTokens: sum(METRICS.judgeTokens),
      judgeFailedGroups: sum(METRICS.judgeFailedGroups),
      ...(reliability.length ? { judgeReliabilityMean: reliability.reduce((a, p) => a + p.value, 0) / reliability.length } : {}),
      ...(weight.length ? { judgeWeightMean: weight.reduce((a, p) => a + p.value, 0) / weight.length } : {}),
      ...(judge ? { judgeUnreliableGroups: sum(METRICS.judgeUnreliableGroups) } : {}),
    };
  } finally {
    await judge?.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, steps: { type: 'string' }, ways: { type: 'string' } } });
  const steps = values.steps ? Number(values.steps) : values.quick ? QUICK_STEPS : STEPS;
  if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps must be a whole number of GRPO steps, at least 1; got '${values.steps}'`);
  const ways = values.ways ? waysOf(values.ways) : WAYS;
  const rubricFile = join(mkdtempSync(join(tmpdir(), 'agl-bench-judge-')), 'rubric.md');
  writeFileSync(rubricFile, answerRubric());
  const metrics: Record<string, number> = { budget_steps: steps };
  for (const way of ways) {
    process.stderr.write(`bench:judge: training calc with the ${way} reward for ${steps} steps\n`);
    const r = await trainOneWay(way, steps, rubricFile);
    for (const [k, v] of Object.entries(r)) metrics[`${way}.${k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`] = round(v);
  }
  if (ways.includes('judge') && ways.includes('programmatic')) {
    metrics['judge.gap_to_programmatic'] = round(Math.abs(metrics['judge.after']! - metrics['programmatic.after']!));
    metrics['bar.judge_within_0_05_of_programmatic'] = metrics['judge.gap_to_programmatic']! <= BAR ? 1 : 0;
  }
  for (const w of ['random', 'position'] as const)
    if (ways.includes(w)) {
      metrics[`${w}.gain`] = round(metrics[`${w}.after`]! - metrics[`${w}.before`]!);
      metrics[`bar.${w}_within_0_05_of_start`] = Math.abs(metrics[`${w}.gain`]!) <= BAR ? 1 : 0;
    }
  if (ways.includes('programmatic'))
    for (const w of ['right90', 'right80', 'right70'] as const)
      if (ways.includes(w)) {
        const gain = metrics['programmatic.after']! - metrics['programmatic.before']!;
        metrics[`${w}.share_of_programmatic_gain`] = gain > 0 ? round((metrics[`${w}.after`]! - metrics[`${w}.before`]!) / gain) : 0;
      }
  if (metrics['right80.share_of_programmatic_gain'] !== undefined)
    metrics['bar.right80_at_least_0_8_of_programmatic_gain'] = metrics['right80.share_of_programmatic_gain']! >= NOISY_SHARE ? 1 : 0;
  const machine = `${cpus().length}x ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}, load ${loadavg()[0]!.toFixed(1)}`;
  mkdirSync('bench/results', { recursive: true });
  const full = WAYS.every((w) => ways.includes(w));
  const file = full ? 'bench/results/judge.json' : `bench/results/judge-${ways.join('-')}.json`;
  writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), machine, quick: values.quick, ways, metrics }, null, 2)}\n`);
  const f = (k: string) => (metrics[k] === undefined ? '-' : metrics[k]!.toFixed(2)).padStart(7);
  process.stdout.write(
    `\nreward         before   after  steps  minutes  judge calls  reliability  weight  unreliable groups\n` +
      ways
        .map(
          (w) =>
            `${w.padEnd(13)} ${f(`${w}.before`)} ${f(`${w}.after`)} ${String(metrics[`${w}.steps`] ?? '-').padStart(6)} ${f(`${w}.minutes`)} ${String(metrics[`${w}.judge_calls`] ?? 0).padStart(12)}` +
            ` ${f(`${w}.judge_reliability_mean`).padStart(12)} ${f(`${w}.judge_weight_mean`)} ${String(metrics[`${w}.judge_unreliable_groups`] ?? '-').padStart(18)}`,
        )
        .join('\n') +
      bars(metrics) +
      `${values.quick ? '\n(--quick: the shape only; the bars are for the full budget)' : ''}\nwritten ${file}\n`,
  );
}

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;

/** The ways --ways names (comma-separated), checked. */
function waysOf(list: string): Way[] {
  const ways = list.split(',').map((w) => w.trim());
  const unknown = ways.filter((w) => !(ALL_WAYS as readonly string[]).includes(w));
  if (unknown.length || !ways.length) throw new Error(`--ways takes a comma-separated list of ${ALL_WAYS.join(', ')}; got '${list}'`);
  return [...new Set(ways)] as Way[];
}

/** The bars the ways run allow, in words. */
function bars(m: Record<string, number>): string {
  const met = (k: string) => (m[k] ? 'met' : 'NOT met');
  const gap = m['judge.gap_to_programmatic'];
  const gain = m['random.gain'];
  return (
    (gap === undefined ? '' : `\njudge vs programmatic: ${gap.toFixed(2)} apart (bar ${BAR}: ${met('bar.judge_within_0_05_of_programmatic')})`) +
    (gain === undefined ? '' : `\nrandom judge: ${gain.toFixed(2)} from its start (bar ${BAR}: ${met('bar.random_within_0_05_of_start')})`) +
    (m['position.gain'] === undefined
      ? ''
      : `\nposition-only judge: ${m['position.gain'].toFixed(2)} from its start (bar ${BAR}: ${met('bar.position_within_0_05_of_start')})`) +
    (['right90', 'right80', 'right70'] as const)
      .filter((w) => m[`${w}.share_of_programmatic_gain`] !== undefined)
      .map(
        (w) =>
          `\n${w}: ${m[`${w}.share_of_programmatic_gain`]!.toFixed(2)} of the programmatic gain${w === 'right80' ? ` (bar ${NOISY_SHARE}: ${met('bar.right80_at_least_0_8_of_programmatic_gain')})` : ''}`,
      )
      .join('')
  );
}

main().then(
  () => process.exit(0),
  (e: Error) => {
    process.stderr.write(`bench:judge failed: ${e.stack ?? e.message}\n`);
    process.exit(1);
  },
);
