/**
 * The trajectory viewer as it opens beside the editor (490 px wide) and used by keyboard alone, in chromium
 * under the panel's strict CSP, answered by the panel's real host code from a real daemon (the calc training
 * step of seed.ts and 150 queued rollouts, so the list scrolls and its rows are recycled): the question gets
 * at least half the row and the other columns a second muted line, the filters fold into one row; Tab
 * walks every control in order (search, Filters, the sort headers, the rows) and the focused row is outlined, the
 * arrows, End, Home and Page keys move the focus through the rows (kept while rows are redrawn), Enter opens one,
 * Backspace and Alt+Left come back to the list with its filter, scroll and row, ArrowDown after a search just typed
 * lands on what it finds (Tab applies it and goes on), and Back from a rollout opened from a group card returns to
 * that group where it was scrolled. Every
 * expected row is asked of the store, never hard-coded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { AGENT, GROUP_STEP, RUN_ID, seedCalcTraining, type SeededData } from './seed.js';

const WIDTH = 490;
const QUEUED = 150;

describe('trajectory viewer at half width and by keyboard', () => {
  let daemon: Daemon;
  let data: SeededData;
  let view: WebviewSession;

  before(async () => {
    daemon = await startDaemon();
    data = await seedCalcTraining(daemon.client);
    await daemon.client.enqueueRollouts(
      Array.from({ length: QUEUED }, (_, i) => ({
        input: { question: `Queued task ${i}: how many apples are left when Ann gives ${i % 7} of her ${i + 10} apples away?` },
        agent: AGENT,
        mode: 'train' as const,
      })),
    );
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client), { width: WIDTH, height: 760 });
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  /** The focused element, as the keyboard sees it. */
  const focused = () =>
    view.page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      return { id: el?.dataset.rolloutId ?? null, index: el?.dataset.index === undefined ? null : Number(el.dataset.index), cls: el?.className ?? '' };
    });
  /** The focused control, named by what it is: `filter search`, `filter toggle`, `sort reward`, `row <id>`. */
  const tabStop = () =>
    view.page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (el?.dataset.rolloutId) return `row ${el.dataset.rolloutId}`;
      if (el?.dataset.filter) return `filter ${el.dataset.filter}`;
      if (el?.dataset.sort) return `sort ${el.dataset.sort}`;
      return `${el?.tagName.toLowerCase()}.${el?.className.split(' ')[0]}`;
    });
  const waitFocus = (id: string) =>
    view.page.waitForFunction((want) => (document.activeElement as HTMLElement | null)?.dataset.rolloutId === want, id, { timeout: 10_000 });
  const waitCount = (n: number) =>
    view.page.waitForFunction((want) => document.querySelector('.view-header .count')?.textContent === want, `${n} rollouts`, { timeout: 10_000 });

  it('gives the question at least half the row, the other columns a muted second line, and the filters one row', async () => {
    const page = view.page;
    await page.waitForSelector('.rollout-row');
    const layout = (await page.evaluate(`(() => {
      const rect = (e) => e.getBoundingClientRect();
      const shown = (e) => getComputedStyle(e).display !== 'none' && rect(e).width > 0;
      const row = document.querySelector('.rollout-row');
      const cells = [...row.querySelectorAll('.cell')].filter(shown);
      const area = document.querySelector('.filter-area');
      const controls = [...area.querySelectorAll('.filter-search, .filters-toggle, .filters .filter')].filter(shown);
      return {
        grid: rect(document.querySelector('.rollouts-grid')).width,
        input: rect(row.querySelector('.col-input')).width,
        firstCell: [...cells].sort((a, b) => rect(a).left - rect(b).left)[0].className,
        columns: cells.filter((c) => Math.abs(rect(c).top - rect(row).top) < rect(row).height / 2 - 4).sort((a, b) => rect(a).left - rect(b).left).map((c) => c.className),
        hidden: ['mode', 'agent', 'created', 'res'].map((k) => shown(row.querySelector('.col-' + k))),
        meta: shown(row.querySelector('.col-meta')) ? row.querySelector('.col-meta').textContent : null,
        metaBelow: rect(row.querySelector('.col-meta')).top >= rect(row.querySelector('.col-input')).bottom - 1,
        metaColor: getComputedStyle(row.querySelector('.col-meta')).color,
        textColor: getComputedStyle(row.querySelector('.col-input')).color,
        metaTitle: row.querySelector('.col-meta').getAttribute('title'),
        controls: controls.length,
        oneRow: controls.every((c) => rect(c).top < rect(controls[0]).bottom && rect(c).bottom > rect(controls[0]).top),
        areaHeight: rect(area).height,
        chipsShown: shown(document.querySelector('.chips')),
        firstRowTop: rect(row).top,
        scrollWidth: document.documentElement.scrollWidth,
      };
    })()`)) as {
      grid: number;
      input: number;
      firstCell: string;
      columns: string[];
      hidden: boolean[];
      meta: string | null;
      metaBelow: boolean;
      metaColor: string;
      textColor: string;
      metaTitle: string;
      controls: number;
      oneRow: boolean;
      areaHeight: number;
      chipsShown: boolean;
      firstRowTop: number;
      scrollWidth: number;
    };
    const all = JSON.stringify(layout);
    assert.ok(layout.input >= layout.grid / 2, `the question is at least half the list: ${layout.input} of ${layout.grid}`);
    assert.match(layout.firstCell, /col-input/, 'the question comes first');
    assert.deepEqual(
      layout.columns.map((c) => /col-(\w+)/.exec(c)![1]),
      ['input', 'status', 'reward'],
      `the first line: question, status, reward (${all})`,
    );
    assert.deepEqual(layout.hidden, [false, false, false, false], 'mode, agent, created and resources are no columns');
    const newest = (await daemon.client.queryRollouts({ limit: 1 })).items[0]!;
    assert.ok(layout.meta && layout.metaBelow, `a second line below the question: ${all}`);
    for (const part of [newest.mode, 'calcAgent · agent.ts', `${newest.attemptCount} attempt`])
      assert.ok(layout.meta.includes(part), `the second line names ${part}: ${layout.meta}`);
    assert.notEqual(layout.metaColor, layout.textColor, 'the second line is muted');
    assert.match(layout.metaTitle, new RegExp(`rollout ${newest.id}[\\s\\S]*agent ${AGENT.replace(/[.#/]/g, '\\$&')}[\\s\\S]*created`));
    assert.ok(layout.controls === 2 && layout.oneRow, `the search and the Filters button only, side by side: ${all}`);
    assert.ok(layout.areaHeight < 40, `the filters take one row: ${layout.areaHeight} px`);
    assert.equal(layout.chipsShown, false);
    assert.ok(layout.firstRowTop < 180, `the rows start near the top: ${layout.firstRowTop} px`);
    assert.ok(layout.scrollWidth <= WIDTH, `no horizontal scroll: ${layout.scrollWidth}`);
    await view.screenshot('narrow-list-490');

    // The Filters button unfolds the filters, and folds them again.
    assert.equal((await page.locator('.filters-toggle').innerText()).trim(), 'Filters');
    await page.click('.filters-toggle');
    await page.locator('vscode-single-select[data-filter="mode"]').waitFor({ state: 'visible' });
    assert.equal(await page.locator('.filters-toggle').getAttribute('aria-expanded'), 'true');
    await page.click('.filters-toggle');
    await page.locator('vscode-single-select[data-filter="mode"]').waitFor({ state: 'hidden' });
  });

  it('reaches the rows by Tab, moves with the arrows, opens with Enter and comes back with Backspace, the filter kept', async () => {
    const page = view.page;
    // A filter chosen in the unfolded filters: the button counts it once folded.
    await page.click('.filters-toggle');
    await page.click('vscode-single-select[data-filter="mode"]');
    await page.locator('vscode-single-select[data-filter="mode"]').getByRole('option', { name: 'train', exact: true }).click();
    const train = (await daemon.client.queryRollouts({ mode: 'train', limit: 4, withTotal: true }))!;
    assert.ok(train.total! > 100 && train.total! < QUEUED + data.rolloutIds.length + 1, `train rollouts: ${train.total}`);
    await waitCount(train.total!);
    await view.screenshot('narrow-filters-open');
    await page.click('.filters-toggle');
    assert.equal((await page.locator('.filters-toggle').innerText()).trim(), 'Filters (1)');

    // A fresh page (the panel restored): nothing focused, the filter kept in the panel state.
    await page.reload();
    await waitCount(train.total!);
    await page.waitForSelector(`.rollout-row[data-rollout-id="${train.items[0]!.id}"]`);
    // Tab walks every control in order: Add to dataset, Refresh, the search box, "Filters (1)", the sort headers, then the first row.
    const walked: string[] = [];
    while (walked.length < 13 && !(await focused()).id) {
      await page.keyboard.press('Tab');
      walked.push(await tabStop());
    }
    assert.equal((await focused()).id, train.items[0]!.id, `Tab reaches the first row: ${walked.join(' > ')}`);
    const sorts = walked.filter((w) => w.startsWith('sort '));
    assert.deepEqual(
      walked.slice(0, 4),
      ['vscode-button.add-to-dataset', 'vscode-toolbar-button.refresh', 'filter search', 'filter toggle'],
      `Add to dataset, Refresh, the search box, then Filters (1): ${walked.join(' > ')}`,
    );
    assert.deepEqual(
      sorts,
      await page
        .locator('.grid-header .sort-header')
        .evaluateAll((els) => els.filter((e) => getComputedStyle(e).display !== 'none').map((e) => `sort ${(e as HTMLElement).dataset.sort}`)),
      'every sort header shown, in order',
    );
    assert.ok(sorts.length >= 2, `the sort headers are Tab stops: ${walked.join(' > ')}`);
    assert.equal(walked.length, 4 + sorts.length + 1, `nothing else in between: ${walked.join(' > ')}`);
    const outline = await page.evaluate(() => {
      const s = getComputedStyle(document.activeElement!);
      return { style: s.outlineStyle, color: s.outlineColor, width: s.outlineWidth };
    });
    assert.deepEqual(outline, { style: 'solid', color: 'rgb(0, 120, 212)', width: '1px' }, "the focused row is outlined in the theme's focus colour");
    await view.screenshot('narrow-row-focused-dark');

    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowDown');
    assert.equal((await focused()).id, train.items[3]!.id, 'ArrowDown x3: the 4th row has the focus');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (id) => document.body.dataset.view === 'rollout' && document.querySelector('.view-header h1')?.textContent?.includes(id),
      train.items[3]!.id,
    );
    assert.equal(await page.locator('.view-header .back').getAttribute('label'), 'Back to rollouts');

    await page.keyboard.press('Backspace');
    await waitFocus(train.items[3]!.id);
    assert.equal(await page.evaluate(() => document.body.dataset.view), 'rollouts');
    assert.equal(await page.locator('.view-header .count').innerText(), `${train.total} rollouts`, 'the filter still applies');
    assert.equal((await page.locator('.filters-toggle').innerText()).trim(), 'Filters (1)');
    assert.equal(await page.locator(`.rollout-row[data-rollout-id="${data.failedRolloutId}"]`).count(), 0, 'the val rollout stays filtered out');
  });

  it('keeps the focus on its row while the virtual list redraws, and Back restores the scroll and the row', async () => {
    const page = view.page;
    const total = (await daemon.client.queryRollouts({ mode: 'train', limit: 1, withTotal: true })).total!;
    const at = async (index: number) => (await daemon.client.queryRollouts({ mode: 'train', offset: index, limit: 1 })).items[0]!.id;

    await page.keyboard.press('End');
    await waitFocus(await at(total - 1));
    const drawn = await page.locator('.rollout-row').count();
    assert.ok(drawn < total / 2, `rows were recycled, not all drawn: ${drawn} of ${total}`);
    assert.ok(
      await page
        .locator('.rollout-row')
        .first()
        .evaluate((r) => Number((r as HTMLElement).dataset.index) > 0),
      'the first rows are gone',
    );

    // Up across many redraws of the window: the focus follows row by row.
    for (let i = 0; i < 30; i++) await page.keyboard.press('ArrowUp');
    const target = await at(total - 31);
    await waitFocus(target);
    await page.keyboard.press('PageUp');
    const paged = await focused();
    assert.ok(paged.id && paged.index! < total - 31, `PageUp moves up a page: ${JSON.stringify(paged)}`);
    await page.keyboard.press('PageDown');
    await waitFocus(target);

    // A live update redraws the rows in view: the focused row keeps the focus.
    await view.notify('trajectory/changed', { rolloutIds: [] });
    await page.waitForTimeout(400);
    assert.equal((await focused()).id, target, 'focus kept across a refresh');

    // Scrolled away by the wheel and back: the row is drawn again and keeps the focus.
    const scrollTop = await page.locator('.vlist').evaluate((el) => el.scrollTop);
    assert.ok(scrollTop > 0);
    await page.locator('.vlist').evaluate((el) => {
      el.scrollTop = 0;
    });
    await page.waitForFunction(() => document.activeElement?.classList.contains('vlist'), undefined, { timeout: 5000 });
    await page.keyboard.press('ArrowDown');
    await waitFocus(await at(total - 30));

    // Open it, Alt+Left: the list comes back scrolled where it was, its row focused.
    const before = await page.locator('.vlist').evaluate((el) => el.scrollTop);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.body.dataset.view === 'rollout' && !!document.querySelector('.span-tree'));
    await page.keyboard.press('Alt+ArrowLeft');
    await waitFocus(await at(total - 30));
    assert.equal(await page.locator('.vlist').evaluate((el) => el.scrollTop), before, 'the same scroll');

    await page.keyboard.press('Home');
    await waitFocus(await at(0));
    assert.equal(await page.locator('.vlist').evaluate((el) => el.scrollTop), 0);
    await view.screenshot('narrow-list-keyboard');
  });

  it('outlines the search field in the focus colour while it has the focus, as every other control', async () => {
    const page = view.page;
    const field = page.locator('vscode-textfield[data-filter="search"]');
    const outline = () =>
      field.evaluate((el) => {
        const s = getComputedStyle(el);
        return s.outlineStyle === 'none' ? 'none' : `${s.outlineStyle} ${s.outlineWidth} ${s.outlineColor}`;
      });
    assert.equal(await outline(), 'none', 'no outline without the focus');
    await field.locator('input').focus();
    const focusBorder = await page.evaluate(() => {
      const probe = document.createElement('span');
      probe.style.color = 'var(--vscode-focusBorder)';
      document.body.append(probe);
      const color = getComputedStyle(probe).color;
      probe.remove();
      return color;
    });
    await page.waitForFunction(() => document.querySelector('vscode-textfield[data-filter="search"]')?.hasAttribute('focused'));
    assert.equal(await outline(), `solid 1px ${focusBorder}`);
    await view.screenshot('narrow-search-focus');
    await field.locator('input').blur();
  });

  it('ArrowDown right after typing a search applies it and lands on the first row it finds; Tab applies it and goes on to Filters', async () => {
    const page = view.page;
    await page.locator('vscode-textfield[data-filter="search"] input').fill('square');
    await page.keyboard.press('ArrowDown'); // before the search's debounce has run
    const found = await daemon.client.queryRollouts({ mode: 'train', search: 'square', limit: 10, withTotal: true });
    assert.equal(found.total, 4, 'the four samples of the task-sq group');
    await waitFocus(found.items[0]!.id);
    assert.equal(await page.locator('.view-header .count').innerText(), '4 rollouts');
    await page.keyboard.press('ArrowDown');
    await waitFocus(found.items[1]!.id);

    await page.locator('vscode-textfield[data-filter="search"] input').fill('apples');
    await page.keyboard.press('Tab');
    const apples = await daemon.client.queryRollouts({ mode: 'train', search: 'apples', limit: 1, withTotal: true });
    await waitCount(apples.total!);
    await page.waitForFunction(() => (document.activeElement as HTMLElement | null)?.dataset.filter === 'toggle', undefined, { timeout: 10_000 });
    assert.equal((await page.locator('.filters-toggle').innerText()).trim(), 'Filters (1)', 'the search applied, the focus on the next control');
  });

  it('Back from a rollout opened from a group card returns to that group, scrolled where it was', async () => {
    const page = view.page;
    await view.notify('trajectory/show', { view: { kind: 'group', runId: RUN_ID, step: GROUP_STEP } });
    const card = page.locator('.group[data-group-id="task-sq"] a.open-rollout').first();
    await card.waitFor();
    await card.scrollIntoViewIfNeeded();
    const scrollY = await page.evaluate(() => window.scrollY);
    assert.ok(scrollY > 100, `the group page is scrolled: ${scrollY}`);
    const rolloutId = await card.getAttribute('data-rollout-id');
    assert.ok(rolloutId && data.groupRolloutIds['task-sq'].includes(rolloutId));

    await card.click();
    await page.waitForFunction(
      (id) => document.body.dataset.view === 'rollout' && document.querySelector('.view-header h1')?.textContent?.includes(id),
      rolloutId,
    );
    assert.equal(await page.locator('.view-header .back').getAttribute('label'), 'Back to the GRPO group');
    await page.keyboard.press('Backspace');
    await page.waitForSelector('.group[data-group-id="task-sq"] .sample-card');
    assert.equal(await page.evaluate(() => document.body.dataset.view), 'group');
    assert.equal(await page.locator('.view-header .run-id').innerText(), RUN_ID);
    assert.match(await page.locator('.view-header h1').innerText(), new RegExp(`step ${GROUP_STEP}`));
    assert.equal(await page.evaluate(() => window.scrollY), scrollY, 'scrolled where it was');

    // The same by the button, from a rollout opened from a second card; then Back from the group to the list.
    await page.locator('.group[data-group-id="task-12x7"] a.open-rollout').first().click();
    await page.waitForFunction(() => document.body.dataset.view === 'rollout' && !!document.querySelector('.span-tree'));
    await page.click('.view-header .back');
    await page.waitForSelector('.group[data-group-id="task-12x7"] .sample-card');
    assert.equal(await page.locator('.view-header .back').getAttribute('label'), 'Back to rollouts');
    await page.keyboard.press('Alt+ArrowLeft');
    await page.waitForSelector('.rollout-row');
    assert.equal(await page.evaluate(() => document.body.dataset.view), 'rollouts');
  });

  it('ran under the strict CSP without a violation or an error', () => {
    assert.deepEqual([...view.problems], []);
  });
});
