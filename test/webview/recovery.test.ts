/**
 * Recovery, in chromium under the real CSP, answered by the panels' real host code (lazyHandlers over a client
 * source, as extension/views.ts wires it: no client while the daemon is down): every error state offers
 * "Start Daemon" (a typed command to the host, which runs the extension's command) and "Retry"; when the host
 * says the daemon is back (DaemonMessages.state, sent by the panels on Ctx's daemon changes) a view showing an
 * error reloads by itself; a panel restored with whatever state (an older shape, a rollout, no daemon yet)
 * renders instead of staying blank. The dashboard shows the agent's headline number in the CodeLens's words.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lazyHandlers, type ClientSource } from '../../extension/panels/client-source.js';
import { dashboardHandlers, trajectoryHandlers } from '../../extension/panels/data.js';
import { DaemonMessages } from '../../protocol/webview-ipc.js';
import { DashboardProtocol } from '../../protocol/webview-dashboard.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import type { Page } from 'playwright-core';
import { LOAD_TRIES } from '../../extension/panels/html.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { AGENT, RUN_ID, seedCalcTraining, type SeededData } from './seed.js';

describe('webview recovery: Start Daemon, Retry, reload when the daemon is back, restored panels', () => {
  let daemon: Daemon;
  let data: SeededData;
  let up = false;
  /** What views.ts clientOf(ctx) is: the current daemon's client, undefined while it is down. */
  const source: () => ClientSource = () => () => (up ? daemon.client : undefined);
  const sessions: WebviewSession[] = [];

  /** Opens a webview whose "Start Daemon" does what the extension does: the daemon comes up, every panel is told. */
  async function open(bundle: 'trajectory' | 'dashboard'): Promise<WebviewSession> {
    const handlers =
      bundle === 'trajectory' ? lazyHandlers(source, trajectoryHandlers, TrajectoryProtocol) : lazyHandlers(source, dashboardHandlers, DashboardProtocol);
    const view = await openWebview(bundle, handlers, {
      onCommand: (method, _params, session) => {
        if (method !== DaemonMessages.startDaemon.method) return;
        up = true;
        void session.notify(DaemonMessages.state.method, { up: true });
      },
    });
    sessions.push(view);
    return view;
  }

  before(async () => {
    daemon = await startDaemon();
    data = await seedCalcTraining(daemon.client);
  });
  after(async () => {
    for (const s of sessions) await s.close();
    await daemon?.close();
  });

  it('rollouts list: the daemon down gives an error with Start Daemon and Retry; Start Daemon brings the list', async () => {
    up = false;
    const view = await open('trajectory');
    const page = view.page;
    await page.waitForSelector('.error-state');
    assert.match(await page.locator('.error-state').innerText(), /Could not load rollouts: the Agent Lightning daemon is not running/);
    assert.deepEqual(await page.locator('.error-state vscode-button').allInnerTexts(), ['Start Daemon', 'Retry']);
    await view.screenshot('recovery-rollouts-error');
    await page.click('.error-state vscode-button[data-action="start-daemon"]');
    assert.deepEqual((await view.nextCommand(DaemonMessages.startDaemon.method)).params, {});
    await page.waitForSelector('.rollout-row', { timeout: 10_000 });
    assert.equal(await page.locator('.rollout-row').count(), 13);
    assert.equal(await page.locator('.error-state').count(), 0);
    assert.deepEqual(view.problems, []);
  });

  it('a rollout: Retry reloads it once the daemon answers again, and "daemon back" reloads it without a click', async () => {
    up = true;
    const view = await open('trajectory');
    const page = view.page;
    const rolloutId = data.groupRolloutIds['task-12x7'][0]!;
    await page.waitForSelector('.rollout-row');
    up = false; // the daemon goes away, then the user opens a rollout
    await page.click(`.rollout-row[data-rollout-id="${rolloutId}"]`);
    await page.waitForSelector('.error-state');
    assert.deepEqual(await page.locator('.error-state vscode-button').allInnerTexts(), ['Start Daemon', 'Retry', 'Back to rollouts']);
    await page.click('.error-state vscode-button[data-action="retry"]'); // still down: the error again
    await page.waitForSelector('.error-state');
    up = true;
    await page.click('.error-state vscode-button[data-action="retry"]');
    await page.waitForSelector('.span-row[data-kind="llm"]');
    assert.equal(await page.locator('.error-state').count(), 0);

    // Down again while a reload happens (the page is torn down and restored: the same state comes back)...
    up = false;
    await page.reload();
    await page.waitForSelector('.error-state');
    assert.match(await page.locator('.error-state').innerText(), new RegExp(`Could not load rollout ${rolloutId}`));
    // ...then the extension sees the daemon back and tells the panel: the rollout appears by itself.
    up = true;
    await view.notify(DaemonMessages.state.method, { up: true });
    await page.waitForSelector('.span-row[data-kind="llm"]', { timeout: 10_000 });
    assert.deepEqual(view.problems, []);
  });

  it('restored at startup: the daemon comes up while the first requests are still out; the view loads anyway', async () => {
    // What a window reload does: the restored panel asks before the extension has attached its daemon; the
    // answer (an error) is on its way when the news that the daemon is up arrives.
    up = false;
    let slowDown = true;
    const slowSource: () => ClientSource = () => async () => {
      const upWhenAsked = up;
      if (slowDown) await new Promise((r) => setTimeout(r, 1500));
      return upWhenAsked ? daemon.client : undefined;
    };
    const view = await openWebview('trajectory', lazyHandlers(slowSource, trajectoryHandlers, TrajectoryProtocol));
    sessions.push(view);
    await view.page.waitForSelector('.view-header'); // the list is asking
    up = true;
    slowDown = false;
    await view.notify(DaemonMessages.state.method, { up: true });
    await view.page.waitForSelector('.rollout-row', { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 2000)); // the first, failed answer has come back by now: it must not win
    assert.equal(await view.page.locator('.error-state').count(), 0);
    assert.equal(await view.page.locator('.rollout-row').count(), 13);
  });

  it('a panel restored with a state of another shape (or none) renders the rollouts list, never a blank page', async () => {
    up = true;
    const view = await open('trajectory');
    const page = view.page;
    await page.waitForSelector('.rollout-row');
    for (const saved of [{ view: 'rollouts' }, { view: { kind: 'rollout' } }, 'garbage', { filter: null }]) {
      await page.evaluate((s) => sessionStorage.setItem('vscode-state', JSON.stringify(s)), saved);
      await page.reload();
      await page.waitForSelector('.rollout-row', { timeout: 10_000 });
      assert.equal(await page.locator('.rollout-row').count(), 13, `restored from ${JSON.stringify(saved)}`);
    }
    // The CodeLens's "Trajectories" opens the list filtered on its agent: the filter shows that agent and clears.
    await view.notify(TrajectoryProtocol.show.method, { view: { kind: 'rollouts' }, filter: { agent: 'calc/agent.ts#calcAgent' } });
    await page.waitForFunction(
      () => (document.querySelector('vscode-single-select[data-filter="agent"]') as unknown as { value?: string } | null)?.value === 'calc/agent.ts#calcAgent',
    );
    await page.waitForFunction(() => document.querySelectorAll('.rollout-row').length === 13); // an older form of the same agent's id matches
    assert.deepEqual(view.problems, []);
  });

  it("dashboard: error with Start Daemon and Retry, reload when the daemon is back, and the CodeLens's headline number", async () => {
    // The seeded run validated at steps 0, 4, 8 (0.20 first); one more validation at step 12.
    await daemon.client.addMetrics([{ runId: RUN_ID, step: 12, name: 'val/reward', value: 0.95 }]);
    up = false;
    const view = await open('dashboard');
    const page = view.page;
    await page.waitForSelector('.error-state');
    assert.match(await page.locator('.error-state').innerText(), /Could not list training runs/);
    assert.deepEqual(await page.locator('.error-state vscode-button').allInnerTexts(), ['Start Daemon', 'Retry']);
    await page.click('.error-state vscode-button[data-action="start-daemon"]');
    await view.nextCommand(DaemonMessages.startDaemon.method);
    await page.waitForSelector('.headline:not(:empty)', { timeout: 10_000 });
    const expected = await daemon.client.agentHeadline(AGENT);
    assert.equal(expected.text, 'held-out reward 0.95 (from 0.20 at step 0)');
    assert.match(
      expected.tooltip,
      new RegExp(
        `^Held-out reward 0\\.95: mean final reward on the validation tasks, answered greedily \\(temperature 0\\), at step 12 of training run ${RUN_ID} \\(0\\.20 on the same tasks at step 0, before training\\)`,
      ),
    );
    assert.equal(await page.locator('.headline').innerText(), expected.text);
    assert.equal(await page.locator('.headline').getAttribute('title'), expected.tooltip);
    await view.screenshot('recovery-dashboard-headline');
    assert.deepEqual(view.problems, []);
  });

  /** Fails the first `n` requests for each of the bundle's files as an unresolvable host does; counts every request. */
  const failFirst = (n: number, counts: Map<string, number>) => async (page: Page) => {
    await page.route(/\/trajectory\.(js|css)$/, async (route) => {
      const file = new URL(route.request().url()).pathname;
      const seen = (counts.get(file) ?? 0) + 1;
      counts.set(file, seen);
      if (seen <= n) await route.abort('namenotresolved');
      else await route.continue();
    });
  };

  it("a page whose files fail to load at first (a restored panel racing VS Code web's service worker) asks again and renders", async () => {
    up = true;
    const counts = new Map<string, number>();
    const view = await openWebview('trajectory', lazyHandlers(source, trajectoryHandlers, TrajectoryProtocol), { beforeLoad: failFirst(3, counts) });
    sessions.push(view);
    await view.page.waitForSelector('.rollout-row', { timeout: 30_000 });
    // Each asked for again until it came (the 4th time); the icons' components read the stylesheet once more themselves.
    assert.equal(counts.get('/trajectory.js'), 4);
    assert.ok(counts.get('/trajectory.css')! >= 4, `stylesheet asked ${counts.get('/trajectory.css')} times`);
    // The styles were in place before the script drew (the views measure what they lay out).
    assert.notEqual(await view.page.locator('.rollouts-view').evaluate((e) => getComputedStyle(e).display), 'inline');
    assert.deepEqual(
      view.problems.filter((p) => !/ERR_NAME_NOT_RESOLVED/.test(p)),
      [],
    );
  });

  it('a page whose files never load says what to do instead of staying blank', { timeout: 60_000 }, async () => {
    const counts = new Map<string, number>();
    const view = await openWebview('trajectory', lazyHandlers(source, trajectoryHandlers, TrajectoryProtocol), { beforeLoad: failFirst(1000, counts) });
    sessions.push(view);
    await view.page.waitForFunction(() => /could not load its files/.test(document.getElementById('app')?.textContent ?? ''), undefined, { timeout: 30_000 });
    assert.equal(await view.page.locator('#app').innerText(), 'This view could not load its files: reload the window (Developer: Reload Window).');
    assert.deepEqual(
      Object.fromEntries(counts),
      { '/trajectory.css': LOAD_TRIES },
      'the stylesheet asked for as often as the loader tries; the script waits for it',
    );
  });
});
