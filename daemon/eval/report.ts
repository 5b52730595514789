/**
 * What `agl eval` prints and writes: the per-task lines and the mean (with its interval, pass@k), a comparison with a
 * baseline run in words (wins, losses, ties, the paired test and whether the change is significant), the gates' verdict
 * (--min, --no-worse-than), the object --json prints, and JUnit XML (--junit) for CI: one testsuite, one testcase per
 * task (classname the dataset's file name, time the task's share of the run), a <failure> for a task that did not pass
 * (its answer, what was expected, the grader's reason), an <error> for one whose rollout failed.
 */
import { basename } from 'node:path';
import type { EvalConfig, EvalSummary } from '../../protocol/eval.js';
import { ALPHA, directionSaid, pSaid, type Comparison } from '../../protocol/eval-stats.js';

/** A gate's verdict: which flag, whether it held, and why in words. */
export interface GateResult {
  flag: 'min' | 'no-worse-than';
  ok: boolean;
  said: string;
}

const f3 = (x: number) => x.toFixed(3);
const clip = (s: string | null, n = 80) => (s === null ? '-' : s.length > n ? `${s.slice(0, n)}...` : s);

/** The per-task lines, then the mean, its interval and pass@k. */
export function resultLines(runId: string, s: EvalSummary): string[] {
  const width = Math.min(32, Math.max(4, ...s.tasks.map((t) => t.id.length)));
  const lines = s.tasks.map((t) => {
    const mark = t.passed ? 'pass ' : t.errored ? 'ERROR' : 'FAIL ';
    const scores = s.repeat > 1 ? ` (${t.scores.map((x) => x.toFixed(2)).join(' ')})` : '';
    return `${mark} ${t.id.padEnd(width)} ${f3(t.mean)}${scores}  ${t.passed ? '' : clip(t.reason, 120)}`.trimEnd();
  });
  const passed = s.tasks.filter((t) => t.passed).length;
  const interval = s.interval ? ` (95% interval ${f3(s.interval[0])} to ${f3(s.interval[1])})` : '';
  lines.push(
    `mean ${f3(s.mean)}${interval} over ${s.tasks.length} tasks; pass@${s.repeat} ${f3(s.passAtK)} (${passed} of ${s.tasks.length} passed); run ${runId}`,
  );
  return lines;
}

/** A comparison in words: wins, losses, ties, the means, the test's p-value and whether the change is significant. */
export function comparisonLines(c: Comparison): string[] {
  const d = c.mean - c.baselineMean;
  const verdict = c.significant
    ? `significant (p < ${ALPHA}): ${directionSaid(c, c.baselineRunId)}`
    : `not significant (p >= ${ALPHA}): no evidence of a change against ${c.baselineRunId}`;
  return [
    `against ${c.baselineRunId} on ${c.tasks} shared tasks${c.unmatched ? ` (${c.unmatched} in only one of them, left out)` : ''}: ` +
      `${c.wins} better, ${c.losses} worse, ${c.ties} tied; mean ${f3(c.baselineMean)} -> ${f3(c.mean)} (${d >= 0 ? '+' : ''}${f3(d)})`,
    `  Wilcoxon signed-rank on the per-task means: W+ ${c.test.wPlus} over ${c.test.n} tasks that differ, ${pSaid(c.test.p)} (${c.test.exact ? 'exact' : 'normal approximation'}); ${verdict}`,
  ];
}

/** The gates: --min (the mean reaches SCORE), --no-worse-than (no significant drop against that run: the paired test's direction, not the means'). */
export function gates(s: EvalSummary, min: number | null, noWorse: Comparison | null): GateResult[] {
  const out: GateResult[] = [];
  if (min !== null)
    out.push({
      flag: 'min',
      ok: s.mean >= min,
      said: s.mean >= min ? `mean ${f3(s.mean)} reaches --min ${min}` : `mean ${f3(s.mean)} is below --min ${min}`,
    });
  if (noWorse) {
    const worse = noWorse.significant && noWorse.direction === 'worse';
    out.push({
      flag: 'no-worse-than',
      ok: !worse,
      said: worse
        ? `significantly worse than ${noWorse.baselineRunId} (mean ${f3(noWorse.baselineMean)} -> ${f3(noWorse.mean)}, ${pSaid(noWorse.test.p)})`
        : `no significant drop against ${noWorse.baselineRunId} (${pSaid(noWorse.test.p)})`,
    });
  }
  return out;
}

/** The object `agl eval --json` prints. */
export function outcomeJson(runId: string, s: EvalSummary, comparisons: Record<string, Comparison>, gateResults: GateResult[]): Record<string, unknown> {
  return { runId, ...s, comparisons, gates: gateResults, ok: gateResults.every((g) => g.ok) };
}

/** Text safe inside XML: the five entities escaped, characters XML 1.0 cannot hold dropped. */
export function xmlText(s: string): string {
  return s
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** The evaluation as JUnit XML (the Ant schema's required attributes on testsuite, testcase, failure and error). */
export function junitXml(runId: string, c: EvalConfig, s: EvalSummary, at: Date = new Date()): string {
  const suite = `agl eval ${c.agentSpec}`;
  const classname = basename(c.data.file).replace(/\.jsonl$/, '');
  const seconds = (s.elapsedMs / 1000).toFixed(3);
  const each = (s.elapsedMs / 1000 / Math.max(1, s.tasks.length)).toFixed(3);
  const failures = s.tasks.filter((t) => !t.passed && !t.errored).length;
  const errors = s.tasks.filter((t) => !t.passed && t.errored).length;
  const a = (k: string, v: string | number) => `${k}="${xmlText(String(v))}"`;
  const cases = s.tasks.map((t) => {
    const open = `    <testcase ${a('name', t.id)} ${a('classname', classname)} ${a('time', each)}`;
    if (t.passed) return `${open}/>`;
    const body = `answer:   ${t.answer ?? '(none)'}\nexpected: ${t.expected ?? `(the agent's own reward; scores ${t.scores.join(', ')})`}\nreason:   ${t.reason}\nrollouts: ${t.rolloutIds.join(', ')}`;
    const tag = t.errored ? 'error' : 'failure';
    return `${open}>\n      <${tag} ${a('message', `score ${t.mean.toFixed(3)}: ${t.reason.slice(0, 300)}`)} ${a('type', t.errored ? 'rollout' : t.grader)}>${xmlText(body)}</${tag}>\n    </testcase>`;
  });
  const props = { runId, agent: c.agent, data: c.data.file, repeat: c.repeat, mean: s.mean.toFixed(4), passAtK: s.passAtK.toFixed(4), ...c.prompts };
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites ${a('name', suite)} ${a('tests', s.tasks.length)} ${a('failures', failures)} ${a('errors', errors)} ${a('time', seconds)}>`,
    `  <testsuite ${a('name', suite)} ${a('id', 0)} ${a('package', classname)} ${a('hostname', 'localhost')} ${a('timestamp', at.toISOString().slice(0, 19))} ` +
      `${a('tests', s.tasks.length)} ${a('failures', failures)} ${a('errors', errors)} ${a('skipped', 0)} ${a('time', seconds)}>`,
    '    <properties>',
    ...Object.entries(props).map(([k, v]) => `      <property ${a('name', k)} ${a('value', v)}/>`),
    '    </properties>',
    ...cases,
    '    <system-out/>',
    '    <system-err/>',
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
