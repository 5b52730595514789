/**
 * The trajectory viewer, built (dist/webview/trajectory.js) and loaded in Debian chromium under the
 * panel's real CSP, answered by the panel's real host-side code from a real daemon filled with a calc
 * agent's training step: the rollouts list and its filters, one rollout's span tree, waterfall, chat,
 * credit and advantage, jump-to-code, the STATES view, the GRPO group view, and state restored after the
 * webview is torn down. Screenshots land in test-results/webview/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import { liveTrajectory, openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { CODE_FILE, GROUP_STEP, seedCalcTraining, type SeededData } from './seed.js';

describe('trajectory viewer webview', () => {
  let daemon: Daemon;
  let data: SeededData;
  let view: WebviewSession;

  before(async () => {
    daemon = await startDaemon();
    data = await seedCalcTraining(daemon.client);
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client));
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  const text = (selector: string) => view.page.locator(selector).first().innerText();

  it('lists the rollouts with status, mode, resources version (named as such, never like a step) and reward, and filters them by status', async () => {
    const page = view.page;
    await page.waitForSelector('.rollout-row');
    assert.equal(await page.locator('.rollout-row').count(), 13);
    const failed = page.locator(`.rollout-row[data-rollout-id="${data.failedRolloutId}"]`);
    assert.match(await failed.innerText(), /failed[\s\S]*val[\s\S]*#1/);
    assert.match((await failed.locator('.col-res').getAttribute('title'))!, /^Resources #1: .*not a training step/);
    const header = page.locator('.grid-header .col-res');
    assert.equal(await header.innerText(), 'Resources');
    const fit = await header.evaluate((e) => [e.scrollWidth, e.clientWidth]);
    assert.ok(fit[0]! <= fit[1]!, `the Resources header is not cut: ${fit[0]} px in ${fit[1]}`);
    const winner = page.locator(`.rollout-row[data-rollout-id="${data.groupRolloutIds['task-12x7'][0]}"]`);
    assert.equal(await winner.locator('.reward').innerText(), '1');
    await view.screenshot('trajectory-rollouts');

    // The user picks "failed" in the Status drop-down.
    await page.click('vscode-single-select[data-filter="status"]');
    await page.locator('vscode-single-select[data-filter="status"]').getByRole('option', { name: 'failed', exact: true }).click();
    await page.waitForFunction(() => document.querySelectorAll('.rollout-row').length === 1);
    assert.equal(await page.locator('.rollout-row').getAttribute('data-rollout-id'), data.failedRolloutId);
    await page.click('vscode-single-select[data-filter="status"]');
    await page.locator('vscode-single-select[data-filter="status"]').getByRole('option', { name: 'All', exact: true }).click();
    await page.waitForFunction(() => document.querySelectorAll('.rollout-row').length === 13);
  });

  it('shows a rollout as a span tree with a waterfall, and an LLM call as chat with tokens, latency, reward, credit and advantage', async () => {
    const page = view.page;
    await page.click(`.rollout-row[data-rollout-id="${data.groupRolloutIds['task-12x7'][0]}"]`);
    await page.waitForSelector('.span-row[data-kind="llm"]');
    const kinds = await page.locator('.span-row[data-span-id]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.kind));
    assert.deepEqual(kinds, ['agent', 'llm', 'tool', 'llm', 'reward']);
    // Waterfall: the second call starts after the first one ends.
    const bars = await page.locator('.span-row[data-kind="llm"] .bar').evaluateAll((els) => els.map((e) => e.getBoundingClientRect()));
    assert.ok(bars[0].width > 10 && bars[1].left > bars[0].right, `bars ${JSON.stringify(bars)}`);

    await page.locator('.span-row[data-kind="llm"]').nth(1).click();
    await page.waitForSelector('.detail-llm');
    const roles = await page.locator('.detail-llm .chat-msg').evaluateAll((els) => els.map((e) => [...e.classList].find((c) => c.startsWith('role-'))));
    assert.deepEqual(roles, ['role-system', 'role-user', 'role-assistant', 'role-tool', 'role-assistant']);
    assert.match(await text('.detail-llm .chat-msg.role-tool'), /87/);
    assert.match(await text('.detail-llm .chat-msg.response'), /87/);
    const metrics = await page
      .locator('.detail-llm .metric')
      .evaluateAll((els) => Object.fromEntries(els.map((e) => [e.querySelector('.metric-label')!.textContent, e.querySelector('.metric-value')!.textContent])));
    assert.equal(metrics['Prompt tokens'], '86');
    assert.equal(metrics['Completion tokens'], '4');
    assert.equal(metrics['Latency'], '680 ms');
    assert.equal(metrics['Reward'], '1');
    assert.equal(metrics['Credit'], '1');
    assert.equal(metrics['Advantage'], '+1.000');
    assert.equal(metrics['Token ids'], '86 + 4');
    assert.equal(metrics['Mean logprob'], '-0.250');
    await view.screenshot('trajectory-rollout-call');
  });

  it('asks the extension to open the agent code at the line that made the call', async () => {
    await view.page.click('.detail-llm .code-link');
    const open = await view.nextCommand('trajectory/openCode');
    assert.deepEqual(open.params, { filepath: CODE_FILE, lineno: 38 });
  });

  it('shows the semantic variables after each step (STATES), filled or empty, and what each call read', async () => {
    const page = view.page;
    await page.click('vscode-tab-header.tab-states');
    await page.waitForSelector('.states-table');
    const labels = await page.locator('.states-table tbody .var-label').allInnerTexts();
    assert.deepEqual(labels, ['task input', 'calc output #1', 'tool result calculator', 'calc output #2', 'exact_match']);
    const stateOf = (variable: string) =>
      page.locator(`tr[data-variable="${variable}"] td`).evaluateAll((tds) => tds.map((td) => (td as HTMLElement).dataset.state));
    assert.deepEqual(await stateOf('task'), ['filled', 'filled', 'filled', 'filled']);
    assert.deepEqual(await stateOf('tool-1'), ['empty', 'written', 'filled', 'filled']);
    assert.deepEqual(await stateOf('llm-1'), ['empty', 'empty', 'written', 'filled']);
    const reads = await page.locator('tr[data-variable="task"] td').evaluateAll((tds) => tds.map((td) => (td as HTMLElement).dataset.read ?? ''));
    assert.deepEqual(reads, ['true', '', 'true', ''], 'both calls quote the task; the tool and the reward do not read');
    await view.screenshot('trajectory-states');
  });

  it('restores the view (rollout, tab) when the webview is torn down and loaded again', async () => {
    await view.page.reload();
    await view.page.waitForSelector('.states-table');
    assert.match(await text('.view-header h1'), new RegExp(data.groupRolloutIds['task-12x7'][0]));
    await view.page.click('vscode-tab-header.tab-timeline');
  });

  it('shows the GRPO group of a call: the n samples side by side with rewards and advantages', async () => {
    const page = view.page;
    await page.click('.open-group');
    await page.waitForSelector('.sample-card');
    // Same answers start merged into one card (group-view.test.ts); unmerged, every sample has its own.
    await page.click('vscode-checkbox.merge-toggle');
    await page.waitForFunction(() => document.querySelectorAll('.sample-card').length === 4);
    assert.equal(await page.locator('.group').count(), 1);
    assert.equal(await page.locator('.sample-card').count(), 4);
    const cards = await page.locator('.sample-card').evaluateAll((els) =>
      els.map((e) => ({
        id: (e as HTMLElement).dataset.rolloutId,
        reward: e.querySelector('.metric-value.reward')!.textContent,
        advantage: e.querySelector('.metric-value.advantage')!.textContent,
        answer: e.querySelector('.answer .answer-text')!.textContent,
      })),
    );
    assert.deepEqual(
      cards.map((c) => [c.reward, c.advantage]),
      [
        ['1', '+1.000'],
        ['1', '+1.000'],
        ['0', '-1.000'],
        ['0', '-1.000'],
      ],
    );
    assert.deepEqual(new Set(cards.map((c) => c.id)), new Set(data.groupRolloutIds['task-12x7']));
    assert.deepEqual(
      cards.map((c) => c.answer),
      ['87', '87', '84', '90'],
    );
    assert.equal(await page.locator('.sample-card .call-row').count(), 8);
    assert.match(await text('.sample-card .call-row .chip.credit'), /credit 1/);
    await view.screenshot('trajectory-group');
  });

  it("opens a training step's groups when the extension asks (dashboard click)", async () => {
    await view.notify('trajectory/show', { view: { kind: 'group', runId: data.runId, step: GROUP_STEP } });
    await view.page.waitForSelector('.group[data-group-id="task-sq"]');
    assert.deepEqual(await view.page.locator('.group').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.groupId)), [
      'task-12x7',
      'task-sq',
      'task-pow',
    ]);
    assert.equal(
      await view.page.locator('.group[data-group-id="task-pow"] .chip.warning').innerText(),
      'zero variance',
      'no sample right: GRPO learns nothing from it',
    );
    assert.equal(await view.page.locator('.group[data-group-id="task-sq"] .chip.warning').count(), 0);
    assert.match(await text('.view-header h1'), new RegExp(`step ${GROUP_STEP}`));
    await view.screenshot('trajectory-groups-step');
    await view.page.click('.open-dashboard');
    assert.deepEqual((await view.nextCommand('trajectory/openDashboard')).params, { runId: data.runId });
  });

  it('follows a running rollout live: new spans and its end appear without a reload', async () => {
    // As the panel does: the daemon's events say which rollouts changed, and the webview re-reads the one it shows.
    const live = liveTrajectory(daemon);
    live.attach(view);
    try {
      await followRunning();
    } finally {
      live.close();
    }
  });

  async function followRunning(): Promise<void> {
    const { rollout, attempt } = await daemon.client.startRollout({ input: { question: 'live?' }, agent: 'samples/calc/agent.ts#calcAgent' }, 'w-live');
    const context = 'A long retrieved document. '.repeat(80); // folded in the chat until asked for
    const llm = (spanId: string, start: number) => ({
      rolloutId: rollout.id,
      attemptId: attempt.id,
      spanId,
      name: 'gen_ai.chat',
      startTime: start,
      endTime: start + 5,
      attributes: {
        'gen_ai.input.messages': JSON.stringify([
          { role: 'system', content: context },
          { role: 'user', content: 'live?' },
        ]),
        'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: `answer ${spanId}` }]),
      },
    });
    await daemon.client.addSpans([llm('live1', Date.now())]);
    await view.notify('trajectory/show', { view: { kind: 'rollout', rolloutId: rollout.id } });
    await view.page.waitForFunction(() => document.querySelectorAll('.span-row[data-kind="llm"]').length === 1);
    assert.equal(await text('.view-header .pill'), 'running');
    const system = view.page.locator('.detail-llm .chat-msg.role-system');
    assert.ok((await system.locator('.chat-text').innerText()).length < context.length, 'a long message starts folded');
    await system.locator('.fold-toggle').click();
    assert.equal((await system.locator('.chat-text').innerText()).trim(), context.trim());
    await daemon.client.addSpans([llm('live2', Date.now() + 10)]);
    await daemon.client.finishAttempt(attempt.id, { status: 'succeeded' });
    await view.page.waitForFunction(() => document.querySelectorAll('.span-row[data-kind="llm"]').length === 2, undefined, { timeout: 10_000 });
    await view.page.waitForFunction(() => document.querySelector('.view-header .pill')?.textContent === 'succeeded', undefined, { timeout: 10_000 });
  }

  it('counts every rollout and scrolls through all of them, drawing only the rows in view', async () => {
    await daemon.client.enqueueRollouts(
      Array.from({ length: 60 }, (_, i) => ({ input: { question: `queued ${i}` }, agent: 'samples/calc/agent.ts#calcAgent' })),
    );
    await view.notify('trajectory/show', { view: { kind: 'rollouts' } });
    await view.page.waitForFunction(() => document.querySelector('.view-header .count')?.textContent === '74 rollouts', undefined, { timeout: 10_000 });
    assert.ok((await view.page.locator('.rollout-row').count()) < 74, 'rows out of view are not in the DOM');
    const oldest = (await daemon.client.queryRollouts({ order: 'asc', limit: 1 })).items[0]!.id;
    await view.page.locator('.vlist').evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    await view.page.waitForSelector(`.rollout-row[data-rollout-id="${oldest}"]`, { timeout: 10_000 });
    assert.equal(await text('.view-header .count'), '74 rollouts', '13 seeded + 1 live + 60 queued');
  });

  it('draws the filter controls of the list shown last when the page of the list shown before arrives first', async () => {
    // The lens opens the list on its agent while the webview's first list (no filter) is still loading: that first
    // page is answered only once the agent's list has asked for its own, and before it.
    const handlers = trajectoryHandlers(daemon.client);
    const list = handlers.get(TrajectoryProtocol.listRollouts.method)!;
    let secondAsked!: () => void, firstAnswered!: () => void;
    const asked = new Promise<void>((r) => {
        secondAsked = r;
      }),
      answered = new Promise<void>((r) => {
        firstAnswered = r;
      });
    let calls = 0;
    handlers.set(TrajectoryProtocol.listRollouts.method, async (params) => {
      const call = ++calls;
      if (call === 1) {
        await asked;
        try {
          return await list(params);
        } finally {
          setTimeout(firstAnswered, 50);
        }
      }
      if (call === 2) {
        secondAsked();
        await answered;
      }
      return list(params);
    });
    const fresh = await openWebview('trajectory', handlers, { width: 1000 });
    try {
      await fresh.page.waitForFunction(() => document.querySelector('.view-header .count') !== null);
      await fresh.notify(TrajectoryProtocol.show.method, { view: { kind: 'rollouts' }, filter: { agent: 'samples/calc/agent.ts#calcAgent' } });
      await fresh.page.waitForSelector('.filter-chip[data-chip="agent"]', { timeout: 10_000 });
      await fresh.page.waitForSelector('vscode-textfield[data-filter="search"]', { timeout: 10_000 });
      assert.ok(calls >= 2, `both lists asked for a page (${calls})`);
      assert.deepEqual([...fresh.problems], []);
    } finally {
      await fresh.close();
    }
  });

  it('ran under the strict CSP without a violation or an error, and that CSP does block inline script', async () => {
    assert.deepEqual([...view.problems], []);
    const csp = await view.page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    assert.match(csp ?? '', /script-src 'nonce-[\w-]+'(;|$)/);
    assert.doesNotMatch(csp ?? '', /unsafe-inline|unsafe-eval|\*/);
    await view.page.evaluate(
      `(() => { const s = document.createElement('script'); s.textContent = 'window.__inlineRan = true'; document.head.appendChild(s); })()`,
    );
    await view.page.waitForTimeout(100);
    assert.equal(await view.page.evaluate('window.__inlineRan === true'), false, 'an inline script without the nonce must not run');
    assert.ok(
      view.problems.some((p) => p.startsWith('CSP violation: script-src')),
      `violations seen: ${view.problems.join('; ')}`,
    );
  });
});
