/**
 * The compare view, built (dist/webview/compare.js) and loaded in Debian chromium under the panel's real CSP, answered
 * by the panel's real host-side code (extension/panels/data.ts compareHandlers) from a real daemon holding two eval
 * runs recorded as `agl eval` records them (a run of kind 'eval', its EvalConfig and, once it succeeded, its
 * EvalSummary): the newest two runs shown at first, the older the baseline; wins, losses, ties and the paired test on
 * top, equal to `agl eval --baseline`'s comparison of the same runs (protocol/eval-stats.ts compareTasks); per task
 * both answers and both rewards; the filters (regressions first, then fixes, all) with their counts; a reward opening
 * its rollout (the panel's command); opened on two runs the panel names; a cancelled run refused in words. Screenshot
 * in test-results/webview/compare.png.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compareHandlers } from '../../extension/panels/data.js';
import type { EvalTaskResult } from '../../protocol/eval.js';
import { compareTasks } from '../../protocol/eval-stats.js';
import { CompareProtocol } from '../../protocol/webview-compare.js';
import { CALC_AGENT, calcEvalConfig, evalSummary, taskResult } from '../eval/eval-records.js';
import { openWebview, startDaemon, type Daemon, type WebviewSession } from './harness.js';

const result = taskResult;

/** An eval run as `agl eval` records it: created running with its config, then succeeded with its summary (or cancelled). */
async function recordEval(d: Daemon, model: string, tasks: EvalTaskResult[], status: 'succeeded' | 'cancelled' = 'succeeded'): Promise<string> {
  const config = calcEvalConfig(model);
  // Each run a later millisecond than the last, so "newest" is one run (the view orders by creation time).
  for (const t = Date.now(); Date.now() === t;) await new Promise((r) => setImmediate(r));
  const run = await d.client.createTrainingRun({ agent: CALC_AGENT, kind: 'eval', config: config as never, totalSteps: tasks.length });
  const summary = evalSummary(tasks);
  await d.client.updateTrainingRun(
    run.id,
    status === 'succeeded' ? { status, step: tasks.length, summary: summary as never } : { status, summary: { error: 'stopped' } },
  );
  return run.id;
}

describe('compare view webview', () => {
  let daemon: Daemon;
  let view: WebviewSession;
  let older: string;
  let warm: string;
  let trained: string;
  const expected = ['57', '564', '44', '12', '90', '7'];
  const warmAnswers = ['57', '560', '44', '12', '91', '0'];
  const trainedAnswers = ['57', '564', '40', '12', '90', '7'];

  before(async () => {
    daemon = await startDaemon();
    older = await recordEval(
      daemon,
      'builtin:0.8m',
      expected.map((e, i) => result(`val-${i}`, 0, '1', e)),
    );
    await recordEval(daemon, 'builtin:0.8m', [result('val-0', 1, '57', '57')], 'cancelled');
    warm = await recordEval(
      daemon,
      'samples/calc/warmup',
      expected.map((e, i) => result(`val-${i}`, warmAnswers[i] === e ? 1 : 0, warmAnswers[i]!, e)),
    );
    trained = await recordEval(
      daemon,
      '/data/runs/run-abc/policy-40',
      expected.map((e, i) => result(`val-${i}`, trainedAnswers[i] === e ? 1 : 0, trainedAnswers[i]!, e)),
    );
    view = await openWebview('compare', compareHandlers(daemon.client));
  });
  after(async () => {
    await view?.close();
    await daemon?.close();
  });

  it('shows the newest two runs, the wins, losses and paired test agl eval --baseline gives, and the regressions first', async () => {
    const page = view.page;
    await page.waitForSelector('.compare-table');
    const means = (w: string[]) => new Map(expected.map((e, i) => [`val-${i}`, w[i] === e ? 1 : 0]));
    const c = compareTasks(warm, means(warmAnswers), means(trainedAnswers));
    const summary = await page.locator('.compare-summary').innerText();
    assert.match(summary, new RegExp(`${c.wins} better · ${c.losses} worse · ${c.ties} tied`));
    assert.match(summary, /3 better · 1 worse · 2 tied/);
    assert.match(summary, /mean 0\.500 → 0\.833 \(\+0\.333\)/);
    assert.match(summary, new RegExp(`Wilcoxon signed-rank p = ${c.test.p.toFixed(4)} \\(exact, 4 tasks differ\\)`));
    assert.match(summary, /not significant \(p ≥ 0\.05\): no evidence of a change against warmup/);
    // The regressions first: val-2 answered 44 before, 40 now.
    const rows = () =>
      page.locator('.compare-table tbody tr').evaluateAll((els) => els.map((e) => [...e.children].map((c) => (c as HTMLElement).innerText.trim())));
    assert.deepEqual(await rows(), [['val-2', '44', '44', '1', '40', '0', 'regressed']]);
    const counts = await page.locator('.filters vscode-button').allInnerTexts();
    assert.deepEqual(counts, ['Regressions (1)', 'Fixes (3)', 'All (6)']);
    assert.deepEqual(view.problems, []);
  });

  it('filters to the fixes and to all, keeping both answers and rewards per task', async () => {
    const page = view.page;
    await page.locator('.filters vscode-button[data-filter="fixes"]').click();
    await page.waitForFunction(() => document.querySelectorAll('.compare-table tbody tr').length === 3);
    const ids = await page.locator('.compare-table tbody tr').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.task));
    assert.deepEqual(ids, ['val-1', 'val-4', 'val-5']);
    await page.locator('.filters vscode-button[data-filter="all"]').click();
    await page.waitForFunction(() => document.querySelectorAll('.compare-table tbody tr').length === 6);
    const row5 = await page.locator('.compare-table tr[data-task="val-5"]').innerText();
    assert.match(row5, /val-5\s+7\s+0\s+0\s+7\s+1\s+fixed/);
    await view.screenshot('compare');
  });

  it("opens a task's rollout from its reward", async () => {
    await view.page.locator('.compare-table tr[data-task="val-2"] td.reward.after button').click();
    const cmd = await view.nextCommand(CompareProtocol.openRollout.method);
    assert.deepEqual(cmd.params, { rolloutId: 'ro-val-2-40' });
  });

  it('opens on the two runs the panel names, and says why a cancelled run cannot be compared', async () => {
    const page = view.page;
    await view.notify(CompareProtocol.show.method, { baseRunId: older, runId: trained });
    await page.waitForFunction(() => /5 better · 0 worse · 1 tied/.test(document.querySelector('.compare-summary')?.textContent ?? ''));
    // Five tasks up, none down: the exact two-sided p is 2/32, not significant at 0.05.
    assert.match(
      await page.locator('.compare-summary').innerText(),
      /p = 0\.0625 \(exact, 5 tasks differ\)[\s\S]*not significant \(p ≥ 0\.05\): no evidence of a change against builtin:0\.8m/,
    );
    const runs = await daemon.client.listTrainingRuns(undefined, 'eval');
    const cancelled = runs.find((r) => r.status === 'cancelled')!.id;
    await view.notify(CompareProtocol.show.method, { baseRunId: cancelled, runId: trained });
    await page.waitForSelector('.error-state');
    assert.match(await page.locator('.error-state').innerText(), new RegExp(`run ${cancelled} is not a finished eval run \\(eval, cancelled\\)`));
  });
});
