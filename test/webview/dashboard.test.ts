/**
 * The training dashboard, built (dist/webview/dashboard.js) and loaded in Debian chromium under the
 * panel's real CSP, answered by the panel's real host-side code from a real daemon: the curves (reward
 * and validation, KL, clip ratio, zero-variance fraction) drawn with uPlot, new points arriving live
 * through the same polling the panel runs, and a click on a point asking for that step's GRPO groups.
 * Also checks the built bundles use no eval and load only @vscode-elements (never the old toolkit).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dashboardHandlers, watchRunMetrics } from '../../extension/panels/data.js';
import { DashboardProtocol } from '../../protocol/webview-dashboard.js';
import { ROOT, openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { RUN_ID, seedCalcTraining } from './seed.js';

describe('training dashboard webview', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  let watcher: { stop(): void } | null = null;

  before(async () => {
    daemon = await startDaemon();
    await seedCalcTraining(daemon.client);
    view = await openWebview('dashboard', dashboardHandlers(daemon.client), {
      // What the panel does on "watchRun": poll the daemon and push new points to the webview.
      onCommand: (method, params, session) => {
        if (method !== DashboardProtocol.watchRun.method) return;
        watcher?.stop();
        watcher = watchRunMetrics(daemon.client, (params as { runId: string }).runId,
          (run, points) => void session.notify(DashboardProtocol.metrics.method, { run, points }), 200);
      },
    });
  });
  after(async () => { watcher?.stop(); await view?.close(); await daemon?.close(); });

  const latest = (metric: string) => view.page.locator(`.chart-value[data-metric="${metric}"] b`).innerText();

  it('draws reward and validation, KL, clip ratio and zero-variance curves for the newest run', async () => {
    const page = view.page;
    await page.waitForSelector('.chart-card[data-chart="reward"] canvas');
    const charts = await page.locator('.chart-card').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.chart));
    assert.deepEqual(charts.slice(0, 6), ['reward', 'kl', 'clip', 'zero-std', 'loss', 'response']);
    assert.ok(charts.includes('metric-perf/step_s'), 'a metric no chart names gets its own chart');
    for (const id of ['reward', 'kl', 'clip', 'zero-std']) {
      const box = await page.locator(`.chart-card[data-chart="${id}"] canvas`).boundingBox();
      assert.ok(box && box.width > 200 && box.height > 100, `${id} chart drawn (${JSON.stringify(box)})`);
    }
    assert.equal(await latest('reward/mean'), '0.713'); // 0.22 + 0.5 + 0.05 sin(18.7), the seed's step 11
    assert.equal(await latest('val/reward'), '0.527');
    assert.match(await page.locator('.progress-line').innerText(), /running[\s\S]*step 12 \/ 20/);
    assert.deepEqual((await view.nextCommand(DashboardProtocol.watchRun.method)).params, { runId: RUN_ID });
    await view.screenshot('dashboard');
  });

  it('moves live: points the trainer writes appear without a reload', async () => {
    await daemon.client.addMetrics(RUN_ID, [
      { step: 12, name: 'reward/mean', value: 0.81 }, { step: 12, name: 'grpo/kl', value: 0.03 }, { step: 12, name: 'val/reward', value: 0.66 },
      { step: 13, name: 'reward/mean', value: 0.84 }, { step: 13, name: 'grpo/kl', value: 0.031 },
    ]);
    await daemon.client.updateTrainingRun(RUN_ID, { step: 14 });
    await view.page.waitForFunction(() => document.querySelector('.chart-value[data-metric="reward/mean"] b')?.textContent === '0.840', undefined, { timeout: 10_000 });
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
    assert.deepEqual(opened(), [{ runId: RUN_ID, step: 0 }, { runId: RUN_ID, step: 13 }]);
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
    const view = await openWebview('dashboard', dashboardHandlers(daemon.client));
    try {
      await view.page.waitForSelector('.empty-state');
      assert.match(await view.page.locator('.empty-state').innerText(), /No training run yet/);
      const run = await daemon.client.createTrainingRun({ agent: 'samples/calc/agent.ts#calcAgent', totalSteps: 4 });
      await daemon.client.addMetrics(run.id, [{ step: 0, name: 'reward/mean', value: 0.25 }]);
      await view.page.waitForSelector('.chart-card[data-chart="reward"] canvas', { timeout: 15_000 });
      assert.deepEqual([...view.problems], []);
    } finally { await view.close(); await daemon.close(); }
  });
});
