/**
 * The rollouts list at store scale, built and loaded in chromium under the panel's strict CSP and answered
 * by the panel's real host code from a real daemon holding 10,000 rollouts: the exact count, a search, a
 * reward filter, sorting by a column header, scrolling to the very end of the virtual list, removing a
 * filter chip ("N hidden by filters" follows), and the readable input column. Every expected number is
 * asked of the store through the HTTP API, never hard-coded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import type { RolloutSearchRequest } from '../../protocol/api.js';
import type { SpanInput } from '../../protocol/store.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';

const N = 10_000;
const FRUITS = ['apples', 'pears', 'plums', 'figs', 'limes', 'dates', 'kiwis'];

/** 10,000 calc tasks: all claimed, each with a final reward (i % 10) / 10; those with i % 25 = 5 finished, i % 100 = 5 failed. */
async function seed(daemon: Daemon): Promise<void> {
  const c = daemon.client;
  await c.enqueueRollouts(
    Array.from({ length: N }, (_, i) => ({
      input: { question: `Q${i}: Ann has ${i} ${FRUITS[i % FRUITS.length]} and gives away ${i % 5}. How many are left?`, answer: String(i - (i % 5)) },
      agent: 'samples/calc/agent.ts#calcAgent',
      metadata: { runId: 'run-big', step: Math.floor(i / 100), taskId: `t${i}` },
    })),
  );
  const claims = [];
  while (claims.length < N) claims.push(...(await c.dequeueRollouts({ workerId: 'w', limit: 1000 })));
  const index = (input: unknown) => Number(/^Q(\d+):/.exec((input as { question: string }).question)![1]);
  for (let i = 0; i < claims.length; i += 2500) {
    await c.addSpans(
      claims.slice(i, i + 2500).map(({ rollout, attempt }): SpanInput => ({
        rolloutId: rollout.id,
        attemptId: attempt.id,
        name: 'agentlightning.reward',
        startTime: Date.now(),
        attributes: { 'agl.reward.value': (index(rollout.input) % 10) / 10, 'agl.reward.final': true },
      })),
    );
  }
  const toFinish = claims.filter(({ rollout }) => index(rollout.input) % 25 === 5);
  for (let i = 0; i < toFinish.length; i += 16) {
    await Promise.all(
      toFinish
        .slice(i, i + 16)
        .map(({ rollout, attempt }) =>
          c.finishAttempt(
            attempt.id,
            index(rollout.input) % 100 === 5 ? { status: 'failed', error: { message: 'ZeroDivisionError' } } : { status: 'succeeded' },
          ),
        ),
    );
  }
}

describe('rollouts list at store scale (10,000 rollouts)', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  before(async () => {
    daemon = await startDaemon();
    await seed(daemon);
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client));
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  const countText = () => view.page.locator('.view-header .count').innerText();
  const waitCount = (n: number) =>
    view.page.waitForFunction((want) => document.querySelector('.view-header .count')?.textContent === want, `${n.toLocaleString('en-US')} rollouts`, {
      timeout: 15_000,
    });
  const total = async (q: RolloutSearchRequest) => (await daemon.client.queryRollouts({ ...q, limit: 1, withTotal: true })).total!;
  const firstRowId = () => view.page.locator('.rollout-row').first().getAttribute('data-rollout-id');

  it('shows the exact count and a readable input column', async () => {
    await waitCount(N);
    assert.equal(await countText(), '10,000 rollouts');
    const newest = (await daemon.client.queryRollouts({ limit: 1 })).items[0]!;
    await view.page.waitForSelector(`.rollout-row[data-rollout-id="${newest.id}"]`);
    const input = view.page.locator(`.rollout-row[data-rollout-id="${newest.id}"] .col-input`);
    const question = (newest.input as { question: string }).question;
    assert.equal(await input.getAttribute('title'), question, 'the full question in the tooltip');
    const shown = await input.innerText();
    assert.ok(question.startsWith(shown.replace(/…$/, '')), `the cell shows the question's start: ${shown}`);
    assert.doesNotMatch(shown, /[{"]/, 'no raw JSON');
    // The agent by its export first: "agent.t…" told calc and apo (both samples/*/agent.ts) apart for no one.
    assert.equal(await view.page.locator(`.rollout-row[data-rollout-id="${newest.id}"] .col-agent`).innerText(), 'calcAgent · agent.ts');
    assert.ok((await view.page.locator('.rollout-row').count()) < 100, 'only the rows in view are drawn');
  });

  it('searches the task text, filters by reward, sorts by a header and scrolls to the end of the list', async () => {
    const page = view.page;
    await page.locator('vscode-textfield[data-filter="search"] input').fill('apples');
    const apples = await total({ search: 'apples' });
    assert.ok(apples > 1000 && apples < N, `apples: ${apples}`);
    await waitCount(apples);
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-filter')), 'search', 'the search box keeps the focus');
    assert.match(await page.locator('.filter-chip[data-chip="search"]').innerText(), /Search: "apples"/);
    assert.equal(await page.locator('.hidden-count').innerText(), `${(N - apples).toLocaleString('en-US')} hidden by filters`);

    await page.locator('vscode-textfield[data-filter="rewardMin"] input').fill('0.5');
    await page.locator('vscode-textfield[data-filter="rewardMin"] input').press('Enter');
    const filtered = await total({ search: 'apples', rewardMin: 0.5 });
    await waitCount(filtered);
    assert.match(await page.locator('.filter-chip[data-chip="reward"]').innerText(), /Reward ≥ 0.5/);

    await page.click('.sort-header[data-sort="reward"]');
    await page.waitForSelector('.sort-header[data-sort="reward"][aria-sort="descending"]');
    const best = (await daemon.client.queryRollouts({ search: 'apples', rewardMin: 0.5, sort: 'reward', limit: 1 })).items[0]!.id;
    await page.waitForFunction((id) => document.querySelector('.rollout-row')?.getAttribute('data-rollout-id') === id, best);
    assert.equal(await page.locator('.rollout-row').first().locator('.col-reward').innerText(), '0.900');
    await page.click('.sort-header[data-sort="reward"]');
    await page.waitForSelector('.sort-header[data-sort="reward"][aria-sort="ascending"] .sort-indicator');
    await page.waitForFunction(() => document.querySelector('.rollout-row .col-reward')?.textContent === '0.500');

    // To the end: the last row is the one the store puts last for this filter and sort.
    const last = (await daemon.client.queryRollouts({ search: 'apples', rewardMin: 0.5, sort: 'reward', order: 'asc', offset: filtered - 1, limit: 1 }))
      .items[0]!.id;
    await page.locator('.vlist').evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    await page.waitForSelector(`.rollout-row[data-rollout-id="${last}"]`, { timeout: 15_000 });
    assert.ok((await page.locator('.rollout-row').count()) < 100);
    await view.screenshot('rollouts-list-filtered');
  });

  it('removes a filter with its chip; the count and "hidden by filters" follow', async () => {
    const page = view.page;
    await page.click('.filter-chip[data-chip="search"] .chip-remove');
    const rewardOnly = await total({ rewardMin: 0.5 });
    await waitCount(rewardOnly);
    assert.equal(await page.locator('.filter-chip[data-chip="search"]').count(), 0);
    assert.equal(await page.locator('.filter-chip[data-chip="reward"]').count(), 1);
    assert.equal(await page.locator('.hidden-count').innerText(), `${(N - rewardOnly).toLocaleString('en-US')} hidden by filters`);
    assert.equal(await page.locator('vscode-textfield[data-filter="search"]').evaluate((el) => (el as unknown as { value: string }).value), '');
    // Errors: a filter through its drop-down, sorted by the header still chosen.
    await page.click('vscode-single-select[data-filter="hasError"]');
    await page.locator('vscode-single-select[data-filter="hasError"]').getByRole('option', { name: 'With errors', exact: true }).click();
    const errored = await total({ rewardMin: 0.5, hasError: true });
    assert.equal(errored, 100);
    await waitCount(errored);
    await page.click('.clear-filters');
    await waitCount(N);
    assert.equal(await page.locator('.hidden-count').count(), 0);
    assert.ok(await firstRowId());
  });

  it('ran under the strict CSP without a violation or an error', () => {
    assert.deepEqual([...view.problems], []);
  });
});
