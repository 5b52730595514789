/**
 * The webviews take every colour from the VS Code theme: the same views under Light Modern and Dark
 * Modern paint with each theme's variables (editor background, foreground, the chart and status colours),
 * and a light screenshot is kept next to the dark ones in test-results/webview/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dashboardHandlers, trajectoryHandlers } from '../../extension/panels/data.js';
import { openWebview, startDaemon, type Daemon } from './harness.js';
import { seedCalcTraining, type SeededData } from './seed.js';

describe('webview theming', () => {
  let daemon: Daemon;
  let data: SeededData;
  before(async () => { daemon = await startDaemon(); data = await seedCalcTraining(daemon.client); });
  after(async () => { await daemon?.close(); });

  for (const theme of ['light', 'dark'] as const) {
    it(`paints the trajectory viewer and the dashboard with the ${theme} theme's colours`, async () => {
      const expected = theme === 'light'
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
      } finally { await viewer.close(); }

      const dashboard = await openWebview('dashboard', dashboardHandlers(daemon.client), { theme });
      try {
        await dashboard.page.waitForSelector('.chart-card[data-chart="reward"] canvas');
        assert.equal(await dashboard.page.evaluate(() => getComputedStyle(document.body).backgroundColor), expected.background);
        await dashboard.screenshot(`theme-${theme}-dashboard`);
        assert.deepEqual([...dashboard.problems], []);
      } finally { await dashboard.close(); }
    });
  }
});
