/**
 * The training dashboard, built (dist/webview/dashboard.js) and loaded in Debian chromium under the
 * panel's real CSP, answered by the panel's real host-side code from a real daemon: the curves (reward
 * and validation, KL, clip ratio, zero-variance fraction, loss and gradient norm apart) drawn with uPlot
 * under readable names (raw keys in tooltips) and titled axes, new points arriving live as the daemon's event stream
 * tells the panel's own live updates (extension/panels/live-updates.ts) that they landed (nothing polls), a click on a point asking for that step's GRPO groups; a finished run's header
 * (why it stopped, config, elapsed time, best checkpoint), constant series collapsed into one line, EMA
 * smoothing, drag-to-zoom, and two runs overlaid with a legend (the compared one followed live); with no run yet,
 * the first one shows as soon as it is created. Also checks the built bundles use no eval
 * and load only @vscode-elements (never the old toolkit).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { judgeMetrics, type JudgeTotals } from '../../daemon/algorithm/step-judge.js';
import { dashboardHandlers } from '../../extension/panels/data.js';
import type { TrainingRunSummary } from '../../protocol/metrics.js';
import { DashboardProtocol } from '../../protocol/webview-dashboard.js';
import { ROOT, liveDashboard, openWebview, startDaemon, type Daemon, type LiveUpdates, type WebviewSession } from './harness.js';
import { AGENT, RUN_ID, seedCalcTraining, seedTwoPolicyRun } from './seed.js';
import type { AglClient } from '../../client/client.js';
import { assertAxesFit, axisFits } from '../helpers/axis-fit.js';

/** A finished run to compare with: stopped by its time budget, KL and clip ratio 0 and the learning rate fixed throughout. */
const RUN_B = 'run-calc-budget';
const RUN_B_REWARDS = Array.from({ length: 9 }, (_, step) => 0.3 + 0.05 * step);
async function seedFinishedRun(client: AglClient): Promise<void> {
  await client.createTrainingRun({
    id: RUN_B,
    agent: AGENT,
    totalSteps: 20,
    config: {
      model: { name: 'builtin:0.8m', init: 'samples/calc/warmup' },
      training: { learningRate: 1e-3, batchSize: 16, groupSize: 8, maxMinutes: 6, grpo: { variant: 'dr_grpo', beta: 0 } },
    },
  });
  await client.addMetrics(
    RUN_B_REWARDS.flatMap((reward, step) => [
      { step, name: 'reward/mean', value: reward },
      { step, name: 'grpo/kl', value: 0 },
      { step, name: 'grpo/clip_ratio', value: 0 },
      { step, name: 'grpo/lr', value: 1e-3 },
      { step, name: 'grpo/loss', value: 0.02 * Math.cos(step) },
      { step, name: 'grpo/grad_norm', value: 3 - 0.2 * step },
      ...(step % 4 === 0 ? [{ step, name: 'val/reward', value: [0.29, 0.55, 0.7][step / 4] }] : []),
    ]).map((p) => ({ ...p, runId: RUN_B })),
  );
  await client.updateTrainingRun(RUN_B, {
    status: 'succeeded',
    step: 9,
    summary: { stopReason: 'max-minutes', elapsedMs: 360_000, epochSteps: 20, best: { step: 8, reward: 0.7, path: 'runs/run-calc-budget/best' } },
  });
}

/** TensorBoard's debiased EMA, the smoothing the dashboard promises. */
function ema(values: number[], weight: number): number {
  let last = 0;
  values.forEach((v) => {
    last = last * weight + (1 - weight) * v;
  });
  return last / (1 - weight ** values.length);
}

describe('training dashboard webview', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  let live: LiveUpdates;

  before(async () => {
    daemon = await startDaemon();
    await seedFinishedRun(daemon.client); // older than the seeded running one, which the dashboard opens on
    await new Promise((r) => setTimeout(r, 5));
    await seedCalcTraining(daemon.client);
    // A learning-rate warm-up over 4 steps (the issue's axis read "0.001, 0, 0, 0" for such values).
    await daemon.client.addMetrics(
      Array.from({ length: 12 }, (_, step) => ({ runId: RUN_ID, step, name: 'grpo/lr', value: 1e-5 * Math.min(1, (step + 1) / 4) })),
    );
    // Training throughput in the thousands (the issue's axis read "L800" and "L000" for 1,800 and 1,000 tokens/s).
    await daemon.client.addMetrics(Array.from({ length: 12 }, (_, step) => ({ runId: RUN_ID, step, name: 'perf/tokens_per_s', value: 1000 + 72 * step })));
    // Transitions: the calls trained on, fewer than the calls the step made (its axis said "LLM calls").
    await daemon.client.addMetrics(Array.from({ length: 12 }, (_, step) => ({ runId: RUN_ID, step, name: 'rollout/transitions', value: 24 + step })));
    // What the panel does on "watchRun" and with the daemon's events: push the watched runs' new points to the webview.
    live = liveDashboard(daemon);
    view = await openWebview('dashboard', dashboardHandlers(daemon.client), { onCommand: (m, p, v) => live.onCommand(m, p, v) });
    live.attach(view);
  });
  after(async () => {
    live?.close();
    await view?.close();
    await daemon?.close();
  });

  const latest = (metric: string) => view.page.locator(`.chart-value[data-metric="${metric}"] b`).innerText();

  it('draws reward and validation, KL, clip ratio and zero-variance curves for the newest run', async () => {
    const page = view.page;
    await page.waitForSelector('.chart-card[data-chart="reward"] canvas');
    const charts = await page.locator('.chart-card').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.chart));
    // Reward first; loss and gradient norm on charts of their own (their scales differ by orders of magnitude).
    assert.deepEqual(charts.slice(0, 8), ['reward', 'zero-std', 'loss', 'grad-norm', 'kl', 'clip', 'lr', 'response']);
    assert.ok(charts.includes('metric-perf/step_s'), 'a metric no chart names gets its own chart');
    for (const id of ['reward', 'kl', 'clip', 'zero-std']) {
      const box = await page.locator(`.chart-card[data-chart="${id}"] canvas`).boundingBox();
      assert.ok(box && box.width > 200 && box.height > 100, `${id} chart drawn (${JSON.stringify(box)})`);
    }
    assert.equal(await latest('reward/mean'), '0.713'); // 0.22 + 0.5 + 0.05 sin(18.7), the seed's step 11
    assert.equal(await latest('val/reward'), '0.527');
    assert.match(await page.locator('.progress-line').innerText(), /running[\s\S]*step 12 \/ 20/);
    assert.deepEqual((await view.nextCommand(DashboardProtocol.watchRun.method)).params, { runId: RUN_ID, compare: [] });
    await view.screenshot('dashboard');
  });

  it('fits every value axis to its labels at full and half width, thousands in compact units (1.8k)', async () => {
    const page = view.page;
    const throughput = '.chart-card[data-chart="metric-perf/tokens_per_s"] .uplot';
    await page.waitForSelector(throughput);
    const ticks = JSON.parse((await page.locator(throughput).getAttribute('data-y-ticks'))!) as string[];
    assert.ok(ticks.includes('1.8k') && ticks.every((t) => /^\d(\.\d+)?k$/.test(t)), `throughput ticks in compact units: ${ticks.join(', ')}`);
    assertAxesFit(await axisFits(page.locator('body')), 'full width (1400 px)');
    await page.setViewportSize({ width: 700, height: 900 });
    await page.waitForFunction(() => [...document.querySelectorAll('.chart-card canvas')].every((c) => c.getBoundingClientRect().width < 700));
    assertAxesFit(await axisFits(page.locator('body')), 'half width (700 px)');
    await view.screenshot('dashboard-axes-half-width');
    await page.setViewportSize({ width: 1400, height: 900 });
  });

  it('moves live: points the trainer writes appear without a reload', async () => {
    await daemon.client.addMetrics(
      [
        { step: 12, name: 'reward/mean', value: 0.81 },
        { step: 12, name: 'grpo/kl', value: 0.03 },
        { step: 12, name: 'val/reward', value: 0.66 },
        { step: 13, name: 'reward/mean', value: 0.84 },
        { step: 13, name: 'grpo/kl', value: 0.031 },
      ].map((p) => ({ ...p, runId: RUN_ID })),
    );
    await daemon.client.updateTrainingRun(RUN_ID, { step: 14 });
    await view.page.waitForFunction(() => document.querySelector('.chart-value[data-metric="reward/mean"] b')?.textContent === '0.840', undefined, {
      timeout: 10_000,
    });
    assert.equal(await latest('val/reward'), '0.660');
    await view.page.waitForFunction(() => /step 14 \/ 20/.test(document.querySelector('.progress-line')?.textContent ?? ''), undefined, { timeout: 10_000 });
    await daemon.client.updateTrainingRun(RUN_ID, { status: 'succeeded' });
    await view.page.waitForFunction(() => /succeeded/.test(document.querySelector('.progress-line')?.textContent ?? ''), undefined, { timeout: 10_000 });
    await view.screenshot('dashboard-live');
  });

  it('asks for the GRPO groups of the step under the cursor when a point is clicked', async () => {
    const over = view.page.locator('.chart-card[data-chart="reward"] .u-over');
    const box = (await over.boundingBox())!;
    const opened = () => view.commands.filter((c) => c.method === DashboardProtocol.openGroups.method).map((c) => c.params);
    const clickAt = async (x: number, expectCount: number) => {
      await view.page.mouse.move(x, box.y + box.height / 2);
      // uPlot moves its cursor on the next animation frame; the command reaches the host asynchronously.
      await view.page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');
      await view.page.mouse.click(x, box.y + box.height / 2);
      for (let i = 0; i < 100 && opened().length < expectCount; i++) await new Promise((r) => setTimeout(r, 20));
    };
    await clickAt(box.x + 2, 1);
    await clickAt(box.x + box.width - 2, 2);
    assert.deepEqual(opened(), [
      { runId: RUN_ID, step: 0 },
      { runId: RUN_ID, step: 13 },
    ]);
  });

  it('names metrics readably (raw keys in tooltips) and titles both axes with their units', async () => {
    const page = view.page;
    await page.mouse.move(0, 0); // off the charts: the legends show the latest values, not those under the cursor
    const reward = page.locator('.chart-card[data-chart="reward"]');
    assert.equal(await reward.locator('h2').getAttribute('title'), 'reward/mean, val/reward');
    const train = reward.locator('.chart-value[data-metric="reward/mean"]');
    assert.match(await train.innerText(), /^training reward 0\.840$/);
    assert.equal(await train.getAttribute('title'), 'reward/mean');
    assert.match(await reward.locator('.chart-value[data-metric="val/reward"]').innerText(), /^held-out reward 0\.660$/);
    const titles = async (id: string) => [
      await page.locator(`.chart-card[data-chart="${id}"] .y-title`).innerText(),
      await page.locator(`.chart-card[data-chart="${id}"] .x-title`).innerText(),
    ];
    assert.deepEqual(await titles('reward'), ['mean reward', 'training step']);
    assert.deepEqual(await titles('kl'), ['nats/token', 'training step']);
    assert.deepEqual(await titles('response'), ['tokens', 'training step']);
    assert.deepEqual(await titles('loss'), ['GRPO loss', 'training step']);
    assert.deepEqual(await titles('grad-norm'), ['L2 norm', 'training step']);
    assert.deepEqual(await titles('metric-perf/step_s'), ['seconds', 'training step']);
    assert.equal(await page.locator('.chart-card[data-chart="metric-perf/step_s"] h2').innerText(), 'Step time');
    assert.deepEqual(await titles('metric-rollout/transitions'), ['trained calls', 'training step'], 'transitions count the calls trained on');
    assert.equal(await page.locator('.chart-card[data-chart="metric-rollout/transitions"] h2').innerText(), 'Transitions (calls trained on)');
    const kl = page.locator('.chart-card[data-chart="kl"] .chart-value[data-metric="grpo/kl"]');
    assert.match(await kl.innerText(), /^KL to reference 0\.0310$/); // the latest KL, 3 significant digits
    assert.equal(await kl.getAttribute('title'), 'grpo/kl (nats/token)');
    assert.match(await page.locator('.chart-card[data-chart="lr"] .chart-value[data-metric="grpo/lr"]').innerText(), /^learning rate 1e-5$/);
  });

  it('zooms every chart to the steps dragged across, and back on a double-click', async () => {
    const page = view.page;
    const box = (await page.locator('.chart-card[data-chart="reward"] .u-over').boundingBox())!;
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + box.width * 0.3, y);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.5, y, { steps: 5 });
    await page.mouse.move(box.x + box.width * 0.7, y, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction(() => /steps \d+–\d+/.test(document.querySelector('.zoom-state')?.textContent ?? ''), undefined, { timeout: 5000 });
    const [, from, to] = /steps (\d+)–(\d+)/.exec(await page.locator('.zoom-state').innerText())!.map(Number);
    assert.ok(from >= 3 && to <= 10 && from < to, `zoomed to steps ${from}–${to} of 0–13`);
    assert.equal(view.commands.filter((c) => c.method === DashboardProtocol.openGroups.method).length, 2, 'a drag is not a click on a step');
    await page.mouse.dblclick(box.x + box.width / 2, y);
    await page.waitForFunction(() => (document.querySelector('.zoom-state')?.textContent ?? '') === '', undefined, { timeout: 5000 });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(view.commands.filter((c) => c.method === DashboardProtocol.openGroups.method).length, 2, 'a double-click resets the zoom and opens no step');
  });

  it('says why a finished run stopped, with its config, elapsed time and best checkpoint', async () => {
    await view.notify(DashboardProtocol.show.method, { runId: RUN_B });
    const page = view.page;
    await page.waitForFunction(() => /maxMinutes/.test(document.querySelector('.stop-reason')?.textContent ?? ''), undefined, { timeout: 10_000 });
    assert.equal(await page.locator('.stop-reason').innerText(), 'stopped at maxMinutes (6 min)');
    assert.equal((await page.locator('.progress-line').innerText()).match(/step 9\b/g)?.length, 1, 'the step once, as "step 9 / 20"');
    const field = (name: string) => page.locator(`.cfg[data-field="${name}"]`).innerText();
    assert.equal(await field('model'), 'model samples/calc/warmup');
    assert.equal(await field('lr'), 'lr 1e-3');
    assert.equal(await field('batch'), 'batch 16');
    assert.equal(await field('group'), 'group size 8');
    assert.equal(await field('variant'), 'algorithm dr_grpo');
    assert.match(await field('elapsed'), /6 min 0 s/);
    const best = page.locator('.best');
    assert.match(await best.innerText(), /best checkpoint: step 8 · held-out 0\.700/);
    assert.equal(await best.getAttribute('title'), 'weights: runs/run-calc-budget/best');
  });

  it('collapses series that never change into one "constant:" line instead of charts', async () => {
    const page = view.page;
    await page.waitForSelector('.constant-item[data-metric="grpo/kl"]');
    assert.equal(await page.locator('.constants').innerText(), 'constant: KL to reference = 0, clip ratio = 0, learning rate = 1e-3');
    assert.match((await page.locator('.constant-item[data-metric="grpo/kl"]').getAttribute('title'))!, /^grpo\/kl: /);
    const charts = await page.locator('.chart-card').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.chart));
    assert.deepEqual(charts, ['reward', 'loss', 'grad-norm']);
    await view.screenshot('dashboard-finished-run');
  });

  it('smooths the curves with an EMA slider, keeping the raw value beside the smoothed one', async () => {
    const page = view.page;
    const setSmoothing = (w: number) =>
      page.locator('.smoothing').evaluate((el, v) => {
        (el as HTMLInputElement).value = String(v);
        el.dispatchEvent(new Event('input', { bubbles: true }));
      }, w);
    await setSmoothing(0.6);
    const train = page.locator('.chart-card[data-chart="reward"] .chart-value[data-metric="reward/mean"]');
    await page.waitForSelector('.chart-card[data-chart="reward"] .chart-value[data-metric="reward/mean"] .smoothed');
    assert.equal(await train.locator('b').innerText(), '0.700');
    assert.equal(await train.locator('.smoothed').innerText(), `smoothed ${ema(RUN_B_REWARDS, 0.6).toPrecision(3)}`);
    assert.equal(await page.locator('.smoothing-value').innerText(), '0.60');
    await view.screenshot('dashboard-smoothed');
    await setSmoothing(0);
    await page.waitForFunction(() => !document.querySelector('.chart-value .smoothed'));
  });

  it('overlays another run picked from the list: one colour per run, a legend, and its series on the same charts', async () => {
    const page = view.page;
    await daemon.client.updateTrainingRun(RUN_ID, { status: 'running' }); // still training: the overlay follows it
    await page.locator('.compare summary').click();
    await page.locator(`vscode-checkbox[data-run="${RUN_ID}"]`).click();
    await page.waitForFunction(() => document.querySelectorAll('.run-legend-item').length === 2, undefined, { timeout: 10_000 });
    const legend = await page
      .locator('.run-legend-item')
      .evaluateAll((els) => els.map((e) => [(e as HTMLElement).dataset.run, e.textContent, getComputedStyle(e.querySelector('.swatch')!).color]));
    assert.deepEqual(
      legend.map(([run]) => run),
      [RUN_B, RUN_ID],
    );
    assert.notEqual(legend[0][2], legend[1][2], 'each run has its own colour');
    const reward = page.locator('.chart-card[data-chart="reward"]');
    const runsOnReward = await reward.locator('.chart-value[data-metric="reward/mean"]').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.run));
    assert.deepEqual(runsOnReward, [RUN_B, RUN_ID]);
    assert.equal(await reward.locator(`.chart-value[data-metric="reward/mean"][data-run="${RUN_ID}"] b`).innerText(), '0.840');
    // KL varies in the other run, so it is a chart again, with both runs on it; the fixed learning rate differs between runs too.
    await page.waitForSelector('.chart-card[data-chart="kl"]');
    assert.equal(await page.locator('.chart-card[data-chart="kl"] .chart-value').count(), 2);
    assert.doesNotMatch(await page.locator('.constants').innerText(), /KL/);
    assert.deepEqual(await page.evaluate(() => (JSON.parse(sessionStorage.getItem('vscode-state') ?? '{}') as { compare?: string[] }).compare), [RUN_ID]);
    await view.screenshot('dashboard-overlay');
    // The compared run goes on training: its new points reach the overlay without a reload.
    await daemon.client.addMetrics([{ runId: RUN_ID, step: 14, name: 'reward/mean', value: 0.88 }]);
    await page.waitForFunction(
      (id) => document.querySelector(`.chart-card[data-chart="reward"] .chart-value[data-metric="reward/mean"][data-run="${id}"] b`)?.textContent === '0.880',
      RUN_ID,
      { timeout: 10_000 },
    );
  });

  it('opens the compare view of eval runs from its toolbar ("Compare evals": the panel opens it)', async () => {
    await view.page.locator('.view-header .compare-evals').click();
    assert.deepEqual((await view.nextCommand(DashboardProtocol.openEvalCompare.method)).params, {});
  });

  it('ran under the strict CSP without a violation or an error', () => {
    assert.deepEqual(view.problems, []);
  });

  it('ships bundles without eval and without @vscode/webview-ui-toolkit', () => {
    for (const name of ['trajectory.js', 'dashboard.js']) {
      const code = readFileSync(join(ROOT, 'dist', 'webview', name), 'utf8');
      assert.doesNotMatch(code, /[^\w.]eval\(|new Function\(/, `${name} must run without 'unsafe-eval'`);
      assert.doesNotMatch(code, /webview-ui-toolkit|@microsoft\/fast-element/, `${name} must not load the deprecated toolkit`);
      assert.match(code, /vscode-single-select/, `${name} uses @vscode-elements/elements`);
    }
  });
});

describe('training dashboard webview before any training run', () => {
  it('says there is no run yet, then shows the first run as soon as it starts', async () => {
    const daemon = await startDaemon();
    const live = liveDashboard(daemon);
    const view = await openWebview('dashboard', dashboardHandlers(daemon.client), { onCommand: (m, p, v) => live.onCommand(m, p, v) });
    live.attach(view);
    try {
      await view.page.waitForSelector('.empty-state');
      assert.match(await view.page.locator('.empty-state').innerText(), /No training run yet/);
      const run = await daemon.client.createTrainingRun({ agent: 'samples/calc/agent.ts#calcAgent', totalSteps: 4 });
      await daemon.client.addMetrics([{ runId: run.id, step: 0, name: 'reward/mean', value: 0.25 }]);
      await view.page.waitForSelector('.chart-card[data-chart="reward"] canvas', { timeout: 15_000 });
      assert.deepEqual([...view.problems], []);
    } finally {
      live.close();
      await view.close();
      await daemon.close();
    }
  });
});

describe('training dashboard webview on a run with one policy per role', () => {
  const RUN_P = 'run-sql-two-policies';
  let daemon: Daemon;
  let view: WebviewSession;

  before(async () => {
    daemon = await startDaemon();
    await seedTwoPolicyRun(daemon.client, RUN_P);
    // What the run was measured on and the tasks its held-out numbers cover, as agl train records them.
    await daemon.client.addMetrics(
      [
        ...[0, 1, 2, 3, 4].map((step) => ({ step, name: 'perf/peak_memory_mib', value: 21_000 + 100 * step })),
        ...[0, 4].flatMap((step) => [
          { step, name: 'val/reward', value: step ? 0.7 : 0.5 },
          { step, name: 'val/tasks', value: 8 },
        ]),
      ].map((p) => ({ ...p, runId: RUN_P })),
    );
    await daemon.client.updateTrainingRun(RUN_P, {
      summary: {
        stopReason: 'completed',
        elapsedMs: 60_000,
        tasks: { train: 40, val: 8 },
        engine: { engine: 'torch', device: 'cuda:0', dtype: 'bfloat16', ranks: 2, memory: 'cuda' },
      } satisfies TrainingRunSummary,
    });
    view = await openWebview('dashboard', dashboardHandlers(daemon.client), { width: 1300 });
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  it('draws one chart per policy metric with a line per policy, and one per role metric with a line per role', async () => {
    const page = view.page;
    await page.waitForSelector('.chart-card[data-chart="policy-loss"] canvas');
    const metricsOf = (chart: string) =>
      page.locator(`.chart-card[data-chart="${chart}"] .chart-value`).evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.metric));
    assert.deepEqual(await metricsOf('policy-loss'), ['policy/rewriter/loss', 'policy/writer/loss']);
    assert.deepEqual(await metricsOf('role-calls'), ['role/checker/calls', 'role/rewriter/calls', 'role/writer/calls']);
    assert.equal(await page.locator('.chart-card[data-chart="policy-loss"] h2').innerText(), 'Per policy: loss');
    assert.match(
      await page.locator('.chart-card[data-chart="policy-loss"] .chart-value[data-metric="policy/writer/loss"]').innerText(),
      /^policy writer loss 0\.0200$/,
    );
    assert.match(await page.locator('.cfg.roles').innerText(), /policies writer, rewriter/);
    assert.match((await page.locator('.cfg.roles').getAttribute('title'))!, /every other role is served, untrained, by the default policy \(warmup\)/);
  });

  it('notes the steps that taught nothing or little, each with the first thing to try; a click opens the step', async () => {
    const notes = await view.page
      .locator('.step-note')
      .evaluateAll((els) => els.map((e) => [(e as HTMLElement).dataset.step, (e as HTMLElement).dataset.kind, e.textContent]));
    assert.deepEqual(
      notes.map(([step, kind]) => [step, kind]),
      [
        ['1', 'no-update'],
        ['2', 'policy-no-update'],
        ['3', 'zero-variance'],
      ],
    );
    assert.match(String(notes[0]![2]), /^step 1: no update: each task's rollouts scored alikeTry first: give the reward partial credit/);
    assert.match(
      String(notes[1]![2]),
      /^step 2: policy rewriter: no update: role rewriter made no LLM call in this step \(it called in steps 0, 1, 3, 4: the agent takes it only on some paths/,
    );
    assert.match(String(notes[1]![2]), /Try first: nothing is wrong when the agent calls it only when needed/);
    assert.doesNotMatch(String(notes[1]![2]), /partial credit|agl sft/, 'no reward advice for a role that runs only on a branch');
    assert.match(String(notes[2]![2]), /^step 3: 75% of the groups had zero variance/);
    assert.equal(await view.page.locator('.learning-diagnosis').count(), 0, 'the run learned: no diagnosis');
    await view.page.locator('.step-note[data-step="3"] a').click();
    assert.deepEqual((await view.nextCommand(DashboardProtocol.openGroups.method)).params, { runId: RUN_P, step: 3 });
  });

  it('says what the run was measured on: engine, device, dtype, ranks, peak memory, and the held-out tasks a number covers', async () => {
    assert.equal((await view.page.locator('.cfg.engine').innerText()).trim(), 'torch · cuda:0 · bfloat16 · 2 ranks · peak 20.9 GiB (CUDA)');
    assert.equal((await view.page.locator('.kpi.held-out').innerText()).trim(), 'held-out 0.700 of 8 tasks');
    await view.page.locator('.step-notes').evaluate((d) => ((d as HTMLDetailsElement).open = true));
    await view.screenshot('dashboard-policies-notes');
  });

  it('moves the cursor of every chart to the step hovered on one', async () => {
    const page = view.page;
    const box = (await page.locator('.chart-card[data-chart="reward"] .u-over').boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
    await page.waitForFunction(() => !!document.querySelector('.chart-card[data-chart="role-calls"] .chart-step'), undefined, { timeout: 5000 });
    const stepOf = (chart: string) => page.locator(`.chart-card[data-chart="${chart}"] .chart-step`).innerText();
    const hovered = await stepOf('reward');
    assert.match(hovered, /^step [0-4]$/);
    for (const chart of ['policy-loss', 'role-calls', 'loss', 'zero-std']) assert.equal(await stepOf(chart), hovered, `${chart} follows the hovered step`);
    await page.mouse.move(0, 0);
  });

  it('names a run with a label the user types, kept in the store and shown in the run picker', async () => {
    const page = view.page;
    await page.locator('.rename-run').click();
    await page.locator('.label-input').fill('lr 1e-4, two policies');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /lr 1e-4, two policies · sqlAgent/.test(document.querySelector('.run-select')?.textContent ?? ''), undefined, {
      timeout: 5000,
    });
    const run = await daemon.client.getTrainingRun(RUN_P);
    assert.equal((run!.summary as { label?: string }).label, 'lr 1e-4, two policies');
    assert.equal((run!.summary as { stopReason?: string }).stopReason, 'completed', 'the rest of the summary kept');
    await view.screenshot('dashboard-two-policies');
    assert.deepEqual([...view.problems], []);
  });
});

describe('training dashboard webview on a run with an LLM judge', () => {
  const RUN_J = 'run-judged-steps';
  let daemon: Daemon;
  let view: WebviewSession;

  before(async () => {
    daemon = await startDaemon();
    await daemon.client.createTrainingRun({ id: RUN_J, agent: AGENT, totalSteps: 3 });
    // Three steps as the trainer records them (the judge's part by its own judgeMetrics): all scored; 3 of 8 groups left
    // out; every group left out (no reward at all: never a 0).
    const totals = (groups: number, failed: Partial<JudgeTotals['failed']>, cost: number): JudgeTotals => ({
      calls: groups + Object.values(failed).reduce((a, n) => a + n, 0),
      tokens: 3000 * groups,
      cost,
      groups,
      failed: { malformed: 0, partial: 0, error: 0, timeout: 0, ...failed },
    });
    const steps: [number, Record<string, number>, JudgeTotals][] = [
      [1, { 'reward/mean': 0.4, 'reward/std': 0.3, 'grpo/trained_tokens': 90 }, totals(8, {}, 0.012)],
      [2, { 'reward/mean': 0.5, 'reward/std': 0.3, 'grpo/trained_tokens': 60 }, totals(5, { partial: 2, timeout: 1 }, 0.009)],
      [3, { 'grpo/trained_tokens': 0 }, totals(0, { error: 8 }, 0.004)],
    ];
    await daemon.client.addMetrics(
      steps.flatMap(([step, m, t]) =>
        Object.entries({ ...m, 'grpo/frac_reward_zero_std': 0, 'rollout/count': 64, 'rollout/failed': 0, 'rollout/llm_calls': 64, ...judgeMetrics(t) }).map(
          ([name, value]) => ({ runId: RUN_J, step, name, value }),
        ),
      ),
    );
    view = await openWebview('dashboard', dashboardHandlers(daemon.client), { width: 1300 });
    await view.notify(DashboardProtocol.show.method, { runId: RUN_J });
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  it('notes the groups the judge could not score, why, and what to try; charts its groups and its cost per step', async () => {
    const page = view.page;
    await page.waitForSelector('.step-note');
    await page.locator('.step-notes').evaluate((d) => ((d as HTMLDetailsElement).open = true));
    const notes = await page
      .locator('.step-note')
      .evaluateAll((els) => els.map((e) => [(e as HTMLElement).dataset.steps, (e as HTMLElement).dataset.kind, e.textContent]));
    assert.deepEqual(
      notes.map(([steps, kind]) => [steps, kind]),
      [
        ['2', 'judge-left-out'],
        ['3', 'judge-left-out'],
      ],
    );
    assert.match(
      String(notes[0]![2]),
      /^step 2: the judge could not score 3 of 8 groups \(2 answers missing a trajectory, 1 timeout\): left out of the updateTry first: a judge model that answers in the JSON asked for/,
    );
    assert.match(
      String(notes[1]![2]),
      /^step 3: the judge could not score 8 of 8 groups \(8 requests that failed .*\): left out of the update, so nothing was left to train onTry first: check the judge's endpoint/,
    );
    await page.waitForSelector('.chart-card[data-chart="judge-groups"] canvas');
    await page.waitForSelector('.chart-card[data-chart="judge-cost"] canvas');
    assert.equal(await page.locator('.chart-card[data-chart="judge-cost"] h2').innerText(), 'Judge: cost per step');
    assert.deepEqual([...view.problems], []);
    await view.screenshot('dashboard-judge');
  });
});
