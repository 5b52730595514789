/**
 * Two eval runs compared as the editor shows them (protocol/eval-compare.ts, webview/compare/model.ts): per task both
 * results and how it moved, the same wins, losses, ties and paired test as `agl eval --baseline` (compareTasks on the
 * per-task means), the filters' rows, the verdict in words; an eval run's agent version in words (a checkpoint `agl
 * train` wrote as its run and step, an upstream model, the pinned prompts); a run that did not finish refused by name;
 * the URI `agl eval --baseline` prints.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { compareEvalRuns, compareUri, EXTENSION_ID, evalRunInfo, evalVersion } from '../../protocol/eval-compare.js';
import { compareTasks } from '../../protocol/eval-stats.js';
import type { EvalTaskResult } from '../../protocol/eval.js';
import type { TrainingRun } from '../../protocol/store.js';
import { rowsShown, summaryWords } from '../../webview/compare/model.js';
import { calcEvalConfig, evalSummary, taskResult } from './eval-records.js';

const task = (id: string, mean: number, answer: string) => taskResult(id, mean, answer);

function evalRun(id: string, model: string | null, tasks: EvalTaskResult[], createdAt: number, status: TrainingRun['status'] = 'succeeded'): TrainingRun {
  const config = calcEvalConfig(model);
  const summary = evalSummary(tasks);
  return {
    id,
    agent: config.agent,
    kind: 'eval',
    status,
    config: config as never,
    step: 0,
    totalSteps: 0,
    checkpointDir: null,
    summary: summary as never,
    createdAt,
    updatedAt: createdAt,
  };
}

describe('comparing two eval runs', () => {
  const base = evalRun(
    'eval-a',
    'samples/calc/warmup',
    [task('t1', 1, '7'), task('t2', 1, '7'), task('t3', 0, '6'), task('t4', 0, '5'), task('gone', 1, '7')],
    1,
  );
  const after = evalRun(
    'eval-b',
    '/data/runs/run-abc/policy-40',
    [task('t1', 1, '7'), task('t2', 0, '8'), task('t3', 1, '7'), task('t4', 1, '7'), task('new', 0, '1')],
    2,
  );

  it('gives per task both results and how it moved, and the paired test agl eval --baseline gives', () => {
    const v = compareEvalRuns(base, after);
    assert.deepEqual(
      v.rows.map((r) => [r.id, r.change, r.base?.answer ?? null, r.run?.answer ?? null]),
      [
        ['t1', 'same', '7', '7'],
        ['t2', 'regression', '7', '8'],
        ['t3', 'fix', '6', '7'],
        ['t4', 'fix', '5', '7'],
        ['new', 'only', null, '1'],
        ['gone', 'only', '7', null],
      ],
    );
    const expected = compareTasks(
      'eval-a',
      new Map([
        ['t1', 1],
        ['t2', 1],
        ['t3', 0],
        ['t4', 0],
        ['gone', 1],
      ]),
      new Map([
        ['t1', 1],
        ['t2', 0],
        ['t3', 1],
        ['t4', 1],
        ['new', 0],
      ]),
    );
    assert.deepEqual(v.comparison, expected);
    assert.deepEqual([v.comparison.wins, v.comparison.losses, v.comparison.ties, v.comparison.unmatched], [2, 1, 1, 2]);
    // Three tasks differ, all by 1: the exact two-sided p of a 2-to-1 split is 1.
    assert.equal(v.comparison.test.p, 1);
    assert.equal(v.base.version, 'warmup');
    assert.equal(v.run.version, 'run-abc step 40');
  });

  it('filters the rows to the regressions, the fixes or all, and says the verdict in words', () => {
    const v = compareEvalRuns(base, after);
    assert.deepEqual(
      rowsShown(v.rows, 'regressions').map((r) => r.id),
      ['t2'],
    );
    assert.deepEqual(
      rowsShown(v.rows, 'fixes').map((r) => r.id),
      ['t3', 't4'],
    );
    assert.equal(rowsShown(v.rows, 'all').length, 6);
    const w = summaryWords(v);
    assert.equal(w.means, '0.500 → 0.750');
    assert.match(w.test, /^Wilcoxon signed-rank p = 1\.0000 \(exact, 3 tasks differ\)$/);
    assert.match(w.verdict, /^not significant \(p ≥ 0\.05\): no evidence of a change against warmup; 2 tasks in only one run, left out$/);
  });

  it('calls a significant change better or worse, as agl eval does', () => {
    const ids = Array.from({ length: 8 }, (_, i) => `q${i}`);
    const worse = compareEvalRuns(
      evalRun(
        'eval-c',
        null,
        ids.map((id) => task(id, 1, '7')),
        1,
      ),
      evalRun(
        'eval-d',
        null,
        ids.map((id) => task(id, 0, '8')),
        2,
      ),
    );
    assert.equal(worse.comparison.test.p, 2 / 256);
    assert.match(summaryWords(worse).verdict, /^significant \(p < 0\.05\): worse than the served policy$/);
  });

  it('takes the direction from the paired test, as agl eval does: many small drops and one large gain read worse', () => {
    // 14 tasks 0.55 -> 0.50, one 0.10 -> 1.00: the mean rises, the signed-rank test says a drop (p = 214 / 32768).
    const ids = Array.from({ length: 15 }, (_, i) => `q${i}`);
    const v = compareEvalRuns(
      evalRun(
        'eval-e',
        null,
        ids.map((id, i) => task(id, i === 14 ? 0.1 : 0.55, '7')),
        1,
      ),
      evalRun(
        'eval-f',
        null,
        ids.map((id, i) => task(id, i === 14 ? 1 : 0.5, '7')),
        2,
      ),
    );
    assert.ok(v.comparison.mean > v.comparison.baselineMean);
    assert.match(
      summaryWords(v).verdict,
      /^significant \(p < 0\.05\): worse than the served policy \(by the ranked per-task changes; the mean moved the other way\)$/,
    );
    // Means of repeated runs equal but for float rounding: the row is the same, not a fix or a regression.
    const noise = compareEvalRuns(
      evalRun('eval-g', null, [task('q0', (0.1 + 0.2 + 0.3) / 3, '7')], 3),
      evalRun('eval-h', null, [task('q0', (0.3 + 0.2 + 0.1) / 3, '7')], 4),
    );
    assert.deepEqual([noise.rows[0]!.change, noise.comparison.ties], ['same', 1]);
  });

  it('refuses a run that did not finish, naming it', () => {
    assert.throws(
      () => compareEvalRuns(base, evalRun('eval-x', null, [task('t1', 1, '7')], 3, 'cancelled')),
      /run eval-x is not a finished eval run \(eval, cancelled\)/,
    );
  });

  it('names the agent version an eval run measured', () => {
    assert.equal(
      evalVersion({ llm: { upstream: { url: 'http://127.0.0.1:9/v1', model: 'gpt-x', keyEnv: 'K' }, model: null }, prompts: { system: 'cand-3' } }),
      'gpt-x (system=cand-3)',
    );
    assert.equal(evalVersion({ llm: { upstream: null, model: 'C:\\runs\\run-7\\policy-12' } }), 'run-7 step 12');
    assert.equal(evalVersion({ llm: { upstream: null, model: 'builtin:0.8m' } }), 'builtin:0.8m');
    const info = evalRunInfo(base);
    assert.deepEqual([info.data, info.mean, info.tasks, info.passAtK], ['/project/samples/calc/data/calc.eval.jsonl', 0.6, 5, 0.6]);
  });

  it('names the URI agl eval --baseline prints with the extension the package declares', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { publisher: string; name: string };
    assert.equal(EXTENSION_ID, `${pkg.publisher}.${pkg.name}`);
    assert.equal(compareUri('eval-1', 'eval 2'), 'vscode://agent-lightning.agent-lightning-vscode/compare?base=eval-1&run=eval%202');
  });
});
