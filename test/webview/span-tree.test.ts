/**
 * One rollout in the trajectory viewer (chromium, strict CSP, the panel's real host code over a real
 * daemon holding a calc agent's rollouts): tool steps read `name(input) → output` in the span tree, its
 * detail and the States view; the status (did it run) is kept apart from the reward (how well); the span
 * tree moves with the keyboard; the span-name column resizes; the waterfall's time axis has labelled ticks.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { seedCalcTraining, type SeededData } from './seed.js';

describe('span tree, tool steps and states of one rollout', () => {
  let daemon: Daemon;
  let data: SeededData;
  let view: WebviewSession;

  before(async () => {
    daemon = await startDaemon();
    data = await seedCalcTraining(daemon.client);
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client), { width: 1300 });
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  const open = async (rolloutId: string): Promise<void> => {
    await view.notify('trajectory/show', { view: { kind: 'rollout', rolloutId } });
    await view.page.waitForFunction(
      (id) => document.querySelector('.view-header h1')?.textContent?.includes(id) && document.querySelector('.span-row[data-kind="tool"]'),
      rolloutId,
    );
  };
  const focused = () => view.page.evaluate('document.activeElement?.dataset?.spanId ? document.activeElement.dataset.kind : null') as Promise<string | null>;
  const color = (selector: string) =>
    view.page
      .locator(selector)
      .first()
      .evaluate((e) => getComputedStyle(e).color);

  it('shows the tool step as name(input) → output in the span tree and opens it with its input and output', async () => {
    // Sample 2 of the 12*7+3 task: it asked the calculator for 12*7 (84) and answered 84 (reward 0).
    await open(data.groupRolloutIds['task-12x7'][1]);
    const row = view.page.locator('.span-row[data-kind="tool"]');
    assert.equal(await row.locator('.label').innerText(), 'calculator(12*7) → 84');
    await row.click();
    await view.page.waitForSelector('.detail-tool');
    assert.equal(await view.page.locator('.detail-tool .tool-input').innerText(), '12*7');
    assert.equal(await view.page.locator('.detail-tool .tool-output').innerText(), '84');
    await view.screenshot('tool-step-tree');
  });

  it('keeps the status (it ran to the end) apart from the reward (0: a wrong answer, not a green success)', async () => {
    const status = view.page.locator('.view-header .run-status');
    assert.equal(await status.innerText(), 'succeeded');
    assert.equal(await view.page.locator('.view-header .reward-pill').innerText(), 'reward 0');
    const [zeroStatus, zeroReward] = [await color('.view-header .run-status'), await color('.view-header .reward-pill')];
    await open(data.groupRolloutIds['task-12x7'][0]); // the right answer, reward 1
    assert.equal(await view.page.locator('.view-header .reward-pill').innerText(), 'reward 1');
    const [oneStatus, oneReward] = [await color('.view-header .run-status'), await color('.view-header .reward-pill')];
    assert.equal(zeroStatus, oneStatus, 'the status looks the same whatever the reward');
    assert.notEqual(zeroReward, oneReward, 'the reward carries the outcome');
    assert.notEqual(zeroStatus, oneReward, 'a run that ended normally is not painted in the success colour');
  });

  it('shows the tool step in the States view, and no column reads "reward reward"', async () => {
    await view.page.click('vscode-tab-header.tab-states');
    await view.page.waitForSelector('.states-table');
    const heads = await view.page.locator('.states-table thead .step-label').allInnerTexts();
    assert.deepEqual(heads, ['calc call #1', 'calculator(12*7+3) → 87', 'calc call #2', 'final reward exact_match']);
    await view.screenshot('tool-step-states');
    await view.page.click('vscode-tab-header.tab-timeline');
  });

  it('moves through the span tree with the keyboard: up/down move, left/right fold and unfold, Enter opens', async () => {
    const page = view.page;
    await page.locator('.span-row[data-kind="agent"]').click();
    assert.equal(await focused(), 'agent');
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(), 'llm');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.detail-llm');
    assert.equal(await page.locator('.span-row.selected').getAttribute('data-kind'), 'llm');
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(), 'tool');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.detail-tool');
    await page.keyboard.press('ArrowLeft'); // a leaf: to its parent
    assert.equal(await focused(), 'agent');
    await page.keyboard.press('ArrowLeft'); // the root: folds
    assert.equal(await page.locator('.span-row[data-span-id]').count(), 1);
    assert.equal(await page.locator('.span-row[data-kind="agent"]').getAttribute('aria-expanded'), 'false');
    await page.keyboard.press('ArrowRight'); // unfolds
    assert.equal(await page.locator('.span-row[data-span-id]').count(), 5);
    await page.keyboard.press('ArrowRight'); // into the first child
    assert.equal(await focused(), 'llm');
    await page.keyboard.press('End');
    assert.equal(await focused(), 'reward');
    await page.keyboard.press('ArrowUp');
    assert.equal(await focused(), 'llm');
    await page.keyboard.press('Home');
    assert.equal(await focused(), 'agent');
  });

  it('resizes the span-name column by dragging its handle or with the arrow keys', async () => {
    const page = view.page;
    const nameWidth = () =>
      page
        .locator('.span-row[data-kind="llm"] .span-name')
        .first()
        .evaluate((e) => e.getBoundingClientRect().width);
    const before = await nameWidth();
    const handle = (await page.locator('.col-resizer').boundingBox())!;
    await page.mouse.move(handle.x + handle.width / 2, handle.y + handle.height / 2);
    await page.mouse.down();
    await page.mouse.move(handle.x + handle.width / 2 - 120, handle.y + handle.height / 2, { steps: 4 });
    await page.mouse.up();
    const dragged = await nameWidth();
    assert.ok(Math.abs(dragged - (before - 120)) <= 6, `dragged 120 px left: ${before} -> ${dragged}`);
    await page.locator('.col-resizer').focus();
    await page.keyboard.press('ArrowRight');
    assert.ok(Math.abs((await nameWidth()) - (dragged + 16)) <= 2, 'ArrowRight widens by 16 px');
    // The width holds when the view redraws (another span selected).
    await page.locator('.span-row[data-kind="reward"]').click();
    assert.ok(Math.abs((await nameWidth()) - (dragged + 16)) <= 2);
  });

  it("labels the waterfall's time axis with evenly spaced ticks that fit its width, also once the column is narrowed", async () => {
    const read = () =>
      view.page.locator('.waterfall.axis .tick').evaluateAll((els) =>
        els.map((e) => ({
          ms: Number((e as HTMLElement).dataset.ms),
          label: e.textContent,
          left: e.getBoundingClientRect().left,
          labelBox: e.querySelector('.tick-label')!.getBoundingClientRect(),
        })),
      );
    const check = (ticks: Awaited<ReturnType<typeof read>>, min: number) => {
      assert.ok(ticks.length >= min, `ticks: ${JSON.stringify(ticks.map((t) => t.label))}`);
      assert.equal(ticks[0].label, '0');
      const steps = ticks.slice(1).map((t, i) => t.ms - ticks[i].ms);
      assert.ok(
        steps.every((s) => Math.abs(s - steps[0]) < 1e-6) && [1, 2, 5].includes(Math.round(steps[0] / 10 ** Math.floor(Math.log10(steps[0])))),
        `a 1/2/5 step: ${steps}`,
      );
      assert.ok(ticks.every((t, i) => i === 0 || t.left > ticks[i - 1].left));
      assert.ok(
        ticks.every((t, i) => i === 0 || t.labelBox.left >= ticks[i - 1].labelBox.right),
        `labels do not overlap: ${JSON.stringify(ticks.map((t) => [t.label, Math.round(t.labelBox.left), Math.round(t.labelBox.right)]))}`,
      );
      assert.ok(ticks.at(-1)!.ms <= 1450, "within the rollout's 1.45 s");
    };
    const wide = await read();
    check(wide, 3);
    assert.match(wide.map((t) => t.label).join(' '), /\d+ ms .*\d\.\d+ s/);
    await view.screenshot('span-tree-axis');
    // Widen the name column until the waterfall is narrow: fewer ticks, still apart.
    await view.page.locator('.col-resizer').focus();
    for (let i = 0; i < 40; i++) await view.page.keyboard.press('ArrowRight');
    await view.page.waitForFunction((n) => document.querySelectorAll('.waterfall.axis .tick').length < n, wide.length);
    const narrow = await read();
    check(narrow, 2);
    await view.screenshot('span-tree-axis-narrow');
  });

  it('ran under the strict CSP without a violation or an error', () => {
    assert.deepEqual([...view.problems], []);
  });
});
