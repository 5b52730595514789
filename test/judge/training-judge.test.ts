/**
 * Training with an LLM judge as the reward, end to end through the real pieces (SQLite store, the gateway serving the
 * policy being trained, runner worker processes running the toy agent with the openai client, a scripted judge model
 * over HTTP): a judge that goes by the rubric's rule (the toy's own reward, read from the trajectories it is sent)
 * teaches the policy; one that scores at random (every score of every call a fresh draw) teaches nothing: its scores do
 * not reproduce between separate calls (judge.retest), so its weight is 0 and its groups are left out of the update,
 * where the rubric judge's test-retest reliability is 1 throughout and its weight near 1. Held-out reward is the toy agent's own (validation `auto`: the agent rewards its rollouts). Also: every step records the judge's calls, tokens and cost; its rewards
 * are on the rollouts; no transition is a judge span and `agl export` never sees one.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { exportTransitions } from '../../daemon/algorithm/export.js';
import { onePolicySet } from '../../daemon/algorithm/open-policy-set.js';
import { Trainer } from '../../daemon/algorithm/trainer.js';
import { newTrainerState } from '../../daemon/algorithm/trainer-state.js';
import { startTrainingHost } from '../../daemon/algorithm/training-host.js';
import { Judge } from '../../daemon/judge/judge.js';
import { createPolicy } from '../../daemon/model/policy.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { judgeVerdict } from '../../protocol/judge-reading.js';
import { isLlmCallSpan } from '../../protocol/span-reading.js';
import { toyReward } from '../algorithm/fixtures/toy-agent.js';
import { randomJudge, startScriptedJudge, type JudgeRequest, type ScoreLine, type ScriptedJudge } from '../helpers/scripted-judge.js';

const AGENT = 'test/algorithm/fixtures/toy-agent.ts#toyAgent';
const RUBRIC = 'Score each completion by the share of its first 6 characters that are lowercase letters a-z.';
const STEPS = 8;
const servers: ScriptedJudge[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

/** The judge that follows the rubric: it reads each trajectory's completion and scores it by the rule the rubric states. */
const rubricJudge = (r: JudgeRequest): ScoreLine[] =>
  r.trajectories.map((t) => {
    const score = toyReward(t.replies[0] ?? '');
    return { trajectory: t.index, score, explanation: `${Math.round(score * 6)} of the first 6 characters are lowercase letters` };
  });

async function trainWithJudge(score: (r: JudgeRequest) => ScoreLine[]) {
  const dir = mkdtempSync(join(tmpdir(), 'agl-train-judge-'));
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  const server = await startScriptedJudge({ score });
  servers.push(server);
  const policy = await createPolicy({ size: { dModel: 32, nLayers: 1, nHeads: 2 }, contextLength: 32, seed: 7, backend: process.env.AGL_BACKEND ?? 'auto' });
  const config = parseTrainConfig({
    model: { temperature: 1, maxTokens: 6, valTemperature: 1 },
    training: { batchSize: 4, groupSize: 8, maxSteps: STEPS, valEvery: 0, seed: 3, learningRate: 4e-2, grpo: { scaleRewards: 'group' } },
    runtime: { workers: 2, rolloutTimeoutSeconds: 60 },
    judge: { url: server.url, model: 'scripted-judge', rubric: RUBRIC, priceIn: 1, priceOut: 4 },
  });
  const judge = new Judge({ settings: config.judge!, rubric: RUBRIC, apiKey: '', seed: config.training.seed });
  const tasks = Array.from({ length: 8 }, (_, i) => ({ id: `p${i}`, input: { prompt: `p${i}:` } }));
  const val = Array.from({ length: 32 }, (_, i) => ({ id: `v${i}`, input: { prompt: `v${i}:` } }));
  const policies = onePolicySet(policy, config);
  const host = await startTrainingHost({ store, policies, token: 'test-token-abcdef0123456789', dataDir: dir, workers: 2, agent: AGENT });
  try {
    const run = await store.createTrainingRun({ agent: AGENT, config, totalSteps: STEPS });
    const logs: string[] = [];
    const trainer = new Trainer(
      { store, policies, endpoint: host.endpoint, agent: AGENT, config, train: tasks, val, judge, checkpoint: async () => {}, log: (m) => logs.push(m) },
      newTrainerState(run),
    );
    const state = await trainer.run();
    return { store, run, state, server, logs, gain: state.val.at(-1)!.reward - state.val[0]!.reward };
  } finally {
    await host.close();
  }
}

test('a judge that follows the rubric teaches the policy; one that scores at random does not', { timeout: 600_000 }, async (t) => {
  const knows = await trainWithJudge(rubricJudge);
  const coin = await trainWithJudge(randomJudge(5));
  t.diagnostic(`held-out gain: rubric judge ${knows.gain.toFixed(3)}, random judge ${coin.gain.toFixed(3)}`);
  t.diagnostic(knows.logs.filter((l) => l.startsWith('step')).join('\n'));
  assert.ok(knows.gain > coin.gain + 0.15, `rubric judge ${knows.gain.toFixed(3)} vs random judge ${coin.gain.toFixed(3)}`);
  assert.ok(knows.gain > 0.2, `the rubric judge raised held-out reward by ${knows.gain.toFixed(3)}`);
  const reliability = async (r: typeof knows, name: string) => (await r.store.queryMetrics(r.run.id)).filter((m) => m.name === name).map((m) => m.value);
  assert.deepEqual(await reliability(knows, 'judge/reliability'), new Array(STEPS).fill(1), 'a judge that agrees with itself: r 1 at every step');
  const knowsW = await reliability(knows, 'judge/weight');
  assert.ok(knowsW.length === STEPS && knowsW.every((w) => w > 0.85), `rubric judge's weight by step: ${knowsW.join(' ')}`);
  const coinW = await reliability(coin, 'judge/weight');
  t.diagnostic(`random judge's weight by step: ${coinW.map((r) => r.toFixed(2)).join(' ')}`);
  assert.equal(coinW.length, STEPS);
  assert.ok(coinW.filter((w) => w === 0).length >= STEPS / 2 && Math.max(...coinW) < 0.6, 'weight 0 at most steps');
  assert.ok(
    (await reliability(coin, 'judge/unreliable_groups')).some((n) => n > 0),
    'its groups were left out of the update',
  );

  // What a run with a judge records: its calls (one per group: 4 a step, and 2 showing groups again), tokens and cost every step; the step line.
  const { store, run, server, logs } = knows;
  const metrics = await store.queryMetrics(run.id);
  const at = (name: string) => metrics.filter((m) => m.name === name);
  assert.equal(at('judge/calls').length, STEPS);
  assert.ok(
    at('judge/calls').every((m) => m.value >= 5 && m.value <= 6),
    'half of the groups whose scores spread shown again',
  );
  assert.ok(at('judge/tokens').every((m) => m.value > 0));
  assert.ok(at('judge/cost').every((m) => m.value > 0));
  assert.ok(at('judge/failed_groups').every((m) => m.value === 0));
  const calls = at('judge/calls').reduce((a, m) => a + m.value, 0);
  assert.equal(server.requests.length, calls, 'validation was scored by the agent (auto): no judge call');
  assert.match(
    logs.find((l) => l.startsWith('step 1/'))!,
    /judge [56] calls · [\d.]+k? tokens · \$0\.\d+/,
  );
  // Each trained rollout's reward is the judge's, and no transition is a judge span, nor is any exported line.
  const transitions = await store.queryTransitions({ runId: run.id, step: 1 });
  const rollouts = [...new Set(transitions.map((x) => x.rolloutId))];
  for (const id of rollouts.slice(0, 4)) {
    const spans = await store.querySpans({ rolloutId: id, attemptId: 'latest' });
    assert.ok(judgeVerdict(spans)?.score !== null, `rollout ${id} was judged`);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    for (const x of transitions.filter((y) => y.rolloutId === id)) assert.ok(isLlmCallSpan(byId.get(x.spanId)!), 'a transition is an LLM call');
  }
  const lines: string[] = [];
  await exportTransitions(store, run.id, (l) => lines.push(l));
  assert.ok(lines.length > 0);
  assert.ok(lines.every((l) => !l.includes('agentlightning.judge') && !l.includes('agl.judge.')));
  await knows.store.close();
  await coin.store.close();
});
