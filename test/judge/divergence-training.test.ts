/**
 * The judge's divergence monitor in a real training run (daemon/algorithm/judge-divergence.ts; SQLite store, the
 * gateway serving the policy being trained, runner workers running the toy agent with the openai client, a scripted
 * judge over HTTP): a judge whose taste the agent's own reward does not pay for (it scores a completion by its capital
 * letters; the toy agent rewards lowercase ones) teaches the policy to please it. Its reward rises
 * while the agent's own falls, and --stop-on-divergence (training.stopOnDivergence) stops the run, saying the window
 * and the numbers; every step records the trusted reward beside the judge's.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { onePolicySet } from '../../daemon/algorithm/open-policy-set.js';
import { stopReason } from '../../daemon/algorithm/schedule.js';
import { Trainer } from '../../daemon/algorithm/trainer.js';
import { newTrainerState } from '../../daemon/algorithm/trainer-state.js';
import { startTrainingHost } from '../../daemon/algorithm/training-host.js';
import { Judge } from '../../daemon/judge/judge.js';
import { createPolicy } from '../../daemon/model/policy.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { METRICS } from '../../protocol/metrics.js';
import { stepNotes } from '../../protocol/training-health.js';
import { TOY_LENGTH } from '../algorithm/fixtures/toy-agent.js';
import { startScriptedJudge, type JudgeRequest, type ScoreLine } from '../helpers/scripted-judge.js';

const AGENT = 'test/algorithm/fixtures/toy-agent.ts#toyAgent';
const RUBRIC = 'Score each completion by the share of its first 6 characters that are capital letters A-Z.';
const MAX_STEPS = 20;

/** The judge the rubric describes: capitals, where the toy agent's own reward pays for lowercase letters. */
const capitalsJudge = (r: JudgeRequest): ScoreLine[] =>
  r.trajectories.map((t) => {
    const capitals = [...(t.replies[0] ?? '').slice(0, TOY_LENGTH)].filter((c) => c >= 'A' && c <= 'Z').length;
    return { trajectory: t.index, score: capitals / TOY_LENGTH, explanation: `${capitals} capitals read well` };
  });

test(
  'a judge the agent can please against its own reward: the monitor sees the divergence and --stop-on-divergence stops the run',
  { timeout: 600_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'agl-divergence-'));
    const store = new SqliteStore(join(dir, 'store.sqlite'));
    const server = await startScriptedJudge({ score: capitalsJudge });
    const policy = await createPolicy({ size: { dModel: 32, nLayers: 1, nHeads: 2 }, contextLength: 32, seed: 7, backend: process.env.AGL_BACKEND ?? 'auto' });
    const config = parseTrainConfig({
      model: { temperature: 1, maxTokens: 6, valTemperature: 1 },
      training: {
        ...{ batchSize: 4, groupSize: 8, maxSteps: MAX_STEPS, valEvery: 0, seed: 3, learningRate: 4e-2, grpo: { scaleRewards: 'group' } },
        ...{ stopOnDivergence: true, divergenceWindow: 5 },
      },
      runtime: { workers: 2, rolloutTimeoutSeconds: 60 },
      judge: { url: server.url, model: 'scripted-judge', rubric: RUBRIC, retest: false },
    });
    const tasks = Array.from({ length: 8 }, (_, i) => ({ id: `p${i}`, input: { prompt: `p${i}:` } }));
    const val = Array.from({ length: 16 }, (_, i) => ({ id: `v${i}`, input: { prompt: `v${i}:` } }));
    const policies = onePolicySet(policy, config);
    const host = await startTrainingHost({ store, policies, token: 'test-token-abcdef0123456789', dataDir: dir, workers: 2, agent: AGENT });
    try {
      const run = await store.createTrainingRun({ agent: AGENT, config, totalSteps: MAX_STEPS });
      const logs: string[] = [];
      const judge = new Judge({ settings: config.judge!, rubric: RUBRIC, apiKey: '', seed: 3 });
      const deps = { endpoint: host.endpoint, agent: AGENT, train: tasks, checkpoint: async () => {}, log: (m: string) => logs.push(m) };
      const state = await new Trainer({ ...deps, store, policies, config, val, judge }, newTrainerState(run)).run();
      const metrics = await store.queryMetrics(run.id);
      const series = (name: string) => metrics.filter((m) => m.name === name).map((m) => `${m.step}:${m.value.toFixed(2)}`);
      t.diagnostic(`judge ${series(METRICS.rewardMean).join(' ')}`);
      t.diagnostic(`trusted ${series(METRICS.judgeTrustedReward).join(' ')}`);
      const said = logs.find((l) => l.startsWith('judge divergence'));
      assert.ok(said, logs.join('\n'));
      t.diagnostic(said);
      assert.ok(state.step < MAX_STEPS, `stopped after ${state.step} of ${MAX_STEPS} steps`);
      assert.match(
        said,
        new RegExp(
          `^judge divergence over steps ${state.step - 4}-${state.step}: the judge's reward rose \\d\\.\\d{3} -> \\d\\.\\d{3} while the trusted reward .* fell \\d\\.\\d{3} -> \\d\\.\\d{3}: .*; stopping \\(--stop-on-divergence\\)$`,
        ),
      );
      const [jFrom, jTo, tFrom, tTo] = said
        .match(/rose (\S+) -> (\S+) while .* fell (\S+) -> (\S+):/)!
        .slice(1)
        .map(Number);
      assert.ok(jTo! - jFrom! >= 0.05 && tFrom! - tTo! >= 0.05, said);
      assert.equal(state.divergence, said);
      assert.equal(stopReason(state, config, tasks.length), 'judge-divergence');
      // Every step records the trusted reward (the agent's own here: no labels) beside the judge's; the stop step is marked.
      assert.equal(series(METRICS.judgeTrustedReward).length, state.step);
      assert.deepEqual(
        metrics.filter((m) => m.name === METRICS.judgeDivergence).map((m) => [m.step, m.value]),
        [[state.step, 1]],
      );
      assert.equal(state.val.at(-1)?.step, state.step, 'a final validation still ran');
      assert.deepEqual(
        stepNotes(metrics)
          .filter((n) => n.kind === 'judge-divergence')
          .map((n) => n.step),
        [state.step],
        "the dashboard's note on the step",
      );
    } finally {
      await host.close();
      await server.close();
      await store.close();
    }
  },
);
