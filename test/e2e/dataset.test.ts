/**
 * End-to-end in real VS Code: Add to dataset in the trajectory viewer (issue #42 item 3). A scratch workspace holds an
 * agent that needs no model (fixtures/dataset: it adds two numbers, off by one and failing when the first is over 5) and
 * a dataset `adder.eval.jsonl`; three real `agl rollout` runs against the extension's daemon record one right and two
 * wrong answers. In the viewer: one failed rollout opened, its expected answer corrected in place, Add to dataset, the
 * dataset picked in VS Code's quick pick: the file gains that row, with the correction and what the agent answered; then
 * the list filtered to every failed rollout, "Add all 2 to dataset…", VS Code's confirmation naming the count, the same
 * dataset: the other failed rollout's row is added with its recorded answer, the corrected task is not added twice.
 * That row's answer is wrong: corrected in its rollout, VS Code asks whether the row should expect the correction
 * instead, and Replace changes that line only.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AglClient } from '../../client/client.js';
import type { EvalRow } from '../../protocol/eval.js';
import { runAgl } from '../algorithm/cli-helpers.js';
import { pickItem, ROOT, runCommand, webviewWith, inWorkbench } from './harness.js';

/** The scratch workspace: as deep under the repository as test/e2e/fixtures, so the agent's relative SDK import holds. */
const WORKSPACE = join(ROOT, 'test-results', 'e2e', 'dataset-workspace');
const AGENT_DIR = join(WORKSPACE, 'dataset');
const DATASET = join(AGENT_DIR, 'adder.eval.jsonl');
const TASKS = [
  { a: 2, b: 3 },
  { a: 7, b: 5 },
  { a: 9, b: 1 },
];

const readRows = (): EvalRow[] =>
  readFileSync(DATASET, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as EvalRow);

test('VS Code: Add to dataset on a rollout with a corrected answer, and on the filter of failed rollouts', { timeout: 8 * 60_000 }, async () => {
  rmSync(WORKSPACE, { recursive: true, force: true });
  cpSync(join(ROOT, 'test', 'e2e', 'fixtures', 'dataset'), AGENT_DIR, { recursive: true });
  await inWorkbench({ shots: 'dataset', folder: WORKSPACE, viewport: { width: 1500, height: 900 } }, async ({ server, page, shot, mark }) => {
    // Three real rollouts against the extension's daemon (a wrong one fails: `agl rollout` exits non-zero for it).
    for (const task of TASKS) await runAgl(['rollout', `${join(AGENT_DIR, 'agent.ts')}#adderAgent`, '--task', JSON.stringify(task)], server.dataDir);
    const client = AglClient.fromDataDir(server.dataDir);
    const rollouts = (await client.queryRollouts({ limit: 10 })).items;
    await client.close();
    const idOf = (a: number) => rollouts.find((r) => (r.input as { a: number }).a === a)!.id;
    assert.deepEqual(rollouts.map((r) => r.status).sort(), ['failed', 'failed', 'succeeded'], 'one right, two wrong');
    mark('rollouts recorded');

    // 1. One failed rollout, its expected answer corrected in place, added to the dataset picked in the quick pick.
    await runCommand(page, 'Agent Lightning: Open Trajectory Viewer');
    const viewer = await webviewWith(page, `.rollout-row[data-rollout-id="${idOf(7)}"]`, 60_000);
    await viewer.locator(`.rollout-row[data-rollout-id="${idOf(7)}"] .col-input`).click();
    const field = viewer.locator('textarea.expected-answer');
    await field.waitFor({ state: 'visible', timeout: 30_000 });
    assert.equal(await field.inputValue(), '{"answer":"13"}', 'the recorded answer to start with');
    await field.fill('{"answer":"12"}');
    await viewer.locator('.dataset-controls vscode-button.add-to-dataset').click();
    await pickItem(page, 'dataset/adder.eval.jsonl', /Add 1 rollout to which dataset\?/);
    await viewer
      .locator('.dataset-controls .dataset-status', { hasText: '1 row added to dataset/adder.eval.jsonl.' })
      .waitFor({ state: 'visible', timeout: 30_000 });
    await page.locator('.notification-toast', { hasText: '1 row added to dataset/adder.eval.jsonl' }).waitFor({ state: 'visible', timeout: 30_000 });
    const corrected = readRows()[1]!;
    assert.deepEqual(corrected.input, { a: 7, b: 5 });
    assert.deepEqual(corrected.expected, { answer: '12' });
    assert.deepEqual(corrected.from!.answered, { answer: '13' });
    assert.equal(corrected.from!.rolloutId, idOf(7));
    await shot('1-corrected');
    mark('rollout added');

    // 2. Back to the list, filtered to the failed rollouts: all of them added, after VS Code's confirmation of the count.
    await viewer.locator('vscode-toolbar-button.back').click();
    const toggle = viewer.locator('.filters-toggle');
    if ((await toggle.isVisible()) && (await toggle.getAttribute('aria-expanded')) === 'false') await toggle.click();
    await viewer.locator('vscode-single-select[data-filter="status"]').click();
    await viewer.locator('vscode-single-select[data-filter="status"]').getByRole('option', { name: 'failed', exact: true }).click();
    await viewer.locator('.view-header .count', { hasText: /^2 rollouts$/ }).waitFor({ state: 'visible', timeout: 30_000 });
    const addAll = viewer.locator('.dataset-bar vscode-button.add-to-dataset', { hasText: 'Add all 2 to dataset…' });
    await addAll.click();
    const dialog = page.locator('.monaco-dialog-box', { hasText: 'Add every rollout the filter shows (2 rollouts) to a dataset?' });
    await dialog.waitFor({ state: 'visible', timeout: 30_000 });
    await shot('2-confirm');
    await dialog.locator('.monaco-button', { hasText: 'Add' }).click();
    await pickItem(page, 'dataset/adder.eval.jsonl', /Add 2 rollouts to which dataset\?/);
    const said = '1 row added to dataset/adder.eval.jsonl; 1 left out: dataset/adder.eval.jsonl holds their task already.';
    await viewer.locator('.dataset-bar .dataset-status', { hasText: said }).waitFor({ state: 'visible', timeout: 30_000 });
    // The extension's message says it in the same words as the viewer.
    await page.locator('.notification-toast', { hasText: `Agent Lightning: ${said}` }).waitFor({ state: 'visible', timeout: 30_000 });
    const rows = readRows();
    assert.deepEqual(
      rows.map((r) => [r.input, r.expected]),
      [
        [{ a: 1, b: 1 }, { answer: '2' }],
        [{ a: 7, b: 5 }, { answer: '12' }],
        [{ a: 9, b: 1 }, { answer: '11' }],
      ],
      'the seed row, the corrected one, the other failed one with its recorded answer; the corrected task once',
    );
    assert.equal(rows[2]!.from!.answered, undefined, 'a recorded answer is not a correction');
    await shot('3-filter-added');
    mark('filter added');

    // 3. The row the filter added holds a wrong answer: corrected in its rollout, VS Code asks whether that row should
    // expect the correction instead; Replace changes that line only.
    const idBefore = rows[2]!.id;
    await viewer.locator(`.rollout-row[data-rollout-id="${idOf(9)}"] .col-input`).click();
    await field.waitFor({ state: 'visible', timeout: 30_000 });
    assert.equal(await field.inputValue(), '{"answer":"11"}');
    await field.fill('{"answer":"10"}');
    await viewer.locator('.dataset-controls vscode-button.add-to-dataset').click();
    await pickItem(page, 'dataset/adder.eval.jsonl', /Add 1 rollout to which dataset\?/);
    const ask = page.locator('.monaco-dialog-box', {
      hasText: 'dataset/adder.eval.jsonl holds this task already (line 3), expecting {"answer":"11"}. Expect {"answer":"10"} instead?',
    });
    await ask.waitFor({ state: 'visible', timeout: 30_000 });
    await shot('4-replace');
    await ask.locator('.monaco-button', { hasText: 'Replace' }).click();
    await viewer
      .locator('.dataset-controls .dataset-status', { hasText: 'the row on line 3 of dataset/adder.eval.jsonl now expects the corrected answer.' })
      .waitFor({ state: 'visible', timeout: 30_000 });
    const replaced = readRows();
    assert.deepEqual(replaced.slice(0, 2), rows.slice(0, 2), 'the other rows as they were');
    assert.deepEqual([replaced.length, replaced[2]!.id, replaced[2]!.expected, replaced[2]!.from!.answered], [3, idBefore, { answer: '10' }, { answer: '11' }]);
    mark('row replaced');
  });
});

after(() => {
  if (existsSync(WORKSPACE)) rmSync(WORKSPACE, { recursive: true, force: true });
});
