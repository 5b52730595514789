/**
 * The optimization view, built (dist/webview/optimize.js) and loaded in Debian chromium under the panel's real CSP,
 * answered by the panel's real host-side code (extension/panels/data.ts) from a real daemon holding a GEPA run (as
 * `agl optimize` records one: optimize-seed.ts): the run's facts, the best val curve against rollouts used, the lineage
 * tree (statuses told by icon and word, not colour alone), the candidate x val-task grid with the Pareto front marked,
 * the selected candidate's diff against its parent with its reflection beside it; keyboard paths through the tree and
 * the grid; the links out (a cell's rollout, a candidate's rollouts, Apply) as the panel's commands; the view following
 * a running optimization live on the daemon's event stream (extension/panels/live-updates.ts OptimizationRefresh); and
 * how it looks at full and half width, dark and light (screenshots in test-results/webview/optimize-*.png). Then the
 * trajectory viewer opened on a candidate's rollouts (what "Rollouts" asks the panel for): only its, with a chip.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { optimizeHandlers, trajectoryHandlers } from '../../extension/panels/data.js';
import { candidateId } from '../../protocol/prompts.js';
import { OptimizeProtocol } from '../../protocol/webview-optimize.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import { liveOptimize, openWebview, startDaemon, type Daemon, type LiveUpdates, type WebviewSession } from './harness.js';
import { candidate, OPT_AGENT, scoredRollout, seedOptimization, VAL_TASKS } from './optimize-seed.js';

describe('optimization view webview', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  let live: LiveUpdates;
  let runId: string;

  before(async () => {
    daemon = await startDaemon();
    runId = await seedOptimization(daemon.client);
    live = liveOptimize(daemon);
    view = await openWebview('optimize', optimizeHandlers(daemon.client), { onCommand: (m, p, v) => live.onCommand(m, p, v) });
    live.attach(view);
  });
  after(async () => {
    live?.close();
    await view?.close();
    await daemon?.close();
  });

  const id = (ordinal: number) => candidateId(runId, ordinal);

  it('shows the run: what it spent, the curve, the lineage, the grid with the front, and the best candidate', async () => {
    const page = view.page;
    await page.waitForSelector('.candidate-card');
    const expected = await daemon.client.getOptimizationView(runId);
    const facts = await page.locator('.run-facts').innerText();
    assert.match(facts, new RegExp(`rollouts ${expected.rolloutsUsed} / 120`));
    assert.match(facts, /val 0\.333 → 0\.917/);
    assert.match(facts, /test 0\.250 → 0\.900/);
    assert.match(facts, /4 accepted[\s\S]*2 rejected|4 accepted[\s\S]*1 rejected/);
    assert.match(facts, /1 refused/);
    assert.match(facts, /4 optimizer calls · 4080 tokens/);
    assert.match(facts, /58 judge calls · 44100 tokens · cost 0\.0123/, 'what the judge cost, apart from the optimizer');
    // The curve: drawn, and its rises as buttons, one per point of the daemon's curve.
    const box = await page.locator('.curve-card canvas').first().boundingBox();
    assert.ok(box && box.width > 200 && box.height > 100, `curve drawn (${JSON.stringify(box)})`);
    assert.deepEqual(
      await page.locator('.rise').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.candidate)),
      expected.curve.map((p) => p.candidateId),
    );
    // The lineage: the seed on top, #1 under it, #2 #3 #4 under #1, the merge #5 under #4 naming its other parent.
    const rows = await page
      .locator('.lineage-row')
      .evaluateAll((els) =>
        els.map((e) => [e.getAttribute('aria-level'), e.querySelector('.cand-label')?.textContent, e.querySelector('.status')?.textContent?.trim()]),
      );
    assert.deepEqual(rows, [
      ['1', '#0', 'accepted'],
      ['2', '#1', 'accepted'],
      ['3', '#2', 'rejected'],
      ['3', '#3', 'refused'],
      ['3', '#4', 'accepted'],
      ['4', '#5', 'accepted'],
    ]);
    assert.match(await page.locator(`.lineage-row[data-candidate="${id(5)}"]`).innerText(), /merge[\s\S]*\+ #0/);
    // Statuses differ by icon and word, not colour alone.
    const icons = await page.locator('.lineage-row .status .codicon').evaluateAll((els) => els.map((e) => e.className.replace('codicon ', '')));
    assert.deepEqual(new Set(icons), new Set(['codicon-pass', 'codicon-close', 'codicon-circle-slash']));
    // The grid: a row per candidate scored on val, a column per val task, the front starred, the best per task bold.
    const gridRows = await page.locator('.score-grid tbody tr').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.candidate));
    assert.deepEqual(gridRows, [id(0), id(1), id(4), id(5)]);
    assert.deepEqual(await page.locator('.score-grid thead th.task').allInnerTexts(), VAL_TASKS);
    assert.deepEqual(expected.front, [id(4), id(5)]);
    const starred = await page.locator('.score-grid th.cand.on-front').evaluateAll((els) => els.map((e) => e.closest('tr')!.dataset.candidate));
    assert.deepEqual(starred, expected.front);
    assert.equal(
      await page
        .locator(`.score-grid tr[data-candidate="${id(5)}"] td.score`)
        .nth(3)
        .getAttribute('class'),
      'score task-best',
    );
    assert.match(
      (await page
        .locator(`.score-grid tr[data-candidate="${id(0)}"] td.score`)
        .first()
        .getAttribute('title'))!,
      /wrong date: expected the shipped date/,
    );
    // The best candidate is shown: its format prompt's diff against #1, the words it added marked, its reflection beside.
    const card = page.locator('.candidate-card');
    assert.equal(await card.getAttribute('data-candidate'), id(4));
    assert.match(await card.locator('.candidate-head').innerText(), /Candidate #4[\s\S]*accepted[\s\S]*best[\s\S]*front[\s\S]*val 0\.917[\s\S]*Apply/);
    assert.match(await card.locator('.provenance').innerText(), /reflection on format from #1 · minibatch 0\.667 → 1\.000 on 3 tasks/);
    const format = card.locator('.prompt-change[data-prompt="format"]');
    assert.match(await format.locator('h3').innerText(), /format · changed · the prompt this proposal edited/);
    assert.deepEqual(await format.locator('.diff-line .sign').allInnerTexts(), ['-', '+']);
    assert.deepEqual(await format.locator('ins').allInnerTexts(), [' Write dates as YYYY-MM-DD.']);
    assert.match(await card.locator('.prompt-change[data-prompt="system"] h3').innerText(), /unchanged/);
    assert.match(await card.locator('.reflection').innerText(), /Reflection[\s\S]*Dates were written out in words/);
    // Without the optimizer's fences: its new text is the diff's; its raw answer one click away.
    const prose = await card.locator('.reflection-text').innerText();
    assert.doesNotMatch(prose, /```/);
    assert.match(prose, /2024-03-09\.\s+\[the new text of format: the diff shows it\]$/);
    assert.equal(await card.locator('.raw-answer .raw-text').isVisible(), false, 'the raw answer folded');
    await card.locator('.raw-answer summary').click();
    assert.match(await card.locator('.raw-answer .raw-text').innerText(), /```\nWrite the answer plainly\. Write dates as YYYY-MM-DD\.\n```/);
    // The next step named: promote the best, by command or Apply, and how a promotion is cleared.
    assert.equal(
      await page.locator('.run-facts .next-step').innerText(),
      ` Next step: promote #4: agl optimize promote ${runId} 4, or Apply…; the agent reads it instead of the seed until cleared: agl optimize promote ${runId} --clear.`,
    );
    assert.deepEqual(view.problems, []);
    await view.screenshot('optimize');
  });

  it('walks the lineage and the grid by keyboard: arrows move, Enter selects a candidate or opens a rollout', async () => {
    const page = view.page;
    await page.locator(`.lineage-row[data-candidate="${id(4)}"]`).focus();
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Enter');
    const card = page.locator('.candidate-card');
    await page.waitForFunction((want) => document.querySelector('.candidate-card')?.getAttribute('data-candidate') === want, id(2));
    assert.match(await card.locator('.candidate-head').innerText(), /Candidate #2[\s\S]*rejected/);
    assert.match(await card.locator('.reason').innerText(), /not better than its parent on its minibatch/);
    assert.equal(await card.locator('vscode-button.apply').getAttribute('disabled'), null, 'a decided candidate can be applied');
    // The focus stayed on the row after the redraw, and the tree is still one Tab stop.
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.candidate), id(2));
    assert.equal(await page.locator('.lineage-row[tabindex="0"]').count(), 1);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press(' ');
    await page.waitForFunction((want) => document.querySelector('.candidate-card')?.getAttribute('data-candidate') === want, id(3));
    assert.ok((await card.locator('vscode-button.apply').getAttribute('disabled')) !== null, 'a refused candidate has nothing to apply');
    assert.match(await card.locator('.reason').innerText(), /drops a placeholder/);
    // The grid: from the seed's v1 cell, right then down, Enter opens that cell's rollout.
    const expected = await daemon.client.getOptimizationView(runId);
    await page.locator(`.score-grid [data-cell="${id(0)}|v1"]`).focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.cell), `${id(1)}|v2`);
    await page.keyboard.press('Enter');
    const opened = await view.nextCommand(OptimizeProtocol.openRollout.method);
    assert.deepEqual(opened.params, { rolloutId: expected.candidates.find((c) => c.id === id(1))!.val.v2!.rolloutId });
  });

  it("opens a candidate's rollouts, and asks the editor to apply it", async () => {
    const page = view.page;
    await page.locator(`.lineage-row[data-candidate="${id(1)}"]`).click();
    await page.waitForFunction((want) => document.querySelector('.candidate-card')?.getAttribute('data-candidate') === want, id(1));
    assert.match(await page.locator('.candidate-card vscode-button.open-rollouts').innerText(), /Rollouts \(9\)/);
    await page.locator('.candidate-card vscode-button.open-rollouts').click();
    assert.deepEqual((await view.nextCommand(OptimizeProtocol.openRollouts.method)).params, { runId, candidateId: id(1) });
    await page.locator('.candidate-card vscode-button.apply').click();
    assert.deepEqual((await view.nextCommand(OptimizeProtocol.apply.method)).params, { runId, candidateId: id(1) });
    // A parent link shows the parent.
    await page.locator('.candidate-card a.parent-link').click();
    await page.waitForFunction((want) => document.querySelector('.candidate-card')?.getAttribute('data-candidate') === want, id(0));
    assert.match(await page.locator('.candidate-card .prompt-change[data-prompt="system"] h3').innerText(), /its text/);
  });

  it('follows a running optimization live: a new candidate, its scores and the new best appear without a reload', async () => {
    const page = view.page;
    await daemon.client.updateTrainingRun(runId, { status: 'running' });
    const c6 = candidate(
      runId,
      6,
      {
        system: 'You answer questions about an order record.\nA delivery date is the shipped date.\nWrite names in Title Case.',
        format: 'Write dates as YYYY-MM-DD.',
      },
      {
        parents: [id(4)],
        origin: 'reflection',
        component: 'system',
        reflection: 'Names came back in lower case (ann lee): the grader wants Title Case.',
        minibatch: ['t4', 't5', 't6'],
      },
    );
    await daemon.client.addPromptCandidate(c6);
    await page.locator(`.lineage-row[data-candidate="${id(6)}"]`).waitFor({ timeout: 10_000 });
    assert.match(await page.locator(`.lineage-row[data-candidate="${id(6)}"] .status`).innerText(), /proposed/);
    for (const task of VAL_TASKS) await scoredRollout(daemon.client, runId, c6.id, task, 'val', 1);
    await daemon.client.decidePromptCandidate(c6.id, { status: 'accepted', scores: { minibatch: { parent: 2 / 3, child: 1 }, val: 1 } });
    await page.locator(`.score-grid tr[data-candidate="${id(6)}"]`).waitFor({ timeout: 10_000 });
    await page.waitForFunction((want) => [...document.querySelectorAll<HTMLElement>('.rise')].some((r) => r.dataset.candidate === want), id(6), {
      timeout: 10_000,
    });
    const expected = await daemon.client.getOptimizationView(runId);
    assert.deepEqual(expected.front, [id(6)], 'the new candidate dominates every other');
    await page.waitForFunction(
      (want) =>
        document.querySelectorAll('.score-grid th.cand.on-front').length === 1 &&
        document.querySelector('.score-grid th.cand.on-front')?.closest('tr')?.dataset.candidate === want,
      id(6),
      { timeout: 10_000 },
    );
    assert.match(await page.locator('.run-facts').innerText(), /running[\s\S]*val 0\.333 → 1\.000/);
    assert.deepEqual(view.problems, []);
  });

  it('reads at half width and in the light theme: nothing cut off, the grid scrolls on its own', async () => {
    const page = view.page;
    await page.setViewportSize({ width: 700, height: 900 });
    await page.locator(`.lineage-row[data-candidate="${id(4)}"]`).click();
    await page.waitForTimeout(300); // the curve follows the new width (ResizeObserver)
    const overflow = await page.evaluate(() => {
      const right = document.documentElement.clientWidth;
      return [...document.querySelectorAll('#app *')]
        .filter((e) => !e.closest('.grid-scroll') && e.getBoundingClientRect().right > right + 1)
        .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`);
    });
    assert.deepEqual(overflow, []);
    const columns = await page.locator('.columns').evaluate((e) => getComputedStyle(e).gridTemplateColumns.split(' ').length);
    assert.equal(columns, 1, 'stacked when narrow');
    await view.screenshot('optimize-half-dark');
    await view.setTheme('light');
    await page.waitForTimeout(200);
    await view.screenshot('optimize-half-light');
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.waitForTimeout(300);
    await view.screenshot('optimize-light');
    await view.setTheme('dark');
    assert.deepEqual(view.problems, []);
  });
});

describe('optimization view webview, before any optimization', () => {
  it('says how to start one, and shows the first one as soon as it appears', async () => {
    const daemon = await startDaemon();
    const live = liveOptimize(daemon);
    const view = await openWebview('optimize', optimizeHandlers(daemon.client), { onCommand: (m, p, v) => live.onCommand(m, p, v) });
    live.attach(view);
    try {
      await view.page.locator('.empty-state', { hasText: 'No prompt optimization yet' }).waitFor();
      const run = await daemon.client.createTrainingRun({ agent: OPT_AGENT, kind: 'optimize', totalSteps: 40, config: { prompts: ['system'] } });
      await view.page.locator('.run-facts', { hasText: `rollouts 0 / 40` }).waitFor({ timeout: 10_000 });
      assert.deepEqual(await view.page.locator('.run-select vscode-option').evaluateAll((els) => els.map((e) => e.getAttribute('value'))), [run.id]);
      assert.deepEqual(view.problems, []);
    } finally {
      live.close();
      await view.close();
      await daemon.close();
    }
  });
});

describe("a candidate's rollouts in the trajectory viewer", () => {
  it('lists only the rollouts of the candidate, says so in a chip, and lists every rollout again when the chip goes', async () => {
    const daemon = await startDaemon();
    const runId = await seedOptimization(daemon.client);
    const view = await openWebview('trajectory', trajectoryHandlers(daemon.client));
    try {
      const c1 = (await daemon.client.getOptimizationView(runId)).candidates.find((c) => c.ordinal === 1)!;
      await view.notify(TrajectoryProtocol.show.method, { view: { kind: 'rollouts' }, filter: { candidate: c1.id, runId } });
      const chip = view.page.locator('.filter-chip[data-chip="candidate"]');
      await chip.waitFor();
      assert.match(await chip.innerText(), /Prompt candidate: #1/);
      await view.page.locator('span.count', { hasText: new RegExp(`^${c1.rollouts} rollouts$`) }).waitFor({ timeout: 10_000 });
      assert.equal(c1.rollouts, 9, 'its minibatch (3) and val (6) rollouts');
      await chip.locator('.chip-remove').click();
      const all = (await daemon.client.queryRollouts({ runId, limit: 1, withTotal: true })).total!;
      await view.page.locator('span.count', { hasText: new RegExp(`^${all} rollouts$`) }).waitFor({ timeout: 10_000 });
      await view.screenshot('optimize-candidate-rollouts');
      assert.deepEqual(view.problems, []);
    } finally {
      await view.close();
      await daemon.close();
    }
  });
});
