/**
 * A prompt optimization as the editor's optimization view shows it (protocol/webview-optimize.ts OptimizationView),
 * assembled in one request (GET /v1/agl/views/optimization?runId=) over any LightningStore, as views.ts assembles the
 * viewer's: the run, its candidates and optimizer calls, and every rollout of the run (paged through: a budget is
 * hundreds), whose metadata says which candidate it scored on which task of which split (protocol/store.ts
 * RolloutMetadata). A val rollout's score is its final reward from the store's summary when it succeeded (0 when it
 * ended without one, and when it failed: protocol/span-reading.ts rolloutScore); its feedback needs its reward spans
 * only, and its other spans only when it recorded an error the summary does not say.
 */
import { MAX_PAGE } from '../../protocol/api.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { paretoFront } from '../../protocol/pareto.js';
import { SPAN } from '../../protocol/spans.js';
import { rolloutFeedback, rolloutScore } from '../../protocol/span-reading.js';
import { TERMINAL_ROLLOUT_STATUSES, readRolloutMetadata, type Rollout, type RolloutSummary } from '../../protocol/store.js';
import type { OptimizerCall } from '../../protocol/prompts.js';
import type { CandidateTaskScore, CurvePoint, OptimizationCandidate, OptimizationView } from '../../protocol/webview-optimize.js';
import { mapLimit } from './views.js';

/** A rollout of the run, its summary, and its place in the run's order (1 = the first rollout it spent). */
interface RunRollout {
  rollout: Rollout;
  summary: RolloutSummary;
  used: number;
}

const ENDED = new Set<string>(TERMINAL_ROLLOUT_STATUSES);

/** Every rollout of the run, oldest first. */
async function runRollouts(store: LightningStore, runId: string): Promise<RunRollout[]> {
  const out: RunRollout[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.queryRollouts({ runId, order: 'asc', limit: MAX_PAGE, cursor, withSummaries: true });
    for (const [i, rollout] of page.items.entries()) out.push({ rollout, summary: page.summaries![i]!, used: out.length + 1 });
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

/**
 * The val set (task ids in the order first rolled out) and, per candidate and val task, the rollout its score is read
 * from: the first of them to have ended (a resumed run may have rolled a task out again).
 */
function valRollouts(rollouts: RunRollout[]): { valTasks: string[]; chosen: Map<string, Map<string, RunRollout>> } {
  const tasks = new Set<string>();
  const chosen = new Map<string, Map<string, RunRollout>>();
  for (const r of rollouts) {
    const { candidate, taskId, split } = readRolloutMetadata(r.rollout.metadata);
    if (split !== 'val' || candidate === undefined || taskId === undefined) continue;
    tasks.add(taskId);
    if (!ENDED.has(r.rollout.status)) continue;
    let byTask = chosen.get(candidate);
    if (!byTask) chosen.set(candidate, (byTask = new Map()));
    if (!byTask.has(taskId)) byTask.set(taskId, r);
  }
  return { valTasks: [...tasks], chosen };
}

/**
 * What the rollout's grader or failure said (protocol/span-reading.ts rolloutFeedback), else its attempt's error. A
 * rollout that did not succeed says its error first (the runner's message: a timeout, a crash, the agent's exception).
 */
async function feedbackOf(store: LightningStore, r: RunRollout): Promise<string | null> {
  if (r.rollout.status !== 'succeeded') return r.summary.error ?? rolloutFeedback(await store.querySpans({ rolloutId: r.rollout.id, attemptId: 'latest' }));
  const rewards = await store.querySpans({ rolloutId: r.rollout.id, attemptId: 'latest', name: SPAN.reward });
  const said = rolloutFeedback(rewards) ?? r.summary.error;
  if (said !== null || r.summary.errorSpans === 0) return said;
  return rolloutFeedback(await store.querySpans({ rolloutId: r.rollout.id, attemptId: 'latest' }));
}

/** The best val mean so far, where it rose: after how many rollouts each candidate's val set was complete. */
function bestCurve(rows: OptimizationCandidate[], completedAt: Map<string, number>): CurvePoint[] {
  const done = rows.filter((c) => c.valMean !== null).sort((a, b) => completedAt.get(a.id)! - completedAt.get(b.id)! || a.ordinal - b.ordinal);
  const curve: CurvePoint[] = [];
  for (const c of done) {
    if (curve.length && c.valMean! <= curve.at(-1)!.best) continue;
    curve.push({ rollouts: completedAt.get(c.id)!, best: c.valMean!, candidateId: c.id });
  }
  return curve;
}

function callTotals(calls: OptimizerCall[]): OptimizationView['calls'] {
  const sum = (f: (c: OptimizerCall) => number) => calls.reduce((s, c) => s + f(c), 0);
  const priced = calls.filter((c) => c.cost !== null);
  return {
    count: calls.length,
    tokens: { prompt: sum((c) => c.promptTokens), completion: sum((c) => c.completionTokens) },
    cost: priced.length ? priced.reduce((s, c) => s + c.cost!, 0) : null,
  };
}

/** The optimization `runId` as its view shows it, read from the store now. */
export async function optimizationView(store: LightningStore, runId: string): Promise<OptimizationView> {
  const run = await store.getTrainingRun(runId);
  if (!run) throw new Error(`optimization run '${runId}' does not exist in this daemon's store`);
  const [candidates, calls, rollouts, promotedNow] = await Promise.all([
    store.listPromptCandidates(runId),
    store.listOptimizerCalls(runId),
    runRollouts(store, runId),
    store.listPromotedPrompts(run.agent),
  ]);
  const prompts = Array.isArray(run.config.prompts) ? run.config.prompts : [];
  const promoted = promotedNow.filter((p) => prompts.includes(p.name));
  const { valTasks, chosen } = valRollouts(rollouts);
  const perCandidate = new Map<string, number>();
  for (const r of rollouts) {
    const { candidate } = readRolloutMetadata(r.rollout.metadata);
    if (candidate !== undefined) perCandidate.set(candidate, (perCandidate.get(candidate) ?? 0) + 1);
  }
  const completedAt = new Map<string, number>();
  const rows = await mapLimit(candidates, 4, async (c): Promise<OptimizationCandidate> => {
    const byTask = [...(chosen.get(c.id) ?? new Map<string, RunRollout>()).entries()];
    const scored = await mapLimit(byTask, 8, async ([taskId, r]): Promise<[string, CandidateTaskScore]> => [
      taskId,
      { score: rolloutScore(r.rollout.status, r.summary.finalReward), feedback: await feedbackOf(store, r), rolloutId: r.rollout.id },
    ]);
    const val = Object.fromEntries(scored);
    const complete = valTasks.length > 0 && valTasks.every((t) => t in val);
    if (complete) completedAt.set(c.id, Math.max(...byTask.map(([, r]) => r.used)));
    const valMean = complete ? valTasks.reduce((s, t) => s + val[t]!.score, 0) / valTasks.length : null;
    return { ...c, val, valMean, rollouts: perCandidate.get(c.id) ?? 0 };
  });
  const front = paretoFront(rows.filter((c) => c.valMean !== null).map((c) => ({ id: c.id, scores: valTasks.map((t) => c.val[t]!.score) })));
  return { run, candidates: rows, valTasks, front, curve: bestCurve(rows, completedAt), rolloutsUsed: rollouts.length, calls: callTotals(calls), promoted };
}
