/**
 * Add to dataset in the trajectory viewer, built and loaded in chromium under the panel's strict CSP and answered by the
 * panel's real host code (extension/panels/data.ts, dataset-add.ts) from a real daemon holding recorded calc rollouts;
 * only the file dialog is the test's (it names a file, as the extension's quick pick would). In the list: rows selected
 * by their checkbox and by Space, "Add 2 selected to dataset…", Clear, then "Add all 3 to dataset…" (the filter's: a
 * task already in the file left out, a rollout without an answer said so). In a rollout: the expected field starting
 * from the task's expected value (never from an answer that scored 0), corrected there, added with the correction. Each file is read back.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import type { EvalRow } from '../../protocol/eval.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';
import { seedDatasetRollouts } from './seed.js';

const RUN = 'run-dataset';

describe('Add to dataset in the viewer (list selection, filter, a corrected rollout)', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  let dir: string;
  let file = '';
  const ids: Record<'wrong' | 'right' | 'silent', string> = { wrong: '', right: '', silent: '' };
  const rows = (): EvalRow[] =>
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as EvalRow);
  const status = (text: string | RegExp) => view.page.locator('.dataset-status', { hasText: text }).first().waitFor({ state: 'visible', timeout: 15_000 });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agl-webview-dataset-'));
    daemon = await startDaemon();
    Object.assign(ids, await seedDatasetRollouts(daemon.client, RUN));
    const chooser = { chooseFile: async () => ({ path: file, label: file.split('/').pop()! }) };
    view = await openWebview('trajectory', trajectoryHandlers(daemon.client, chooser));
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds the rows selected by checkbox and Space, then every rollout the filter shows', async () => {
    const { page } = view;
    file = join(dir, 'picked.eval.jsonl');
    await page.waitForSelector('.rollout-row');
    const add = page.locator('.dataset-bar vscode-button.add-to-dataset');
    await page.waitForFunction(() => document.querySelector('.dataset-bar .add-to-dataset')?.textContent === 'Add all 3 to dataset…');
    await page.locator(`.rollout-row[data-rollout-id="${ids.wrong}"] input.select-row`).click();
    const right = page.locator(`.rollout-row[data-rollout-id="${ids.right}"]`);
    await right.focus();
    await page.keyboard.press('Space');
    assert.equal(await right.getAttribute('aria-selected'), 'true');
    assert.equal(await page.locator('.rollout-row.selected').count(), 2);
    assert.equal(await add.innerText(), 'Add 2 selected to dataset…');
    assert.equal(await page.locator('body').getAttribute('data-view'), 'rollouts', 'selecting opened nothing');
    await add.click();
    await status(`2 rows added to picked.eval.jsonl.`);
    assert.deepEqual(
      rows().map((r) => [r.id, r.expected]),
      [
        ['t-12x7', '84'],
        ['t-sq', '200'],
      ],
    );
    await page.locator('.dataset-bar .clear-selection').click();
    await page.waitForFunction(() => document.querySelectorAll('.rollout-row.selected').length === 0);
    assert.equal(await add.innerText(), 'Add all 3 to dataset…');
    await add.click();
    await status('0 rows added to picked.eval.jsonl; 2 left out: picked.eval.jsonl holds their task already; 1 recorded no answer.');
    assert.equal(rows().length, 2);
    await view.screenshot('dataset-list');
  });

  it('adds one rollout with the expected answer corrected in place', async () => {
    const { page } = view;
    file = join(dir, 'fixed.eval.jsonl');
    await view.notify(TrajectoryProtocol.show.method, { view: { kind: 'rollout', rolloutId: ids.wrong } });
    const field = page.locator('textarea.expected-answer');
    await field.waitFor({ state: 'visible', timeout: 15_000 });
    // It failed (its recorded 84 scored 0): the field starts from the task's expected value, never from its wrong answer.
    assert.equal(await field.inputValue(), '87', "the task's answer to start with");
    assert.equal(await page.locator('.dataset-controls .expected-from').innerText(), "the task's answer");
    assert.equal(await page.locator('.corrected-mark').isVisible(), false);
    await field.fill('87.0');
    assert.equal(await page.locator('.corrected-mark').isVisible(), true);
    await field.fill('87');
    assert.equal(await page.locator('.corrected-mark').isVisible(), false);
    await page.locator('.dataset-controls vscode-button.add-to-dataset').click();
    await status('1 row added to fixed.eval.jsonl.');
    const [row] = rows();
    assert.deepEqual([row!.id, row!.expected, row!.from!.answered], ['t-12x7', '87', '84']);
    assert.ok(row!.from!.call && 'messages' in row!.from!.call, 'the final call kept for agl sft');
    // A rollout that recorded no answer: the field starts empty and asks for one.
    await view.notify(TrajectoryProtocol.show.method, { view: { kind: 'rollout', rolloutId: ids.silent } });
    await page.waitForFunction(() => (document.querySelector('textarea.expected-answer') as HTMLTextAreaElement | null)?.value === '');
    await page.locator('.dataset-controls vscode-button.add-to-dataset').click();
    await status('Write the expected answer first: this rollout recorded none.');
    await page.locator('textarea.expected-answer').fill('2');
    await page.locator('.dataset-controls vscode-button.add-to-dataset').click();
    await status('1 row added to fixed.eval.jsonl.');
    assert.deepEqual(rows().at(-1)!.expected, 2, 'JSON when it parses');
    await view.screenshot('dataset-rollout');
    assert.deepEqual(view.problems, []);
  });
});
