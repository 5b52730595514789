/**
 * One evaluation's lifecycle (`agl eval`), as optimize-run.ts is `agl optimize`'s, whose host it shares: its record (a
 * run of kind 'eval'), the host of its rollouts (this process's own gateway, store API and runner workers, or the
 * workers alone against a running daemon: optimize-run.ts hostRollouts), one resources version (the agent's model, and
 * a prompt_template per pinned prompt), the dataset's tasks rolled out `repeat` times each (RolloutMetadata { runId,
 * taskId, sample }, and `candidate` when prompts are pinned, so llm.prompt returns their texts), every ended rollout
 * graded (grading.ts), and the summary kept in the record: per task its scores and verdict, the mean with its 95%
 * interval, pass@k. A comparison with an earlier eval run reads that run's summary (compareWithRun).
 */
import { type EvalSummary, type EvalTaskResult } from '../../protocol/eval.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { Resource, Rollout, RolloutInput } from '../../protocol/store.js';
import { openJudge } from '../judge/open-judge.js';
import type { Judge } from '../judge/judge.js';
import { rolloutConfig, waitForEnded } from '../optimize/evaluator.js';
import { hostRollouts, llmResource, type OptimizeConnection } from '../optimize/optimize-run.js';
import { newId } from '../store/common.js';
import type { EvalTask } from './dataset.js';
import type { EvalPlan } from './eval-plan.js';
import { gradeRollout, type SampleGrade } from './grading.js';
import { compareTasks, type Comparison, mean, meanInterval } from '../../protocol/eval-stats.js';

export interface EvalReporter {
  log(line: string): void;
  /** Rollouts ended (then graded) of all. */
  progress?(done: number, total: number, note: string): void;
}

export interface EvalOutcome {
  runId: string;
  summary: EvalSummary;
}

/** Graded at once (the judge caps its own calls in flight). */
const GRADE_BATCH = 8;

/** Runs the plan's evaluation to its end and records it; throws (the run recorded failed or cancelled) on an error or `signal`. */
export async function runEval(plan: EvalPlan, conn: OptimizeConnection, o: { signal: AbortSignal; report: EvalReporter }): Promise<EvalOutcome> {
  const c = plan.config;
  const store = conn.store;
  const started = Date.now();
  const runId = newId('eval');
  const total = plan.tasks.length * c.repeat;
  await store.createTrainingRun({ id: runId, agent: c.agent, config: c as never, totalSteps: total, kind: 'eval' });
  o.report.log(`agl eval: run ${runId}: ${plan.tasks.length} tasks x ${c.repeat} of ${c.data.file}; the agent's model ${modelSaid(plan)}`);
  try {
    const judge = plan.judge ? openJudge(plan.judge, { seed: 1, log: (m) => o.report.log(`  ${m}`), signal: o.signal }) : null;
    const host = await hostRollouts({ ...c, workers: plan.workers }, conn, (m) => o.report.log(`  ${m}`));
    let rollouts: Rollout[];
    try {
      const ids = await enqueue(plan, runId, store, host.endpoint);
      let ended = 0;
      const note = () => `${ended} of ${total} rollouts ended`;
      rollouts = await waitForEnded(store, ids, {
        agent: c.agent,
        signal: o.signal,
        onRollout: () => o.report.progress?.(++ended, total, note()),
        log: (m) => o.report.log(`agl eval: ${m}`),
      });
    } finally {
      await host.close();
    }
    const grades = await gradeAll(store, plan.tasks, rollouts, judge);
    const summary = summarize(plan, rollouts, grades, started);
    await store.updateTrainingRun(runId, { status: 'succeeded', step: total, totalSteps: total, summary: summary as never });
    return { runId, summary };
  } catch (e) {
    const status = o.signal.aborted ? 'cancelled' : 'failed';
    await store.updateTrainingRun(runId, { status, summary: { error: (e as Error).message } }).catch(() => {});
    throw e;
  }
}

function modelSaid(plan: EvalPlan): string {
  const up = plan.config.llm.upstream;
  const prompts = Object.entries(plan.config.prompts).map(([n, v]) => `${n}=${v}`);
  return `${up ? `${up.model} at ${up.url}` : `the local policy ${plan.config.llm.model ?? '(the daemon serves)'}`}${prompts.length ? `; prompts ${prompts.join(', ')}` : ''}`;
}

/** The run's resources version and its rollouts, task by task, sample by sample (the order the results read them in). */
async function enqueue(plan: EvalPlan, runId: string, store: LightningStore, endpoint: string): Promise<string[]> {
  const c = plan.config;
  const templates = Object.entries(plan.promptTexts).map(([name, template]) => [name, { type: 'prompt_template', template, engine: 'f-string' }] as const);
  const resources: Record<string, Resource> = { llm: llmResource(c.llm, endpoint), ...Object.fromEntries(templates) };
  const resourcesId = (await store.addResources({ resources, metadata: { runId } })).id;
  // A rollout naming a candidate gets its resources' prompt_templates (daemon/runner/attempt-prompts.ts).
  const versions = [...new Set(Object.values(c.prompts))].sort();
  const candidate = versions.length ? { candidate: versions.join('+') } : {};
  const inputs: RolloutInput[] = plan.tasks.flatMap((t) =>
    Array.from({ length: c.repeat }, (_, sample) => ({
      input: t.input,
      mode: 'test' as const,
      agent: c.agent,
      resourcesId,
      config: rolloutConfig(plan.rolloutTimeoutSeconds),
      metadata: { runId, taskId: t.id, sample, ...candidate },
    })),
  );
  return (await store.enqueueRollouts(inputs)).map((r) => r.id);
}

/** Every rollout graded by its task's grader (rollouts in enqueue order: task by task, `repeat` each). */
async function gradeAll(store: LightningStore, tasks: EvalTask[], rollouts: Rollout[], judge: Judge | null): Promise<SampleGrade[]> {
  const repeat = rollouts.length / tasks.length;
  const out: SampleGrade[] = [];
  for (let i = 0; i < rollouts.length; i += GRADE_BATCH) {
    const batch = rollouts.slice(i, i + GRADE_BATCH);
    out.push(...(await Promise.all(batch.map((r, j) => gradeRollout(store, r, tasks[Math.floor((i + j) / repeat)]!, judge)))));
  }
  return out;
}

/** Per task its samples' grades; over tasks the mean, its interval, pass@k. */
function summarize(plan: EvalPlan, rollouts: Rollout[], grades: SampleGrade[], started: number): EvalSummary {
  const { repeat, pass } = plan.config;
  const tasks: EvalTaskResult[] = plan.tasks.map((t, i) => {
    const own = grades.slice(i * repeat, (i + 1) * repeat);
    const scores = own.map((g) => g.score);
    // The verdict shown: the first failing sample's (what to fix), else the first sample's.
    const shown = own.find((g) => g.score < pass) ?? own[0]!;
    return {
      id: t.id,
      scores,
      mean: mean(scores),
      passed: scores.some((s) => s >= pass),
      grader: t.grader.name,
      answer: shown.answer,
      expected: t.expected === undefined ? null : JSON.stringify(t.expected),
      reason: shown.reason,
      rolloutIds: rollouts.slice(i * repeat, (i + 1) * repeat).map((r) => r.id),
      errored: own.some((g) => g.errored),
    };
  });
  const means = tasks.map((t) => t.mean);
  return {
    tasks,
    mean: mean(means),
    interval: meanInterval(means),
    passAtK: tasks.filter((t) => t.passed).length / tasks.length,
    repeat,
    elapsedMs: Date.now() - started,
  };
}

/**
 * An earlier eval run's per-task means (by task id), read before this evaluation runs so a wrong run id is refused
 * before anything is spent; throws naming the flag.
 */
export async function baselineMeans(store: LightningStore, flag: string, runId: string): Promise<Map<string, number>> {
  const run = await store.getTrainingRun(runId);
  if (!run) throw new Error(`--${flag} ${runId}: no such run in this store`);
  if (run.kind !== 'eval') throw new Error(`--${flag} ${runId}: that run is a ${run.kind} run, not an eval run (agl eval prints its run id)`);
  const tasks = (run.summary as Partial<EvalSummary>).tasks;
  if (run.status !== 'succeeded' || !Array.isArray(tasks))
    throw new Error(`--${flag} ${runId}: that eval run did not finish (${run.status}): nothing to compare with`);
  return new Map(tasks.map((t) => [t.id, t.mean]));
}

/** This evaluation against a baseline's per-task means; throws naming the flag when they share no task. */
export function compareWithBaseline(flag: string, runId: string, before: ReadonlyMap<string, number>, summary: EvalSummary): Comparison {
  const cmp = compareTasks(runId, before, new Map(summary.tasks.map((t) => [t.id, t.mean])));
  if (cmp.tasks === 0) throw new Error(`--${flag} ${runId}: it has none of these task ids: nothing to compare task by task`);
  return cmp;
}
