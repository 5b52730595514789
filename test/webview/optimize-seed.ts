/**
 * Fills a real daemon (through the typed client) with what a GEPA run of `agl optimize` leaves behind, as its store
 * records it: a run of kind 'optimize' with its summary, its candidates (the seed; reflections accepted, rejected on
 * their minibatch, refused by a check; a merge), their rollouts (minibatches on train tasks, every kept candidate on the
 * six val tasks) with rewards and the grader's feedback, and the optimizer's calls. The val scores are chosen so the
 * Pareto front and the best are known: #4 (the best, 5.5/6) and the merge #5 (best on v4) are on it.
 */
import { AGL, SPAN } from '../../protocol/spans.js';
import { candidateId, type PromptCandidate, type PromptCandidateInput } from '../../protocol/prompts.js';
import type { AglClient } from '../../client/client.js';

export const OPT_AGENT = 'samples/apo/agent.ts#deskAgent';
export const VAL_TASKS = ['v1', 'v2', 'v3', 'v4', 'v5', 'v6'];

const SYSTEM_SEED = 'You answer questions about an order record.\nAnswer with the value only.';
const FORMAT_SEED = 'Write the answer plainly.';
const SYSTEM_1 = 'You answer questions about an order record.\nA delivery date is the shipped date, not the placed date.\nAnswer with the value only.';
const FORMAT_4 = 'Write the answer plainly. Write dates as YYYY-MM-DD.';

/** One ended rollout of the run: its final reward and, when the grader said something, its feedback. */
export async function scoredRollout(
  client: AglClient,
  runId: string,
  candidate: string,
  taskId: string,
  split: 'train' | 'val' | 'test',
  score: number,
  feedback?: string,
): Promise<string> {
  const { rollout, attempt } = await client.startRollout({
    input: { question: `task ${taskId}` },
    mode: split === 'train' ? 'train' : split,
    agent: OPT_AGENT,
    metadata: { runId, candidate, taskId, split },
  });
  const now = Date.now();
  await client.addSpans([
    {
      rolloutId: rollout.id,
      attemptId: attempt.id,
      name: SPAN.reward,
      startTime: now,
      endTime: now,
      attributes: { [AGL.rewardValue]: score, ...(feedback ? { [AGL.rewardFeedback]: feedback } : {}) },
    },
  ]);
  await client.finishAttempt(attempt.id, { status: 'succeeded' });
  return rollout.id;
}

/** A candidate of the run as the optimizer stores it. */
export function candidate(runId: string, ordinal: number, prompts: Record<string, string>, lineage: Partial<PromptCandidateInput> = {}): PromptCandidateInput {
  return {
    id: candidateId(runId, ordinal),
    runId,
    ordinal,
    prompts,
    parents: [],
    origin: 'seed',
    component: null,
    reflection: null,
    minibatch: null,
    ...lineage,
  };
}

/** A stored candidate record of run `runId` (the seed without parents, else a reflection on its parents), for pure tests. */
export function candidateRecord(runId: string, ordinal: number, parents: number[], o: Partial<PromptCandidate> = {}): PromptCandidate {
  return {
    id: candidateId(runId, ordinal),
    runId,
    ordinal,
    prompts: { system: `s${ordinal}` },
    parents: parents.map((p) => candidateId(runId, p)),
    origin: parents.length > 1 ? 'merge' : parents.length ? 'reflection' : 'seed',
    component: parents.length === 1 ? 'system' : null,
    reflection: null,
    minibatch: null,
    status: 'accepted',
    reason: null,
    scores: { minibatch: null, val: null, test: null },
    resourcesId: null,
    createdAt: ordinal,
    decidedAt: null,
    ...o,
  };
}

/** Scores on v1..v6. */
const VAL: Record<number, number[]> = {
  0: [0, 1, 0, 0, 1, 0],
  1: [1, 1, 0, 0, 1, 1],
  4: [1, 1, 1, 0.5, 1, 1],
  5: [1, 0, 1, 1, 1, 1],
};
const FEEDBACK: Record<string, string> = {
  v1: 'wrong date: expected the shipped date 2024-03-09, got the placed date',
  v3: 'date format: expected 2024-03-09, got March 9, 2024',
  v4: 'name format: expected Ann Lee, got ann lee',
  v6: 'wrong date: expected the shipped date 2024-05-02, got the placed date',
};

async function scoreOnVal(client: AglClient, runId: string, ordinal: number): Promise<void> {
  const id = candidateId(runId, ordinal);
  for (const [i, task] of VAL_TASKS.entries()) {
    const score = VAL[ordinal]![i]!;
    await scoredRollout(client, runId, id, task, 'val', score, score < 1 ? FEEDBACK[task] : undefined);
  }
}

/** A finished GEPA run of two prompts: returns its id. */
export async function seedOptimization(client: AglClient): Promise<string> {
  const run = await client.createTrainingRun({
    agent: OPT_AGENT,
    kind: 'optimize',
    totalSteps: 120,
    config: { prompts: ['system', 'format'], algorithm: 'gepa', budget: 120 },
  });
  const id = run.id;
  const seed = candidate(id, 0, { system: SYSTEM_SEED, format: FORMAT_SEED });
  await client.addPromptCandidate(seed);
  await scoreOnVal(client, id, 0);
  await client.decidePromptCandidate(seed.id, { status: 'accepted', scores: { val: 2 / 6 } });

  const mb = ['t1', 't2', 't3'];
  const reflect = (ordinal: number, parent: number, component: string, prompts: Record<string, string>, reflection: string) =>
    candidate(id, ordinal, prompts, { parents: [candidateId(id, parent)], origin: 'reflection', component, reflection, minibatch: mb });
  const c1 = reflect(
    1,
    0,
    'system',
    { system: SYSTEM_1, format: FORMAT_SEED },
    'Two answers gave the placed date where the delivery date was asked: the prompt never says which field a delivery date is.',
  );
  await client.addPromptCandidate(c1);
  for (const [t, s] of [
    ['t1', 1],
    ['t2', 1],
    ['t3', 0],
  ] as const)
    await scoredRollout(client, id, c1.id, t, 'train', s);
  await scoreOnVal(client, id, 1);
  await client.decidePromptCandidate(c1.id, { status: 'accepted', scores: { minibatch: { parent: 1 / 3, child: 2 / 3 }, val: 4 / 6 } });

  const c2 = reflect(2, 1, 'format', { system: SYSTEM_1, format: 'Write the answer in full sentences.' }, 'The answers are terse; full sentences may help.');
  await client.addPromptCandidate(c2);
  for (const t of mb) await scoredRollout(client, id, c2.id, t, 'train', 0, 'expected the value only');
  await client.decidePromptCandidate(c2.id, {
    status: 'rejected',
    reason: 'not better than its parent on its minibatch (0.000 vs 0.667)',
    scores: { minibatch: { parent: 2 / 3, child: 0 } },
  });

  const c3 = reflect(3, 1, 'system', { system: 'Answer {question} briefly.', format: FORMAT_SEED }, 'Shorter is better.');
  await client.addPromptCandidate({ ...c3, status: 'refused', reason: 'it drops a placeholder the seed has: none; it adds {question}, which no var fills' });

  const c4 = reflect(
    4,
    1,
    'format',
    { system: SYSTEM_1, format: FORMAT_4 },
    // As an optimizer answers the reflection meta-prompt: its reasons, then the new text in one ``` block.
    `Dates were written out in words (March 9, 2024) where the grader expects 2024-03-09.\n\n\`\`\`\n${FORMAT_4}\n\`\`\``,
  );
  await client.addPromptCandidate(c4);
  for (const t of mb) await scoredRollout(client, id, c4.id, t, 'train', 1);
  await scoreOnVal(client, id, 4);
  await client.decidePromptCandidate(c4.id, { status: 'accepted', scores: { minibatch: { parent: 2 / 3, child: 1 }, val: 5.5 / 6 } });

  const c5 = candidate(id, 5, { system: SYSTEM_SEED, format: FORMAT_4 }, { parents: [candidateId(id, 4), candidateId(id, 0)], origin: 'merge' });
  await client.addPromptCandidate(c5);
  await scoreOnVal(client, id, 5);
  await client.decidePromptCandidate(c5.id, { status: 'accepted', scores: { val: 5 / 6 } });

  for (let seq = 0; seq < 4; seq++) {
    await client.addOptimizerCall({
      runId: id,
      seq,
      purpose: 'reflect',
      model: 'scripted-optimizer',
      requestHash: `h${seq}`,
      messages: [{ role: 'user', content: `reflect ${seq}` }],
      response: '```\nnew prompt\n```',
      error: null,
      attempts: 1,
      promptTokens: 900,
      completionTokens: 120,
      cost: null,
      ms: 40,
    });
  }
  await client.updateTrainingRun(id, {
    status: 'succeeded',
    step: 52,
    summary: {
      stopReason: 'completed',
      rollouts: 52,
      budget: 120,
      optimizerCalls: 4,
      judgeCalls: 58,
      judgeTokens: { prompt: 41000, completion: 3100 },
      judgeCost: 0.0123,
      seedCandidate: seed.id,
      bestCandidate: c4.id,
      scores: { seed: { val: 2 / 6, test: 0.25 }, best: { val: 5.5 / 6, test: 0.9 } },
      candidates: 6,
    },
  });
  return id;
}
