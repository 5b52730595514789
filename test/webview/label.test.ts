/**
 * "Your label" in the trajectory viewer, built and loaded in chromium under the panel's strict CSP and answered by the
 * panel's real host code (extension/panels/data.ts) from a real daemon: a rollout marked good is stored as a reward
 * span of source human and read back from the daemon; relabelled with a score; a score out of range is refused in the
 * view; reopened, the rollout shows its label. Its reward stays the agent's own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { HUMAN_REWARD_SOURCE, humanLabelOf } from '../../protocol/human-label.js';
import { finalReward } from '../../protocol/span-reading.js';
import { AGL } from '../../protocol/spans.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { seedDatasetRollouts } from './seed.js';

describe('labelling a rollout in the viewer', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  let rolloutId = '';
  const status = (text: string) => view.page.locator('.label-status', { hasText: text }).first().waitFor({ state: 'visible', timeout: 15_000 });
  const spans = () => daemon.client.querySpans({ rolloutId, attemptId: 'latest' });

  before(async () => {
    daemon = await startDaemon();
    rolloutId = (await seedDatasetRollouts(daemon.client, 'run-label')).wrong;
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client));
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  it('marks a rollout good and the daemon holds the label; a score replaces it; a bad score is refused', async () => {
    const { page } = view;
    const before = finalReward(await spans());
    await view.notify(TrajectoryProtocol.show.method, { view: { kind: 'rollout', rolloutId } });
    await status('Not labelled');
    await page.locator('.label-controls vscode-button.label-good').click();
    await status('Labelled good.');
    const stored = (await spans()).filter((s) => s.attributes[AGL.rewardSource] === HUMAN_REWARD_SOURCE);
    assert.equal(stored.length, 1);
    assert.deepEqual([humanLabelOf(stored)?.kind, humanLabelOf(stored)?.value], ['good', 1]);
    assert.equal(finalReward(await spans()), before, "the rollout's reward stays the agent's own");

    await page.locator('input.label-score').fill('1.5');
    await page.locator('.label-controls vscode-button.label-score-set').click();
    await status('Give a score from 0 to 1.');
    await page.locator('input.label-score').fill('0.3');
    await page.locator('.label-controls vscode-button.label-score-set').click();
    await status('Labelled with a score of 0.3.');
    assert.deepEqual([humanLabelOf(await spans())?.kind, humanLabelOf(await spans())?.value], ['score', 0.3]);

    // Shown again (a fresh read from the daemon), the rollout says its label.
    await view.notify(TrajectoryProtocol.show.method, { view: { kind: 'rollouts' } });
    await page.waitForSelector('.rollout-row');
    await view.notify(TrajectoryProtocol.show.method, { view: { kind: 'rollout', rolloutId } });
    await status('Labelled with a score of 0.3.');
    await view.screenshot('rollout-label');
    assert.deepEqual(view.problems, []);
  });
});
