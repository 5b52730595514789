/**
 * The GRPO group view on a real training step: the calc agent (samples/calc/agent.ts) with the shipped
 * warm-up policy, one GRPO step (up to three, until one holds a tool call) through the real trainer, gateway and runner workers (daemon/algorithm/,
 * the same pieces as `agl train`), then the trajectory viewer (chromium, strict CSP) on what that step
 * stored. Every advantage the cards show must be the stored one, and the group's mean and std in the
 * tooltip must be the numbers it came from: (credit - mean) / (std + eps) per the run's recorded scaling.
 * The calc agent's tool spans must read `calc(expression) → result` in the cards, the span tree and the
 * States view.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { openPolicy } from '../../daemon/algorithm/open-policy.js';
import { Trainer } from '../../daemon/algorithm/trainer.js';
import { newTrainerState } from '../../daemon/algorithm/trainer-state.js';
import { onePolicySet } from '../../daemon/algorithm/open-policy-set.js';
import { startTrainingHost, type TrainingHost } from '../../daemon/algorithm/training-host.js';
import type { PolicyModel } from '../../daemon/model/policy-contract.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { isToolSpan } from '../../protocol/span-reading.js';
import type { Transition } from '../../protocol/store.js';
import { AglClient } from '../../client/client.js';
import { openWebview, type WebviewSession } from './harness.js';

const AGENT = 'samples/calc/agent.ts#calcAgent';
const TOKEN = 'group-training-token-0123456789';

describe('GRPO group view on a real calc training step', () => {
  let dir: string;
  let store: SqliteStore;
  let policy: PolicyModel;
  let host: TrainingHost;
  let view: WebviewSession;
  let runId: string;
  let stored: Transition[];
  let shownStep = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agl-group-train-'));
    store = new SqliteStore(join(dir, 'store.sqlite'));
    policy = await openPolicy(join('samples', 'calc', 'warmup'), { backend: process.env.AGL_BACKEND ?? 'auto', seed: 1 });
    // samples/calc/train.yaml's settings, steps of 6 tasks x 8 samples (temperature 1: groups see both outcomes). The warm-up
    // calls the calculator about once in ten rollouts, so 48 rollouts hold some in ~99.4% of steps: a step without any
    // (nothing for the tool assertions to look at) is followed by another, at most three in all.
    const config = parseTrainConfig({
      model: { temperature: 1, maxTokens: 16, valTemperature: 0 },
      training: { batchSize: 6, groupSize: 8, maxSteps: 3, valEvery: 0, seed: 5, learningRate: 5e-4, grpo: { scaleRewards: 'group', skipZeroStdGroups: true } },
      runtime: { workers: 2, rolloutTimeoutSeconds: 60 },
    });
    const tasks = readFileSync(join('samples', 'calc', 'data', 'train.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(0, 40)
      .map((l) => {
        const input = JSON.parse(l) as { id: string };
        return { id: input.id, input };
      });
    const policies = onePolicySet(policy, config);
    host = await startTrainingHost({ store, policies, token: TOKEN, dataDir: dir, workers: 2, agent: AGENT });
    // As `agl train` does: the run records its parsed config (the viewer reads the advantage scaling there).
    const run = await store.createTrainingRun({ agent: AGENT, config: config as unknown as Record<string, unknown>, totalSteps: 3 });
    runId = run.id;
    const trainer = new Trainer(
      { store, policies, endpoint: host.endpoint, agent: AGENT, config, train: tasks, val: tasks.slice(0, 1), checkpoint: async () => {} },
      newTrainerState(run),
    );
    for (shownStep = 0; ; shownStep++) {
      await trainer.step();
      await store.updateTrainingRun(run.id, { step: shownStep + 1 });
      stored = await store.queryTransitions({ runId, step: shownStep });
      const rollouts = [...new Set(stored.map((s) => s.rolloutId))];
      const spans = (await Promise.all(rollouts.map((rolloutId) => store.querySpans({ rolloutId })))).flat();
      if (spans.some(isToolSpan) || shownStep === 2) break;
    }
    view = await openWebview('trajectory', trajectoryHandlers(new AglClient({ url: host.url, token: TOKEN })), { width: 1200 });
  });
  after(async () => {
    await view?.close();
    await host?.close();
    await store?.close();
    policy?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows every advantage exactly as the trainer stored it, and a formula whose numbers give it', async (t) => {
    assert.ok(stored.length >= 48, `one transition per LLM call of 48 rollouts: ${stored.length}`);
    const page = view.page;
    await view.notify('trajectory/show', { view: { kind: 'group', runId, step: shownStep } });
    await page.waitForSelector('.group');
    // Unfold every group and unmerge, so each stored transition has its own row.
    await page.click('vscode-checkbox.merge-toggle');
    while ((await page.locator('.group.folded').count()) > 0) await page.locator('.group.folded .group-toggle').first().click();
    const rows = await page.locator('.call-row').evaluateAll((els) =>
      els.map((e) => ({
        spanId: (e as HTMLElement).dataset.spanId!,
        shown: e.querySelector('.chip.advantage')!.textContent,
        raw: (e.querySelector('.chip.advantage') as HTMLElement).dataset.advantage,
      })),
    );
    const bySpan = new Map(stored.map((s) => [s.spanId, s]));
    assert.equal(rows.length, stored.length, 'a row per stored transition');
    for (const r of rows) {
      const tr = bySpan.get(r.spanId);
      assert.ok(tr, `row ${r.spanId} is a stored transition`);
      assert.equal(Number(r.raw), tr.advantage, 'the stored value, not a recomputation');
      assert.equal(r.shown, `A ${tr.advantage > 0 ? '+' : ''}${tr.advantage.toFixed(3)}`);
    }
    // The tooltip's mean and std, read as the user sees them, give each stored advantage (to display precision).
    let checked = 0,
      spread = 0;
    for (const group of await page.locator('.group').all()) {
      const title = (await group.locator('.chip.group-mean').getAttribute('title'))!;
      const m = /= \(credit − (-?[\d.]+)\) \/ \(([\d.]+) \+ 0\.000001\)/.exec(title);
      assert.ok(m, `the tooltip states the group formula with its numbers: ${title}`);
      const [mean, std] = [Number(m[1]), Number(m[2])];
      assert.match(title, /over the \d+ calls of the 8 rollouts/);
      const groupId = (await group.getAttribute('data-group-id'))!;
      const own = stored.filter((s) => s.groupId === groupId);
      if (std > 0) spread++;
      for (const s of own) {
        const expected = std === 0 ? 0 : (s.credit - mean) / (std + 1e-6);
        assert.ok(
          Math.abs(expected - s.advantage) <= 0.01 * Math.max(1, Math.abs(s.advantage)),
          `group ${groupId}: (${s.credit} - ${mean}) / ${std} = ${expected} vs stored ${s.advantage}`,
        );
        checked++;
      }
      assert.match(title, /The stored advantages follow from these numbers\./);
    }
    t.diagnostic(`${checked} stored advantages checked against the tooltip's numbers; ${spread} of ${await page.locator('.group').count()} groups with spread`);
    assert.equal(checked, stored.length);
    assert.ok(view.problems.length === 0, view.problems.join('; '));
    await view.screenshot('group-real-training');
  });

  it('shows the calc tool steps as calc(expression) → result on the cards, in the span tree and in the States view', async () => {
    const page = view.page;
    const toolRows = await page.locator('.sample-card .tool-row .tool-text').allInnerTexts();
    assert.ok(toolRows.length > 0, 'some sample called the calculator');
    for (const text of toolRows) assert.match(text, /^calc\([^)]*\) → (-?\d+|error: .+)$/); // the model may give an empty expression
    const card = page.locator('.sample-card', { has: page.locator('.tool-row') }).first();
    const line = await card.locator('.tool-row .tool-text').first().innerText();
    await card.locator('.tool-row').first().click();
    await page.waitForSelector('.span-row[data-kind="tool"]');
    assert.equal(await page.locator('.span-row[data-kind="tool"] .label').first().innerText(), line);
    assert.equal((await page.locator('.detail-tool .tool-line').innerText()).trim(), line, 'the tool step opens with its input and output');
    await view.screenshot('tool-step-real');
    await page.click('vscode-tab-header.tab-states');
    await page.waitForSelector('.states-table');
    const heads = await page.locator('.states-table thead .step-label').allInnerTexts();
    assert.ok(heads.includes(line), `the States view has the tool step: ${heads.join(' | ')}`);
    assert.ok(!heads.some((h) => /reward reward/.test(h)), `no column reads "reward reward": ${heads.join(' | ')}`);
    assert.deepEqual([...view.problems], []);
  });
});
