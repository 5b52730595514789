/**
 * End-to-end in real VS Code (code-server + chromium + playwright-core): prompt optimization from the editor, on the
 * order desk agent of test/e2e/fixtures/apo (its prompt a file, prompts/desk.md) against the scripted OpenAI-compatible
 * server of samples/apo (the agent's model and the optimizer: it writes into a prompt the rules the graders' feedback
 * names). The Optimize lens above `llm.prompt('desk', ...)`; Optimize This Prompt's picks (the optimizer's endpoint
 * from the settings, a budget of one's own, the agent's model at the same server); its progress notification; the
 * optimization view opened on the run, filling in and then agreeing with the store (the candidates, their statuses, the
 * Pareto front, the best); a candidate's diff and its rollouts in the trajectory viewer (filtered by it); Apply: VS Code's
 * diff editor on prompts/desk.md, a question first, then the file holding the candidate's text; the view naming the next
 * step (promote, and how to clear); the agent's lens not counting the run's rollouts as its own; the lens then showing the
 * best val score; then Optimize This Prompt again from the palette, every pick remembered, cancelled from its notification
 * (the run cancelled in the store, the message naming --resume). One code-server start for all of it. Screenshots
 * (test-results/e2e/optimize-*.png) at full and half width, dark and light.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore, type LightningStore } from '../../daemon/store/index.js';
import type { OptimizationSummary } from '../../protocol/prompts.js';
import type { TrainingRun } from '../../protocol/store.js';
import type { OptimizationView } from '../../protocol/webview-optimize.js';
import { optimizationView } from '../../daemon/store/views-optimize.js';
import { AGENT_MODEL, OPTIMIZER_MODEL, startScriptedLlm, type ScriptedLlm } from '../../samples/apo/scripted-llm.js';
import { openFile, pickItem, ROOT, runCommand, webviewWith, type FrameLocator, type Page, inWorkbench } from './harness.js';

const FIXTURES = join(ROOT, 'test', 'e2e', 'fixtures');
const PROMPT_FILE = join(FIXTURES, 'apo', 'prompts', 'desk.md');
const BUDGET = 45;

/** The newest optimization the editor ran, as the daemon's store holds it now, and its view. */
async function stored<T>(dataDir: string, read: (store: LightningStore, run: TrainingRun) => Promise<T>): Promise<T> {
  const store = await openStore({ dataDir });
  try {
    const [run] = (await store.listTrainingRuns(undefined, 'optimize')).sort((a, b) => b.createdAt - a.createdAt);
    assert.ok(run, 'the optimization is in the store');
    return await read(store, run);
  } finally {
    await store.close();
  }
}
const storedView = (dataDir: string): Promise<OptimizationView> => stored(dataDir, (store, run) => optimizationView(store, run.id));
const newestRun = (dataDir: string): Promise<TrainingRun> => stored(dataDir, async (_, run) => run);

/** Optimize This Prompt from the lens, through its picks, to the end of the run (its final notification). */
async function optimizeFromLens(page: Page, llm: ScriptedLlm, shot: (name: string) => Promise<void>): Promise<void> {
  const lens = page.locator('.monaco-editor .codelens-decoration a', { hasText: '✦ Optimize "desk"' }).first();
  await lens.waitFor({ state: 'visible', timeout: 60_000 });
  await shot('01-lens');
  await lens.click();
  await pickItem(page, 'apo/data/train.jsonl', /tasks to learn from/);
  await pickItem(page, 'apo/data/val.jsonl', /val tasks/);
  await pickItem(page, 'No test set', /held-out test tasks/);
  await pickItem(page, 'Another number of rollouts', /budget/);
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.fill(String(BUDGET));
  await page.keyboard.press('Enter');
  await pickItem(page, `${OPTIMIZER_MODEL} at ${llm.url}`, /the optimizer model/);
  await pickItem(page, `A model at ${llm.url}`, /the agent's model/);
  await page.locator('.quick-input-widget .quick-input-title', { hasText: /the model to ask/ }).waitFor({ state: 'visible' });
  await input.fill(AGENT_MODEL);
  await page.keyboard.press('Enter');
  // The progress notification, as agl optimize's progress bar: rollouts of the budget.
  const progress = page.locator('.notification-toast', { hasText: 'optimizing "desk" of deskAgent' });
  await progress.locator('.notification-list-item-message', { hasText: new RegExp(`rollouts \\d+/${BUDGET}`) }).waitFor({ state: 'visible', timeout: 120_000 });
  await shot('02-progress');
  const done = page.locator('.notification-toast', { hasText: /Agent Lightning: (optimized "desk"|no candidate beat|optimizing "desk" of deskAgent failed)/ });
  await done.waitFor({ state: 'visible', timeout: 5 * 60_000 });
}

/** The view agrees with the store: every candidate in the tree with its status, the front starred, the best shown. */
async function checkView(view: FrameLocator, stored: OptimizationView): Promise<void> {
  await view.locator('.run-facts', { hasText: stored.run.status }).waitFor({ timeout: 30_000 });
  const rows = await view
    .locator('.lineage-row')
    .evaluateAll((els) => els.map((e) => [(e as HTMLElement).dataset.candidate, e.querySelector('.status')?.textContent?.trim()]));
  assert.deepEqual(rows.map(([id]) => id).sort(), stored.candidates.map((c) => c.id).sort());
  for (const [id, status] of rows) assert.equal(status, stored.candidates.find((c) => c.id === id)!.status, `${id}'s status`);
  const starred = await view.locator('.score-grid th.cand.on-front').evaluateAll((els) => els.map((e) => e.closest('tr')!.dataset.candidate));
  assert.deepEqual(starred.sort(), [...stored.front].sort());
  assert.match(await view.locator('.run-facts').innerText(), new RegExp(`rollouts ${stored.rolloutsUsed} / ${BUDGET}`));
}

test(
  'VS Code: Optimize This Prompt from its lens, the optimization view live, a candidate diff and rollouts, Apply to the prompt file',
  { timeout: 15 * 60_000 },
  async () => {
    const seedText = readFileSync(PROMPT_FILE, 'utf8');
    const llm = await startScriptedLlm({ seed: 0, slip: 0 });
    try {
      await inWorkbench(
        { shots: 'optimize', folder: FIXTURES, settings: { 'agentLightning.optimizer.url': llm.url, 'agentLightning.optimizer.model': OPTIMIZER_MODEL } },
        async ({ server, page, shot, mark }) => {
          await openFile(page, 'apo/agent.ts');
          await optimizeFromLens(page, llm, shot);
          mark('optimized');
          const stored = await storedView(server.dataDir);
          const summary = stored.run.summary as OptimizationSummary;
          assert.equal(stored.run.status, 'succeeded', `the run ended: ${JSON.stringify(summary)}`);
          assert.ok(stored.rolloutsUsed <= BUDGET + 3, `the budget held: ${stored.rolloutsUsed} of ${BUDGET}`);
          const best = stored.candidates.find((c) => c.id === summary.bestCandidate)!;
          assert.ok(
            best.ordinal > 0 && best.valMean! > stored.candidates[0]!.valMean!,
            `a candidate beat the seed: ${best.valMean} vs ${stored.candidates[0]!.valMean}`,
          );
          const ended = page.locator('.notification-toast', { hasText: 'Agent Lightning: optimized "desk"' });
          assert.match(await ended.innerText(), new RegExp(`val ${summary.scores!.seed.val!.toFixed(2)} → ${summary.scores!.best.val!.toFixed(2)}`));
          await shot('03-ended');

          // The view, opened on the run when it appeared, now agrees with the store.
          const view = await webviewWith(page, '.lineage-row', 60_000);
          await checkView(view, stored);
          await view.locator(`.lineage-row[data-candidate="${best.id}"]`).click();
          const card = view.locator(`.candidate-card[data-candidate="${best.id}"]`);
          await card.waitFor();
          assert.ok((await card.locator('.diff-line.add').count()) > 0, "the best's diff against its parent has added lines");
          assert.match(await card.locator('.reflection').innerText(), /Reflection/);
          assert.doesNotMatch(await card.locator('.reflection-text').innerText(), /```/, "the optimizer's fences are left to its raw answer");
          // The next step named: promote the best (its command, or Apply), and how a promotion is cleared.
          const next = `Next step: promote #${best.ordinal}: agl optimize promote ${stored.run.id} ${best.ordinal}, or Apply…`;
          await view.locator('.run-facts .next-step', { hasText: next }).waitFor({ timeout: 30_000 });
          assert.match(await view.locator('.run-facts .next-step').innerText(), new RegExp(`until cleared: agl optimize promote ${stored.run.id} --clear`));
          await shot('04-view-light');
          mark('view checked');

          // Its rollouts in the trajectory viewer, filtered by it.
          await card.locator('vscode-button.open-rollouts').click();
          const list = await webviewWith(page, '.filter-chip[data-chip="candidate"]', 60_000);
          assert.match(await list.locator('.filter-chip[data-chip="candidate"]').innerText(), new RegExp(`Prompt candidate: #${best.ordinal}`));
          await list
            .locator('span.count', { hasText: new RegExp(`^${best.rollouts} rollouts?$`) })
            .first()
            .waitFor({ timeout: 30_000 });
          await shot('05-rollouts');

          // Apply: the diff editor on the prompt file, a question, then the file holds the candidate's text.
          await view.locator('vscode-button.apply').click();
          await page.locator('.tab', { hasText: `candidate #${best.ordinal}` }).waitFor({ state: 'visible', timeout: 30_000 });
          const dialog = page.locator('.monaco-dialog-box', { hasText: `Apply candidate #${best.ordinal}?` });
          await dialog.waitFor({ state: 'visible', timeout: 30_000 });
          assert.match(await dialog.innerText(), /write its text into apo\/prompts\/desk\.md/);
          await shot('06-apply-asks');
          assert.equal(readFileSync(PROMPT_FILE, 'utf8'), seedText, 'nothing written before the user says so');
          await dialog.locator('.monaco-button', { hasText: 'Apply' }).click();
          await page.locator('.notification-toast', { hasText: `applied candidate #${best.ordinal}` }).waitFor({ state: 'visible', timeout: 30_000 });
          assert.equal(readFileSync(PROMPT_FILE, 'utf8'), best.prompts.desk);
          await shot('07-applied');
          mark('applied');

          // The lens names the prompt's best val score now.
          await page.locator('.tab', { hasText: 'agent.ts' }).first().click();
          await page
            .locator('.monaco-editor .codelens-decoration a', { hasText: `✦ Optimize "desk" · best val ${best.valMean!.toFixed(2)}` })
            .first()
            .waitFor({ state: 'visible', timeout: 30_000 });

          // The agent's lens: the optimization's rollouts are its candidates', neither the agent's reward nor its count
          // (it read "reward 1.00 · N rollouts"); the optimization has a lens line of its own.
          const lensLink = (text: string) => page.locator('.monaco-editor .codelens-decoration a', { hasText: text }).first();
          await lensLink(`prompt desk: best val ${best.valMean!.toFixed(2)}, not promoted`).waitFor({ state: 'visible', timeout: 30_000 });
          await lensLink('not trained or run yet').waitFor({ state: 'visible', timeout: 30_000 });
          await shot('08-lens-best');

          // The view alone in its editor group at half width, in code-server's light theme, then in the dark one.
          await runCommand(page, 'View: Single Column Editor Layout');
          await runCommand(page, 'Agent Lightning: Open Optimization View');
          await page.setViewportSize({ width: 760, height: 900 });
          await page.mouse.move(5, 600); // no tooltip of whatever the last click left the pointer over
          await (await webviewWith(page, 'body.vscode-light .lineage-row')).locator('.candidate-card').waitFor();
          await shot('09-view-half-light');
          await runCommand(page, 'Preferences: Toggle between Light/Dark Themes');
          const dark = await webviewWith(page, 'body.vscode-dark .lineage-row', 30_000);
          await dark.locator('.candidate-card').waitFor();
          await page.mouse.move(5, 600);
          await shot('10-view-half-dark');
          await page.setViewportSize({ width: 1400, height: 900 });
          await page.waitForTimeout(500);
          await shot('11-view-dark');
          mark('themes');

          // Cancellable: Optimize This Prompt again from the palette, every pick as last time, stopped from its notification.
          await page.locator('.tab', { hasText: 'agent.ts' }).first().click();
          await page.locator('.monaco-editor .view-line', { hasText: "llm.prompt('desk'" }).click();
          await runCommand(page, 'Agent Lightning: Optimize This Prompt');
          await pickItem(page, 'last used', /tasks to learn from/);
          await pickItem(page, 'last used', /val tasks/);
          await pickItem(page, 'No test set', /held-out test tasks/);
          await pickItem(page, `${BUDGET} rollouts`, /budget/); // "last used" is its description, which the filter does not read
          await pickItem(page, `${OPTIMIZER_MODEL} at ${llm.url}`, /the optimizer model/);
          await pickItem(page, `${AGENT_MODEL} at ${llm.url}`, /the agent's model/);
          const again = page.locator('.notification-toast', { hasText: 'optimizing "desk" of deskAgent' });
          await again.locator('.notification-list-item-message', { hasText: /rollouts \d+\// }).waitFor({ state: 'visible', timeout: 60_000 });
          await again.locator('.monaco-button', { hasText: 'Cancel' }).click();
          const stopped = page.locator('.notification-toast', { hasText: /optimization of "desk" stopped/ });
          await stopped.waitFor({ state: 'visible', timeout: 60_000 });
          const cancelled = await newestRun(server.dataDir);
          assert.equal(cancelled.status, 'cancelled');
          assert.match(await stopped.innerText(), new RegExp(`agl optimize --resume ${cancelled.id} continues it`));
          await shot('12-cancelled');
          mark('cancelled');
        },
      );
    } finally {
      writeFileSync(PROMPT_FILE, seedText); // the fixture as it was
      await llm.close();
    }
  },
);
