/**
 * The refresh chain of an open trajectory viewer, wired as its panel wires it (extension/panels/
 * trajectory-panel.ts): the host watches the real daemon's store (data.ts watchStore) and sends
 * `trajectory/changed`; the webview (chromium, real CSP) reloads its list, so a rollout enqueued while the
 * viewer is open appears in it without a click.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers, watchStore } from '../../extension/panels/data.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';

describe('trajectory viewer refresh', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  let watcher: { stop(): void } | undefined;
  before(async () => {
    daemon = await startDaemon();
    await daemon.client.enqueueRollout({ input: { q: 'first' }, agent: 'a.ts#agent' });
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client));
  });
  after(async () => {
    watcher?.stop();
    await view?.close();
    await daemon?.close();
  });

  it('shows a rollout enqueued while the viewer is open, without a reload', async () => {
    const page = view.page;
    await page.waitForSelector('.rollout-row');
    assert.equal(await page.locator('.rollout-row').count(), 1);
    watcher = watchStore(
      async () => daemon.client,
      () => void view.notify(TrajectoryProtocol.changed.method, { rolloutIds: [] }),
      100,
    );
    await new Promise((r) => setTimeout(r, 300)); // the watcher's baseline reading
    const added = await daemon.client.enqueueRollout({ input: { q: 'second' }, agent: 'a.ts#agent' });
    await page.waitForSelector(`.rollout-row[data-rollout-id="${added.id}"]`, { timeout: 10_000 });
    assert.equal(await page.locator('.rollout-row').count(), 2);
    assert.deepEqual(view.problems, []);
  });
});
