/**
 * The webviews take every colour from the VS Code theme: the same views under Light Modern and Dark
 * Modern paint with each theme's variables (editor background, foreground, the chart and status colours),
 * and a light screenshot is kept next to the dark ones in test-results/webview/. A panel beside the
 * editor (narrow) gets the question first with status and reward, the other columns on a second line, and
 * the span tree above the detail (narrow-keyboard.test.ts has the rest of the narrow list).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dashboardHandlers, trajectoryHandlers } from '../../extension/panels/data.js';
import { openWebview, startDaemon, type Daemon } from './harness.js';
import { seedCalcTraining, type SeededData } from './seed.js';

describe('webview theming and layout', () => {
  let daemon: Daemon;
  let data: SeededData;
  before(async () => {
    daemon = await startDaemon();
    data = await seedCalcTraining(daemon.client);
  });
  after(async () => {
    await daemon?.close();
  });

  for (const theme of ['light', 'dark'] as const) {
    it(`paints the trajectory viewer and the dashboard with the ${theme} theme's colours`, async () => {
      const expected =
        theme === 'light'
          ? { background: 'rgb(255, 255, 255)', foreground: 'rgb(59, 59, 59)', passed: 'rgb(56, 138, 52)' }
          : { background: 'rgb(31, 31, 31)', foreground: 'rgb(204, 204, 204)', passed: 'rgb(115, 201, 145)' };
      const viewer = await openWebview('trajectory', trajectoryHandlers(daemon.client), { theme });
      try {
        await viewer.notify('trajectory/show', { view: { kind: 'group', rolloutId: data.groupRolloutIds['task-sq'][0] } });
        await viewer.page.waitForSelector('.sample-card');
        const colours = await viewer.page.evaluate(() => ({
          background: getComputedStyle(document.body).backgroundColor,
          foreground: getComputedStyle(document.body).color,
          passed: getComputedStyle(document.querySelector('.metric-value.reward.positive')!).color,
        }));
        assert.deepEqual(colours, expected);
        await viewer.screenshot(`theme-${theme}-group`);
        assert.deepEqual([...viewer.problems], []);
      } finally {
        await viewer.close();
      }

      const dashboard = await openWebview('dashboard', dashboardHandlers(daemon.client), { theme });
      try {
        await dashboard.page.waitForSelector('.chart-card[data-chart="reward"] canvas');
        assert.equal(await dashboard.page.evaluate(() => getComputedStyle(document.body).backgroundColor), expected.background);
        await dashboard.screenshot(`theme-${theme}-dashboard`);
        assert.deepEqual([...dashboard.problems], []);
      } finally {
        await dashboard.close();
      }
    });
  }

  it('fits a panel beside the editor: the question first, the other columns on a second line, span tree above the call detail', async () => {
    const viewer = await openWebview('trajectory', trajectoryHandlers(daemon.client), { width: 560, height: 900 });
    try {
      await viewer.page.waitForSelector('.rollout-row');
      // As the eye reads them: line by line, left to right.
      const shownHeaders = () =>
        viewer.page.locator('.grid-header [role="columnheader"]').evaluateAll((els) =>
          els
            .filter((e) => getComputedStyle(e).display !== 'none')
            .map((e) => ({ r: e.getBoundingClientRect(), text: e.textContent }))
            .sort((a, b) => Math.round(a.r.top) - Math.round(b.r.top) || a.r.left - b.r.left)
            .map((e) => e.text),
        );
      assert.deepEqual(await shownHeaders(), ['Input', 'Status', 'Reward', 'Rollout · mode · agent · resources · model · attempts', 'Duration', 'Created']);
      await viewer.screenshot('narrow-rollouts');
      await viewer.page.click(`.rollout-row[data-rollout-id="${data.groupRolloutIds['task-12x7'][0]}"]`);
      await viewer.page.waitForSelector('.detail-llm');
      const tree = (await viewer.page.locator('.span-tree').boundingBox())!;
      const detail = (await viewer.page.locator('.detail-pane').boundingBox())!;
      assert.ok(detail.y >= tree.y + tree.height, `detail (${detail.y}) below the tree (${tree.y + tree.height})`);
      await viewer.screenshot('narrow-rollout');
      await viewer.page.setViewportSize({ width: 1300, height: 900 });
      await viewer.page.click('.back');
      await viewer.page.waitForSelector('.rollout-row');
      assert.equal((await shownHeaders()).length, 11, 'all columns when wide again');
      assert.deepEqual([...viewer.problems], []);
    } finally {
      await viewer.close();
    }
  });
});
