/**
 * The dashboard's charts tell the truth about what was measured (chromium, strict CSP, the panel's host code, a real
 * daemon holding a two-policy run's metrics as the trainer writes them: seed.ts seedTwoPolicyRun):
 *  - a step without an update is a gap in the loss and gradient-norm lines, never the 0 the trainer recorded, and so is
 *    a policy's step without an update (its reward too when it had no call); hovering the step says why;
 *  - a role and the policy named after it have one colour on every chart, every policy and role its own;
 *  - a theme change redraws the charts in the new theme's colours (axes included), without reopening the panel.
 * Lines and axes are read from the canvas pixels uPlot drew. Screenshots: test-results/webview/chart-*.png.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { dashboardHandlers } from '../../extension/panels/data.js';
import { join } from 'node:path';
import { openWebview, SCREENSHOTS, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { seedTwoPolicyRun } from './seed.js';
import { DARK_MODERN, LIGHT_MODERN } from './theme.js';

const RUN = 'run-sql-gaps';
const LAST_STEP = 4;

/**
 * Pixels of `color` (a CSS colour) that uPlot drew in a chart's canvas, between two steps (fractions of the x range,
 * the plot area's whole height), or over the whole canvas.
 */
function pixels(page: Page, chart: string, color: string, steps?: [number, number]): Promise<number> {
  return page.evaluate(
    ({ chart, color, range, last }) => {
      const probe = document.createElement('span');
      probe.style.color = color;
      document.body.append(probe);
      const want = getComputedStyle(probe).color.match(/\d+/g)!.map(Number);
      probe.remove();
      const card = document.querySelector(`.chart-card[data-chart="${chart}"]`)!;
      const canvas = card.querySelector('canvas')!;
      const over = card.querySelector('.u-over')!.getBoundingClientRect();
      const box = canvas.getBoundingClientRect();
      const scale = canvas.width / box.width;
      const [x0, x1, y0, y1] = range
        ? [over.left + (over.width * range[0]) / last, over.left + (over.width * range[1]) / last, over.top, over.bottom].map((v, i) =>
            Math.round((v - (i < 2 ? box.left : box.top)) * scale),
          )
        : [0, canvas.width, 0, canvas.height];
      const data = canvas.getContext('2d')!.getImageData(x0!, y0!, x1! - x0!, y1! - y0!).data;
      let n = 0;
      for (let i = 0; i < data.length; i += 4)
        if (data[i + 3]! >= 160 && Math.abs(data[i]! - want[0]!) + Math.abs(data[i + 1]! - want[1]!) + Math.abs(data[i + 2]! - want[2]!) <= 45) n++;
      return n;
    },
    { chart, color, range: steps ?? null, last: LAST_STEP },
  );
}

/** The colour of a line, as its swatch beside the chart's title shows it. */
const swatch = (page: Page, chart: string, metric: string) =>
  page.locator(`.chart-card[data-chart="${chart}"] .chart-value[data-metric="${metric}"] .swatch`).evaluate((e) => getComputedStyle(e).color);

/** Hovers a chart at a step; the values beside every chart's title then are that step's. */
async function hover(page: Page, chart: string, step: number): Promise<void> {
  await page.locator(`.chart-card[data-chart="${chart}"]`).scrollIntoViewIfNeeded();
  const over = (await page.locator(`.chart-card[data-chart="${chart}"] .u-over`).boundingBox())!;
  await page.mouse.move(over.x + (over.width * step) / LAST_STEP, over.y + over.height / 2);
  await page
    .waitForFunction(
      ({ chart, step }) => document.querySelector(`.chart-card[data-chart="${chart}"] .chart-step`)?.textContent === `step ${step}`,
      { chart, step },
      { timeout: 5000 },
    )
    .catch(async (e) => {
      throw new Error(`hovering ${chart} at step ${step} showed: ${await page.locator(`.chart-card[data-chart="${chart}"] .chart-values`).innerText()} (${e})`);
    });
}
/** What the tip over a chart says about the hovered step (null: hidden, nothing is a gap there). */
const tip = async (page: Page, chart: string): Promise<string | null> => {
  const el = page.locator(`.chart-card[data-chart="${chart}"] .gap-tip`);
  return (await el.isVisible()) ? (await el.innerText()).trim() : null;
};
const valueAt = (page: Page, chart: string, metric: string) =>
  page.locator(`.chart-card[data-chart="${chart}"] .chart-value[data-metric="${metric}"]`).innerText();

for (const theme of ['light', 'dark'] as const) {
  describe(`dashboard charts on a two-policy run, ${theme} theme`, () => {
    let daemon: Daemon;
    let view: WebviewSession;
    before(async () => {
      daemon = await startDaemon();
      await seedTwoPolicyRun(daemon.client, RUN);
      view = await openWebview('dashboard', dashboardHandlers(daemon.client), { width: 1300, theme });
      await view.page.waitForSelector('.chart-card[data-chart="policy-loss"] canvas');
      await view.page.waitForSelector('.chart-card[data-chart="role-calls"] canvas');
    });
    after(async () => {
      await view?.close();
      await daemon?.close();
    });

    it('draws a gap where nothing was measured, never the 0 the trainer recorded, and says why on hover', async () => {
      const page = view.page;
      const writer = await swatch(page, 'policy-loss', 'policy/writer/loss');
      const rewriter = await swatch(page, 'policy-loss', 'policy/rewriter/loss');
      // Step 1 updated nothing: no line into it or out of it, for either policy. Step 2: the rewriter did not update.
      assert.equal(await pixels(page, 'policy-loss', writer, [0.2, 0.8]), 0, 'writer: no line from step 0 into step 1');
      assert.equal(await pixels(page, 'policy-loss', rewriter, [0.2, 0.8]), 0, 'rewriter: no line from step 0 into step 1');
      assert.ok((await pixels(page, 'policy-loss', writer, [2.2, 2.8])) > 0, 'writer: steps 2 and 3 joined');
      assert.equal(await pixels(page, 'policy-loss', rewriter, [2.2, 2.8]), 0, 'rewriter: no line from step 2 (no update)');
      assert.ok((await pixels(page, 'policy-loss', rewriter, [3.2, 3.8])) > 0, 'rewriter: steps 3 and 4 joined');
      const lossLine = await swatch(page, 'loss', 'grpo/loss');
      assert.equal(await pixels(page, 'loss', lossLine, [0.2, 1.8]), 0, 'the step loss: a gap at step 1');
      assert.ok((await pixels(page, 'loss', lossLine, [2.2, 2.8])) > 0);
      await view.screenshot(`chart-gaps-${theme}`);

      await hover(page, 'policy-loss', 2);
      // The reason in the words of the dashboard's note on the step (protocol/training-health.ts): the rewriter did not run.
      const noCall =
        "no update this step: role rewriter made no LLM call in this step (it called in steps 0, 1, 3, 4: the agent takes it only on some paths, e.g. when another role's answer is rejected)";
      assert.equal(await tip(page, 'policy-loss'), `policy rewriter: ${noCall}`);
      assert.equal(await valueAt(page, 'policy-loss', 'policy/rewriter/loss'), 'policy rewriter loss no update');
      assert.equal(
        await page.locator('.chart-card[data-chart="policy-loss"] .chart-value[data-metric="policy/rewriter/loss"] .unmeasured').getAttribute('title'),
        noCall,
      );
      assert.match(await valueAt(page, 'policy-loss', 'policy/writer/loss'), /^policy writer loss 0\.0300$/);
      assert.equal(await tip(page, 'policy-reward'), `policy rewriter: ${noCall}`, 'no call: no reward');
      assert.equal(await tip(page, 'policy-grad_norm'), `policy rewriter: ${noCall}`);
      assert.equal(await tip(page, 'loss'), null, 'the step itself updated');
      // The viewport only: a full-page screenshot resizes the page, which redraws the charts and drops the cursor.
      await page.screenshot({ path: join(SCREENSHOTS, `chart-gap-hover-${theme}.png`) });

      await hover(page, 'policy-loss', 1);
      const zeroVariance = /^no update this step: each task's rollouts scored alike$/; // the cause's words (protocol/training-health.ts)
      for (const chart of ['policy-loss', 'policy-grad_norm', 'loss', 'grad-norm'])
        assert.match((await tip(page, chart)) ?? '', zeroVariance, `${chart} at step 1`);
      assert.equal(await tip(page, 'policy-reward'), null, 'both policies had calls: their rewards were measured');
      assert.match(await valueAt(page, 'policy-reward', 'policy/writer/reward'), /^policy writer reward of its calls \(mean credit\) 0\.250$/);
      await page.mouse.move(0, 0);
    });

    it('gives a role and its policy one colour on every chart, each its own', async () => {
      const page = view.page;
      const colour = {
        writer: [
          await swatch(page, 'policy-loss', 'policy/writer/loss'),
          await swatch(page, 'policy-reward', 'policy/writer/reward'),
          await swatch(page, 'role-calls', 'role/writer/calls'),
        ],
        rewriter: [await swatch(page, 'policy-loss', 'policy/rewriter/loss'), await swatch(page, 'role-calls', 'role/rewriter/calls')],
        checker: [await swatch(page, 'role-calls', 'role/checker/calls')],
      };
      for (const [name, seen] of Object.entries(colour)) assert.equal(new Set(seen).size, 1, `${name}: one colour on every chart (${seen.join(', ')})`);
      assert.equal(new Set([colour.writer[0], colour.rewriter[0], colour.checker[0]]).size, 3, 'each its own colour');
      assert.deepEqual([...view.problems], []);
    });

    it('redraws the charts in the other theme when VS Code switches it, axes included', async () => {
      const page = view.page;
      const other = theme === 'light' ? 'dark' : 'light';
      const axis = { light: LIGHT_MODERN.descriptionForeground!, dark: DARK_MODERN.descriptionForeground! };
      assert.ok((await pixels(page, 'reward', axis[theme])) > 30, `the axes are drawn in the ${theme} theme's colour`);
      assert.ok((await pixels(page, 'reward', axis[other])) < 5, `no ${other} theme colour yet`);
      const before = await swatch(page, 'role-calls', 'role/writer/calls');
      await view.setTheme(other);
      await page.waitForFunction(() => document.body.classList.contains('vscode-light') || document.body.classList.contains('vscode-dark'));
      for (const until = Date.now() + 5000; (await pixels(page, 'reward', axis[other])) <= 30;) {
        assert.ok(Date.now() < until, `the axes were not redrawn in the ${other} theme's colour`);
        await page.waitForTimeout(50);
      }
      assert.ok((await pixels(page, 'reward', axis[theme])) < 5, `no ${theme} theme colour left on the axes`);
      const after = await swatch(page, 'role-calls', 'role/writer/calls');
      assert.notEqual(after, before, 'the lines take the new theme colour');
      assert.equal(await swatch(page, 'policy-loss', 'policy/writer/loss'), after, 'and keep one colour per role');
      const writer = await swatch(page, 'policy-loss', 'policy/writer/loss');
      assert.ok((await pixels(page, 'policy-loss', writer, [2.2, 2.8])) > 0, 'the lines are drawn in it');
      await view.screenshot(`chart-${theme}-then-${other}`);
      assert.deepEqual([...view.problems], []);
    });
  });
}

describe('dashboard charts on a run that never updated the policy', () => {
  const NEVER = 'run-calc-zero';
  let daemon: Daemon;
  let view: WebviewSession;
  before(async () => {
    daemon = await startDaemon();
    await daemon.client.createTrainingRun({ id: NEVER, agent: 'samples/calc/agent.ts#calcAgent', totalSteps: 3, config: {} });
    // What the trainer writes for steps whose every group scored 0: no update, so 0 for what an update measures.
    const zero = ['reward/mean', 'grpo/frac_reward_zero_std', 'grpo/trained_tokens', 'grpo/loss', 'grpo/grad_norm', 'grpo/kl', 'grpo/clip_ratio'];
    await daemon.client.addMetrics(
      [0, 1, 2].flatMap((step) => zero.map((name) => ({ runId: NEVER, step, name, value: name === 'grpo/frac_reward_zero_std' ? 1 : 0 }))),
    );
    await daemon.client.updateTrainingRun(NEVER, { status: 'succeeded', step: 3, summary: { stopReason: 'completed' } });
    view = await openWebview('dashboard', dashboardHandlers(daemon.client), { width: 1300 });
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  it('draws no chart of what was never measured, and names it on one line with the reason', async () => {
    const page = view.page;
    await page.waitForSelector('.chart-card[data-chart="reward"] canvas');
    await page.waitForSelector('.constants .constant-item');
    const charts = await page.locator('.chart-card').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.chart));
    for (const chart of ['loss', 'grad-norm', 'kl', 'clip']) assert.ok(!charts.includes(chart), `no ${chart} chart: ${charts.join(', ')}`);
    const line = await page.locator('.constants').innerText();
    assert.match(line, /never measured: loss, gradient norm, KL to reference, clip ratio/);
    assert.match(line, /^constant: zero-variance groups = 1, trained tokens = 0 · never measured/);
    assert.equal(
      await page.locator('.constants .constant-item[data-metric="grpo/loss"]').getAttribute('title'),
      'grpo/loss: at every step, no update this step: every rollout scored 0',
    );
    await view.screenshot('chart-never-measured');
    assert.deepEqual([...view.problems], []);
  });
});
