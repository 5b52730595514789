/**
 * End-to-end in real VS Code (code-server + chromium + playwright-core): the walkthrough of runs that cannot learn, as a
 * new user meets them, on the agents of test/e2e/fixtures (trained through "Train This Agent" with each agent's own
 * train.yaml and the built-in model):
 *  - an agent whose train.yaml samples greedily (`model.temperature: 0`): the budget pick names the group size the
 *    train.yaml trains with (not the setting's); the editor's warning, its final message and the dashboard's banner
 *    say greedy sampling in the same words (not "warm up with agl sft"), the final message's main action is not "Serve
 *    Checkpoint" (the policy never changed) and it says what the held-out number covers and what the run ran on; the
 *    dashboard's notes and the group view number the steps 1..3, as agl train prints them;
 *  - an agent that makes no LLM call through the gateway: the same places say no call was recorded.
 * Every expected value is read from the store the runs wrote. Screenshots: test-results/e2e/run-truth-*.png.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../daemon/store/index.js';
import { describeEngine, type TrainingRunSummary } from '../../protocol/metrics.js';
import type { TrainingRun } from '../../protocol/store.js';
import { diagnoseLearning, diagnosisSentence, runContext, type LearningDiagnosis } from '../../protocol/training-health.js';
import { openFile, pickItem, ROOT, runCommand, webviewWith, type Page, inWorkbench } from './harness.js';

const FIXTURES = join(ROOT, 'test', 'e2e', 'fixtures');
/** The preset budgets' group size (the setting); the fixtures' train.yaml trains with 4. */
const SETTING_GROUP_SIZE = 2;
const STEPS = 3;

/** The newest run of an agent and what the dashboard must say about it, from the store the daemon writes. */
async function readRun(dataDir: string, agentFile: string): Promise<{ run: TrainingRun; diagnosis: LearningDiagnosis }> {
  const store = await openStore({ dataDir });
  try {
    const run = (await store.listTrainingRuns()).find((r) => r.agent.includes(agentFile));
    assert.ok(run, `a run of ${agentFile} is in the store`);
    const diagnosis = diagnoseLearning(await store.queryMetrics(run.id), runContext(run));
    assert.ok(diagnosis, `the run of ${agentFile} cannot learn, by its metrics`);
    return { run, diagnosis };
  } finally {
    await store.close();
  }
}

/** Every notification's text and buttons, from the notification center (toasts hide after a while; the center keeps them). */
async function notifications(page: Page, shot: () => Promise<void>): Promise<{ text: string; buttons: string[] }[]> {
  await runCommand(page, 'Notifications: Show Notifications');
  const items = page.locator('.notifications-center .notification-list-item');
  await items.first().waitFor({ state: 'visible', timeout: 15_000 });
  const out = await items.evaluateAll((els) =>
    els.map((e) => ({
      text: e.querySelector('.notification-list-item-message')?.textContent ?? '',
      buttons: [...e.querySelectorAll('.notification-list-item-buttons-container .monaco-button')].map((b) => b.textContent ?? ''),
    })),
  );
  await shot();
  // Closed again: while the center is open, new notifications go there instead of showing as toasts.
  await runCommand(page, 'Notifications: Hide Notifications');
  await page.locator('.notifications-center').waitFor({ state: 'hidden', timeout: 15_000 });
  return out;
}

/** Train This Agent on the agent of `folder`, with its own train.yaml and the built-in model; waits for the run to end. */
async function trainFixture(page: Page, folder: string, agentName: string, shot: (name: string) => Promise<void>): Promise<void> {
  await openFile(page, `${folder}/agent.ts`);
  await page
    .locator('.monaco-editor .view-line', { hasText: `export const ${agentName} = rollout(async` })
    .first()
    .click();
  await runCommand(page, 'Agent Lightning: Train This Agent');
  await pickItem(page, `${folder}/data/train.jsonl`, /training data/);
  await pickItem(page, `${folder}/data/val.jsonl`, /validation data/);
  const title = page.locator('.quick-input-widget .quick-input-title', { hasText: /budget/ });
  await title.waitFor({ state: 'visible', timeout: 30_000 });
  const own = page.locator('.quick-input-list .monaco-list-row', { hasText: "The agent's train.yaml" }).first();
  await own.waitFor({ state: 'visible' });
  // The title claims no group size; each budget says its own: the train.yaml's 4, the presets' the setting's 2.
  assert.doesNotMatch(await title.innerText(), /group size/);
  assert.match(await own.innerText(), /group size 4 · 2 tasks per step · at most 3 steps/);
  const preset = await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Smoke test' }).first().innerText();
  assert.match(preset, new RegExp(`group size ${SETTING_GROUP_SIZE} \\(setting agentLightning\\.groupSize\\)`));
  await shot(`truth-${folder}-01-budget`);
  await pickItem(page, "The agent's train.yaml", /budget/);
  await pickItem(page, 'builtin:0.8m', /model/);
  // The run ends with its message (the progress notification of a run this short may be gone before it is looked for).
  const done = page.locator('.notification-toast', { hasText: new RegExp(`Agent Lightning: trained ${agentName}|training ${agentName} failed`) });
  await done.waitFor({ state: 'visible', timeout: 5 * 60_000 });
  await shot(`truth-${folder}-02-ended`);
  // The status bar is back to ready: no late progress read puts "training" back.
  await page.locator('.statusbar-item', { hasText: 'Agent Lightning: ready' }).waitFor({ state: 'visible', timeout: 30_000 });
}

/** The editor's and the dashboard's words about a run that cannot learn, against the diagnosis its metrics give. */
async function checkTold(page: Page, agentName: string, run: TrainingRun, d: LearningDiagnosis, shot: (name: string) => Promise<void>): Promise<void> {
  const summary = run.summary as TrainingRunSummary;
  const said = await notifications(page, () => shot(`truth-${d.kind}-03-notifications`));
  // Said while training when the run was still going once its first steps were in (a run this short may end first:
  // then its final message says it alone), in the words agl train prints, with the first thing to try.
  for (const warning of said.filter((n) => n.text.includes('Training cannot learn') && !n.text.includes(`trained ${agentName}`)))
    assert.equal(warning.text, `Agent Lightning: ${diagnosisSentence(d)}`);
  const ended = said.find((n) => n.text.startsWith(`Agent Lightning: trained ${agentName}`));
  assert.ok(ended, `the run's final message: ${JSON.stringify(said)}`);
  assert.match(ended.text, new RegExp(`trained ${agentName}, but the policy never changed: ${STEPS}/${STEPS} steps`));
  assert.match(ended.text, /held-out reward \d\.\d\d → \d\.\d\d of 4 tasks/, 'what the held-out number covers');
  assert.ok(ended.text.includes(`on ${describeEngine(summary.engine!)}`), `what it ran on: ${ended.text}`);
  assert.ok(ended.text.includes(diagnosisSentence(d)), 'it says why');
  assert.deepEqual(ended.buttons, ['Open Dashboard', 'Open Trajectories', 'Serve Checkpoint'], 'a run that changed nothing: Serve Checkpoint comes last');
  assert.notEqual(ended.buttons[0], 'Serve Checkpoint', 'never the main action');

  // The dashboard (opened on the run when it started): the same words, the run's engine and held-out tasks.
  const dash = await webviewWith(page, `.learning-diagnosis[data-kind="${d.kind}"]`, 60_000);
  assert.equal((await dash.locator('.learning-diagnosis .diagnosis-title').innerText()).trim(), d.message);
  assert.match(await dash.locator('.learning-diagnosis').innerText(), new RegExp(`Likely cause: ${escape(d.cause)}`));
  assert.equal((await dash.locator('.learning-diagnosis li').first().innerText()).trim(), d.advice[0]);
  assert.equal((await dash.locator('.cfg.engine').innerText()).trim().split(' · peak')[0], describeEngine(summary.engine!));
  const heldOut = /^held-out ([\d.]+) of 4 tasks$/.exec((await dash.locator('.kpi.held-out').innerText()).trim());
  assert.ok(heldOut && Math.abs(Number(heldOut[1]) - summary.valAfter!) < 5e-4, `the last validation, over its 4 tasks: ${heldOut?.[0]}`);
  // Its notes number the steps as agl train printed them ("step 1/3" .. "step 3/3"): every step, no update.
  await dash.locator('.step-notes summary').click();
  assert.equal(await dash.locator('.step-note').first().getAttribute('data-steps'), '1 2 3');
  await shot(`truth-${d.kind}-04-dashboard`);
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('VS Code: a greedy run and a run with no LLM call say why they cannot learn, in the same words everywhere', { timeout: 20 * 60_000 }, async () => {
  await inWorkbench({ shots: 'run', folder: FIXTURES, settings: { 'agentLightning.groupSize': SETTING_GROUP_SIZE } }, async ({ server, page, shot, mark }) => {
    // 1. Greedy sampling (model.temperature: 0).
    await trainFixture(page, 'greedy', 'greedyAgent', shot);
    mark('greedy trained');
    const greedy = await readRun(server.dataDir, 'greedy/agent.ts');
    assert.equal(greedy.diagnosis.kind, 'greedy-sampling');
    assert.doesNotMatch(diagnosisSentence(greedy.diagnosis), /agl sft/);
    await checkTold(page, 'greedyAgent', greedy.run, greedy.diagnosis, shot);
    // A note's step opens that step's GRPO groups: the group view says the same step, and offers steps 1..3.
    const dash = await webviewWith(page, '.step-note');
    await dash.locator('.step-note a.note-step[data-step="2"]').click();
    const groups = await webviewWith(page, '.group', 60_000);
    await groups.locator('.view-header h1', { hasText: 'step 2' }).waitFor({ state: 'visible', timeout: 30_000 });
    const options = await groups.locator('.step-select vscode-option').allInnerTexts();
    assert.deepEqual(
      options.map((o) => o.trim()),
      ['step 1', 'step 2', 'step 3'],
    );
    await shot('truth-greedy-05-group-view');
    mark('greedy checked');

    // 2. No LLM call through the gateway. Back to the editor (keys typed in a webview stay there); its run's
    //    notifications come after the greedy run's: clear those first.
    await page.locator('.tab', { hasText: 'agent.ts' }).first().click();
    await runCommand(page, 'View: Close All Editors');
    await page.locator('.tab').first().waitFor({ state: 'detached', timeout: 15_000 });
    await runCommand(page, 'Notifications: Clear All Notifications');
    await trainFixture(page, 'no-call', 'noCallAgent', shot);
    const noCall = await readRun(server.dataDir, 'no-call/agent.ts');
    assert.equal(noCall.diagnosis.kind, 'no-llm-call');
    await checkTold(page, 'noCallAgent', noCall.run, noCall.diagnosis, shot);
    mark('no-call checked');
  });
});
