/**
 * The refresh chain of an open trajectory viewer, wired as its panel wires it (extension/panels/trajectory-panel.ts):
 * the daemon's event stream (the subscription Ctx holds) tells the panel's live updates (live-updates.ts
 * RolloutsRefresh) which rollouts changed, the host sends `trajectory/changed`, and the webview (chromium, real CSP)
 * re-reads what it shows, so a rollout enqueued while the viewer is open appears in its list, and an open rollout that
 * is still running shows each span as it lands, without a click and without any poll: nothing else in this chain
 * reads the store on its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { liveTrajectory, openWebview, startDaemon, type Daemon, type LiveUpdates, type WebviewSession } from './harness.js';

describe('trajectory viewer refresh', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  let live: LiveUpdates;
  before(async () => {
    daemon = await startDaemon();
    await daemon.client.enqueueRollout({ input: { q: 'first' }, agent: 'a.ts#agent' });
    live = liveTrajectory(daemon);
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client), { onCommand: (m, p, v) => live.onCommand(m, p, v) });
    live.attach(view);
  });
  after(async () => {
    live?.close();
    await view?.close();
    await daemon?.close();
  });

  it('shows a rollout enqueued while the viewer is open, without a reload', async () => {
    const page = view.page;
    await page.waitForSelector('.rollout-row');
    assert.equal(await page.locator('.rollout-row').count(), 1);
    const added = await daemon.client.enqueueRollout({ input: { q: 'second' }, agent: 'a.ts#agent' });
    await page.waitForSelector(`.rollout-row[data-rollout-id="${added.id}"]`, { timeout: 10_000 });
    assert.equal(await page.locator('.rollout-row').count(), 2);
    assert.deepEqual(view.problems, []);
  });

  it('follows an open rollout that is still running: each span shows as it lands, then its end', async () => {
    const page = view.page;
    const { rollout, attempt } = await daemon.client.startRollout({ input: { q: 'running' }, agent: 'a.ts#agent' }, 'w');
    const span = (name: string) => ({ rolloutId: rollout.id, attemptId: attempt.id, name, startTime: Date.now(), endTime: Date.now() + 1 });
    await daemon.client.addSpans([span('plan')]);
    await view.notify('trajectory/show', { view: { kind: 'rollout', rolloutId: rollout.id } });
    await page.waitForSelector('.span-row[data-span-id]');
    assert.equal(await page.locator('.span-row[data-span-id]').count(), 1);
    await daemon.client.addSpans([span('answer')]);
    await page.waitForFunction(() => document.querySelectorAll('.span-row[data-span-id]').length === 2, undefined, { timeout: 10_000 });
    await daemon.client.finishAttempt(attempt.id, { status: 'failed', error: { message: 'stopped by the test' } });
    await page.waitForFunction(() => /stopped by the test/.test(document.body.innerText), undefined, { timeout: 10_000 });
    assert.deepEqual(view.problems, []);
  });
});
