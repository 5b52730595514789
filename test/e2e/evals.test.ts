/**
 * End-to-end in real VS Code: eval datasets as tests (#42 items 4 and 5). The samples folder is opened with the
 * daemon serving calc's shipped warm-up (agentLightning.defaultModel) and one more dataset named in the setting
 * agentLightning.evalDatasets with its agent: four calc tasks, one whose expected answer no answer reaches (-1) and one
 * graded by a regex any answer matches, so a run has a failure and a pass whatever the warm-up samples. Then:
 *   - the Test Explorer lists the samples' `*.eval.jsonl` suites (calc's tasks labelled by id and question) and the
 *     setting's;
 *   - Run on the small suite runs `agl eval --json` (a cancellable notification while it runs), and each item is marked
 *     as the eval run the store recorded says (passed, failed), its description naming the agent version ("fails on
 *     warmup");
 *   - "Agent Lightning: Open Eval Trajectory" offers the failed tasks, and the one picked opens its rollout in the
 *     trajectory viewer;
 *   - "Agent Lightning: Compare Eval Runs" opens the compare view: with one finished run it says compare needs two; a
 *     second run of the suite shows in it by itself, its wins, losses and ties those of the paired comparison;
 *   - one item's Run runs that task only (`agl eval --task`), the run recording it, the item marked from it;
 *   - a run of calc's whole dataset (its agent the one beside it) cancelled from its notification is recorded cancelled
 *     in the store, and its items are marked skipped, not failed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AglClient } from '../../client/client.js';
import { evalSummaryOf } from '../../protocol/eval-compare.js';
import { compareTasks } from '../../protocol/eval-stats.js';
import { pickItem, ROOT, runCommand, webviewWith, inWorkbench } from './harness.js';

const samples = join(ROOT, 'samples');

/** Four calc tasks (ids of their own: the tree shows calc's too): two as shipped, one no answer passes, one every answer passes. */
function tinyDataset(dir: string): string {
  const rows = readFileSync(join(samples, 'calc', 'data', 'calc.eval.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(0, 4)
    .map((l, i) => ({ ...(JSON.parse(l) as { input: unknown; expected: unknown; grader: string }), id: `tiny-${i}` }));
  rows[2] = { ...rows[2]!, id: 'impossible', expected: -1, grader: 'number' };
  rows[3] = { ...rows[3]!, id: 'any-answer', expected: '^', grader: 'regex' };
  const file = join(dir, 'tiny.eval.jsonl');
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return file;
}

test(
  'VS Code: Test Explorer lists eval datasets, a run marks pass and fail as the store recorded, a failure opens its trajectory',
  { timeout: 10 * 60_000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agl-e2e-evals-'));
    const tiny = tinyDataset(dir);
    try {
      await inWorkbench(
        {
          shots: 'evals',
          folder: samples,
          settings: {
            'agentLightning.defaultModel': join(samples, 'calc', 'warmup'),
            'agentLightning.evalDatasets': [{ data: tiny, agent: `${join(samples, 'calc', 'agent.ts')}#calcAgent` }],
          },
          readyTimeout: 90_000,
        },
        async ({ server, page, shot, mark }) => {
          // 1. The Test Explorer: the samples' datasets and the setting's, calc's tasks labelled by id and question.
          await runCommand(page, 'Testing: Focus on Test Explorer View');
          const tree = page.locator('.test-explorer');
          const row = (text: string) => tree.locator('.monaco-list-row', { hasText: text }).first();
          // A suite is opened with its twistie, unless the tree already shows it open.
          const expand = async (suite: string) => {
            if ((await row(suite).getAttribute('aria-expanded')) !== 'true') await row(suite).locator('.monaco-tl-twistie').click();
          };
          for (const suite of ['calc.eval.jsonl', 'rag.eval.jsonl', 'sql.eval.jsonl', 'tiny.eval.jsonl'])
            await row(suite).waitFor({ state: 'visible', timeout: 60_000 });
          await expand('calc.eval.jsonl');
          await row('val-0: Ann has 69 books, loses 12. How many?').waitFor({ state: 'visible', timeout: 30_000 });
          await row('calc.eval.jsonl').locator('.monaco-tl-twistie').click(); // closed again: the small suite's rows stay in view
          await shot('1-listed');
          mark('listed');

          // 2. Run the small suite (its inline Run action): a notification while agl eval runs, then every item marked.
          await expand('tiny.eval.jsonl');
          await row('impossible').waitFor({ state: 'visible', timeout: 30_000 });
          await row('tiny.eval.jsonl').hover();
          await row('tiny.eval.jsonl').locator('.action-label.codicon-testing-run-icon').click();
          await page.locator('.notification-toast', { hasText: 'eval of tiny.eval.jsonl' }).waitFor({ state: 'visible', timeout: 60_000 });
          const icon = (text: string) => row(text).locator('.computed-state');
          await tree
            .locator('.monaco-list-row', { hasText: 'impossible' })
            .locator('.computed-state.codicon-testing-failed-icon')
            .waitFor({ state: 'visible', timeout: 5 * 60_000 });
          mark('ran');
          const client = AglClient.fromDataDir(server.dataDir);
          const runs = (await client.listTrainingRuns(undefined, 'eval')).filter((r) => evalSummaryOf(r));
          assert.equal(runs.length, 1, 'one finished eval run');
          const summary = evalSummaryOf(runs[0]!)!;
          assert.equal((runs[0]!.config as { data: { file: string } }).data.file, tiny);
          for (const t of summary.tasks) {
            const want = t.passed ? 'codicon-testing-passed-icon' : t.errored ? 'codicon-testing-error-icon' : 'codicon-testing-failed-icon';
            await row(t.id).locator(`.computed-state.${want}`).waitFor({ state: 'visible', timeout: 30_000 });
          }
          assert.deepEqual(
            summary.tasks.filter((t) => ['impossible', 'any-answer'].includes(t.id)).map((t) => [t.id, t.passed]),
            [
              ['impossible', false],
              ['any-answer', true],
            ],
          );
          // Each item says how it did on the agent version the run measured (the warm-up the daemon serves).
          await row('impossible').filter({ hasText: 'fails on warmup' }).waitFor({ state: 'visible', timeout: 30_000 });
          await row('any-answer').filter({ hasText: 'passed on warmup' }).waitFor({ state: 'visible', timeout: 30_000 });
          assert.match((await icon('impossible').getAttribute('class')) ?? '', /testing-failed-icon/);
          await shot('2-ran');

          // 3. A failed task's trajectory: the command offers the failures; the one picked opens in the viewer.
          await runCommand(page, 'Agent Lightning: Open Eval Trajectory');
          await pickItem(page, 'impossible', /failed eval task/);
          const rollout = summary.tasks.find((t) => t.id === 'impossible')!.rolloutIds[0]!;
          const viewer = await webviewWith(page, 'h1 .mono', 60_000);
          await viewer.locator('h1 .mono', { hasText: rollout }).waitFor({ state: 'visible', timeout: 30_000 });
          await shot('3-trajectory');
          mark('trajectory');

          // 4. The compare view from the palette: one finished run, so it says a comparison needs two; a second run of the
          //    suite appears in it by itself (the daemon's events), compared with the first as agl eval --baseline would.
          await runCommand(page, 'Agent Lightning: Compare Eval Runs');
          const compare = await webviewWith(page, '.empty-state .codicon-beaker', 60_000);
          await compare.locator('.empty-state', { hasText: 'One finished evaluation so far: compare needs two.' }).waitFor({ state: 'visible' });
          await row('tiny.eval.jsonl').hover();
          await row('tiny.eval.jsonl').locator('.action-label.codicon-testing-run-icon').click();
          const tally = compare.locator('.compare-summary .tally');
          await tally.waitFor({ state: 'visible', timeout: 5 * 60_000 });
          const [second, first] = (await client.listTrainingRuns(undefined, 'eval')).filter((r) => evalSummaryOf(r)).sort((a, b) => b.createdAt - a.createdAt);
          const means = (r: typeof first) => new Map(evalSummaryOf(r!)!.tasks.map((t) => [t.id, t.mean]));
          const c = compareTasks(first!.id, means(first), means(second));
          assert.equal(await tally.innerText(), `${c.wins} better · ${c.losses} worse · ${c.ties} tied`);
          assert.equal(await compare.locator('.compare-table tbody tr').count(), c.losses || 0, 'the regressions shown first');
          await shot('4-compare');
          mark('compare');

          // 5. One item's Run: agl eval of that task only (--task), recorded as such, the item marked from it.
          await runCommand(page, 'Testing: Focus on Test Explorer View');
          const evalRuns = async () => (await client.listTrainingRuns(undefined, 'eval')).filter((r) => evalSummaryOf(r));
          const finished = (await evalRuns()).length;
          await row('any-answer').hover();
          await row('any-answer').locator('.action-label.codicon-testing-run-icon').click();
          for (const until = Date.now() + 3 * 60_000; (await evalRuns()).length === finished; await page.waitForTimeout(200))
            assert.ok(Date.now() < until, 'no eval run of the one item finished within 3 minutes');
          const one = (await evalRuns()).sort((a, b) => b.createdAt - a.createdAt)[0]!;
          assert.deepEqual((one.config as { only?: string[] }).only, ['any-answer'], 'the run asked for that task only');
          assert.deepEqual(
            evalSummaryOf(one)!.tasks.map((t) => t.id),
            ['any-answer'],
          );
          await row('any-answer').locator('.computed-state.codicon-testing-passed-icon').waitFor({ state: 'visible', timeout: 30_000 });
          mark('one item');

          // 6. Cancel: a run of calc's whole dataset (its agent found beside it) stopped from its notification is recorded
          //    cancelled, and no item is marked from it.
          await row('calc.eval.jsonl').hover();
          await row('calc.eval.jsonl').locator('.action-label.codicon-testing-run-icon').click();
          const toast = page.locator('.notification-toast', { hasText: 'eval of calc.eval.jsonl' });
          await toast.waitFor({ state: 'visible', timeout: 60_000 });
          // Cancelled once agl eval has recorded its run (a Ctrl-C before that leaves no run at all).
          const calcRuns = async () =>
            (await client.listTrainingRuns(undefined, 'eval')).filter((r) => (r.config as { data: { file: string } }).data.file.endsWith('calc.eval.jsonl'));
          for (const until = Date.now() + 60_000; !(await calcRuns()).length; await page.waitForTimeout(100))
            assert.ok(Date.now() < until, 'agl eval recorded no run of calc.eval.jsonl within 60 s');
          await toast.locator('.monaco-button', { hasText: 'Cancel' }).click({ timeout: 30_000 });
          await row('calc.eval.jsonl').locator('.computed-state.codicon-testing-skipped-icon').waitFor({ state: 'visible', timeout: 60_000 });
          assert.deepEqual(
            (await calcRuns()).map((r) => r.status),
            ['cancelled'],
          );
          await client.close();
          await shot('5-cancelled');
          mark('cancelled');
        },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
