/**
 * Smoke tests of the sql and rag training pipelines (not of learning, which the benchmarks measure): a
 * small built-in-architecture policy gets a few SFT steps on one question's chats (from a demonstrator
 * that is right about half the time, so temperature-1 groups have reward spread), then two GRPO steps run
 * the real sample agent through the real store, gateway (serving that policy) and runner workers. The
 * weights must change, and every trained LLM call must be stored as a transition with its agent, credit
 * and advantage: writer/rewriter only for sql (agentMatch), three calls per rag rollout with discounted
 * credit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Transition } from '../../protocol/store.js';
import { SPAN } from '../../protocol/spans.js';
import { parseTrainConfig, type TrainConfigInput } from '../../daemon/algorithm/config.js';
import { demoToPair, runSft } from '../../daemon/algorithm/sft-trainer.js';
import { Trainer } from '../../daemon/algorithm/trainer.js';
import { newTrainerState } from '../../daemon/algorithm/trainer-state.js';
import { onePolicySet } from '../../daemon/algorithm/open-policy-set.js';
import { startTrainingHost } from '../../daemon/algorithm/training-host.js';
import type { ChatMessage } from '../../daemon/model/policy-contract.js';
import { createPolicy } from '../../daemon/model/policy.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { loadCorpus } from '../../samples/rag/data.js';
import { makeRagSplits, makeWorld } from '../../samples/rag/corpus.js';
import { answerInput, ANSWER_INSTRUCTIONS, QUERY_INSTRUCTIONS, queryFor, queryInput } from '../../samples/rag/prompts.js';
import { companyRows, openCompanyDb } from '../../samples/sql/db.js';
import { formatResult, runQuery } from '../../samples/sql/execute.js';
import { checkerMessages, makeSqlSplits, writerMessages } from '../../samples/sql/task.js';
import { dropFilter } from '../../samples/sql/warmup-demos.js';

interface Smoke {
  transitions: Transition[];
  llmCalls: { agent: string | undefined; rolloutId: string }[];
  rollouts: number;
  moved: number;
  zeroStd: number[];
}

/** SFT on `chats`, then `steps` GRPO steps of the sample agent on `task`; what the store holds afterwards. */
async function trainSmoke(agent: string, task: { id: string; input: unknown }, chats: ChatMessage[][], training: TrainConfigInput['training']): Promise<Smoke> {
  const dir = mkdtempSync(join(tmpdir(), 'agl-smoke-'));
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  const policy = await createPolicy({
    size: { dModel: 48, nLayers: 1, nHeads: 2 },
    contextLength: 256,
    seed: 3,
    backend: process.env.AGL_BACKEND ?? 'auto',
  });
  const config = parseTrainConfig({
    model: { temperature: 1, maxTokens: 48, valTemperature: 0 },
    training: { batchSize: 1, groupSize: 4, maxSteps: 2, valEvery: 0, learningRate: 1e-2, seed: 1, ...training },
    runtime: { workers: 2, rolloutTimeoutSeconds: 60 },
  });
  const policies = onePolicySet(policy, config);
  const host = await startTrainingHost({ store, policies, token: 'test-token-abcdef0123456789', dataDir: dir, workers: 2, agent });
  try {
    const pairs = chats.map((messages) => demoToPair({ messages }, policy.tokenizer));
    await runSft(policy, pairs, { steps: 60, batchSize: pairs.length, lr: 1e-2, seed: 1 });
    const before = (await policy.scoreLogprobs(pairs)).flat();
    const run = await store.createTrainingRun({ agent, config: {}, totalSteps: 2 });
    const trainer = new Trainer(
      {
        store,
        policies,
        endpoint: host.endpoint,
        agent,
        config,
        train: [task],
        val: [task],
        checkpoint: async () => {},
      },
      newTrainerState(run),
    );
    await trainer.run();
    const after = (await policy.scoreLogprobs(pairs)).flat();
    const transitions = await store.queryTransitions({ runId: run.id });
    const trainRollouts = (await store.queryRollouts({})).items.filter((r) => r.mode === 'train' && r.metadata.runId === run.id);
    const llmCalls: Smoke['llmCalls'] = [];
    for (const r of trainRollouts) {
      const spans = await store.querySpans({ rolloutId: r.id, attemptId: 'latest' });
      const byId = new Map(spans.map((s) => [s.spanId, s]));
      for (const s of spans.filter((x) => x.name === SPAN.llmCall))
        llmCalls.push({ agent: byId.get(s.parentSpanId ?? '')?.attributes['agl.agent.name'] as string | undefined, rolloutId: r.id });
    }
    const zeroStd = (await store.queryMetrics(run.id)).filter((m) => m.name === 'grpo/frac_reward_zero_std').map((m) => m.value);
    return { transitions, llmCalls, rollouts: trainRollouts.length, moved: after.reduce((a, x, i) => Math.max(a, Math.abs(x - before[i])), 0), zeroStd };
  } finally {
    await host.close();
    await store.close();
    policy.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('sql pipeline: GRPO updates the weights and stores credit per writer/rewriter call (checker left out)', { timeout: 120_000 }, async (t) => {
  const task = makeSqlSplits(companyRows()).train.find((x) => x.gold.includes(' WHERE ') && !x.gold.includes('JOIN') && x.gold.length < 48)!;
  const db = openCompanyDb();
  const result = (sql: string) => formatResult(runQuery(db, sql));
  const shortcut = dropFilter(task.gold);
  // Half gold, half shortcut (it runs, the checker accepts it, reward 0): groups get both rewards.
  const chats: ChatMessage[][] = [
    [...writerMessages(task.question), { role: 'assistant', content: task.gold }],
    [...writerMessages(task.question), { role: 'assistant', content: shortcut }],
    [...checkerMessages(task.question, task.gold, result(task.gold)), { role: 'assistant', content: 'yes' }],
    [...checkerMessages(task.question, shortcut, result(shortcut)), { role: 'assistant', content: 'yes' }],
  ];
  db.close();
  const s = await trainSmoke(`${resolve('samples/sql/agent.ts')}#sqlAgent`, { id: task.id, input: task }, chats, {
    agentMatch: '^(writer|rewriter)$',
    groupSize: 8,
    learningRate: 1e-3,
  });
  // The warm-up writes the gold query ~70% of the time: 8 per group and a small GRPO step keep both steps' groups mixed.
  t.diagnostic(
    `sql rewards by step: ${[1, 2].map((k) =>
      s.transitions
        .filter((x) => x.step === k && x.agentName === 'writer')
        .map((x) => x.credit)
        .join(' '),
    )}`,
  );
  t.diagnostic(
    `sql: ${s.rollouts} rollouts, ${s.llmCalls.length} LLM calls, ${s.transitions.length} transitions, zero-std ${s.zeroStd}, max logprob change ${s.moved.toFixed(4)}`,
  );
  assert.equal(s.rollouts, 16, 'two steps of one task x 8');
  assert.ok(s.moved > 1e-4, 'the GRPO updates changed the weights');
  const trained = s.llmCalls.filter((c) => c.agent === 'writer' || c.agent === 'rewriter');
  assert.ok(
    s.llmCalls.some((c) => c.agent === 'checker'),
    'the checker ran',
  );
  assert.equal(s.transitions.length, trained.length, 'one transition per writer/rewriter call, none for the checker');
  assert.ok(
    s.transitions.every((x) => (x.agentName === 'writer' || x.agentName === 'rewriter') && typeof x.credit === 'number' && typeof x.advantage === 'number'),
  );
  assert.ok(
    s.transitions.some((x) => x.advantage !== 0),
    'some call had a non-zero advantage',
  );
});

test('rag pipeline: GRPO updates the weights and stores a credit for each of the three calls of a rollout', { timeout: 120_000 }, async (t) => {
  const task = makeRagSplits(makeWorld()).train[0];
  const byTitle = new Map(loadCorpus().map((d) => [d.title, d]));
  const [first, bridge] = task.hops.map((h) => byTitle.get(h)!);
  // Second query: the bridge (the answer doc is found) or the first entity again (it is not): F1 spread.
  const chats: ChatMessage[][] = [
    [
      { role: 'system', content: QUERY_INSTRUCTIONS },
      { role: 'user', content: queryInput(task.question, []) },
      { role: 'assistant', content: queryFor(first) },
    ],
    [
      { role: 'system', content: QUERY_INSTRUCTIONS },
      { role: 'user', content: queryInput(task.question, [first]) },
      { role: 'assistant', content: queryFor(bridge) },
    ],
    [
      { role: 'system', content: QUERY_INSTRUCTIONS },
      { role: 'user', content: queryInput(task.question, [first]) },
      { role: 'assistant', content: queryFor(first) },
    ],
    [
      { role: 'system', content: ANSWER_INSTRUCTIONS },
      { role: 'user', content: answerInput(task.question, [first, bridge]) },
      { role: 'assistant', content: task.answer },
    ],
  ];
  const s = await trainSmoke(`${resolve('samples/rag/agent.ts')}#ragAgent`, { id: task.id, input: task }, chats, {
    credit: { strategy: 'discounted', gamma: 0.5 },
  });
  t.diagnostic(`rag: ${s.rollouts} rollouts, ${s.transitions.length} transitions, zero-std ${s.zeroStd}, max logprob change ${s.moved.toFixed(4)}`);
  assert.equal(s.rollouts, 8);
  assert.ok(s.moved > 1e-4, 'the GRPO updates changed the weights');
  assert.equal(s.transitions.length, 8 * 3, 'three transitions per rollout');
  for (const id of new Set(s.transitions.map((x) => x.rolloutId))) {
    const calls = s.transitions.filter((x) => x.rolloutId === id).sort((a, b) => a.index - b.index);
    assert.deepEqual(
      calls.map((x) => x.agentName),
      ['query_writer', 'query_writer', 'answerer'],
    );
    // discounted, gamma 0.5: the answer's F1 R reaches the hops as R/4, R/2, R.
    const r = calls[2].credit;
    assert.ok(Math.abs(calls[0].credit - r / 4) < 1e-9 && Math.abs(calls[1].credit - r / 2) < 1e-9, `credits ${calls.map((x) => x.credit)}`);
  }
  assert.ok(
    s.transitions.some((x) => x.credit > 0) && s.transitions.some((x) => x.advantage !== 0),
    'some rollout earned F1 and some call had a non-zero advantage',
  );
});
