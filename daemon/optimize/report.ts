/**
 * What `agl optimize` prints at the end, on a terminal: seed against best on val and test, how the run ended and what
 * it spent, and each prompt's change as a line diff (`-` the seed's lines, `+` the best's); with --json, the one
 * object the issue names (runId, prompts, scores, rollouts, optimizerCalls, candidates).
 */
import { lcsDiff } from '../../protocol/text-diff.js';
import type { OptimizeOutcome } from './optimize-run.js';

/** The --json object. */
export function outcomeJson(o: OptimizeOutcome): Record<string, unknown> {
  return { runId: o.runId, prompts: o.prompts, scores: o.scores, rollouts: o.rollouts, optimizerCalls: o.optimizerCalls, candidates: o.candidates };
}

const score = (x: number | null) => (x === null ? '-' : x.toFixed(3));

/** ", 96 judge calls (41000 + 3100 tokens, cost 0.0123)": what scoring the rollouts cost, apart from the optimizer. */
const judgeSpent = (j: OptimizeOutcome['judge']): string =>
  j ? `, ${j.calls} judge calls (${j.tokens.prompt} + ${j.tokens.completion} tokens${j.cost === null ? '' : `, cost ${j.cost.toFixed(4)}`})` : '';

/** The end in words, then each prompt's diff. */
export function outcomeLines(o: OptimizeOutcome): string[] {
  const { seed, best } = o.scores;
  const done = best.val === 1 ? 'the best solves every val task' : 'nothing was left to try';
  const why = { budget: 'its budget was spent', completed: done, cancelled: 'it was stopped', failed: `it failed: ${o.error}` }[o.stopReason];
  const spent =
    `${o.rollouts} of ${o.budget} rollouts, ${o.optimizerCalls} optimizer calls (${o.tokens.prompt} + ${o.tokens.completion} tokens` +
    `${o.cost === null ? '' : `, cost ${o.cost.toFixed(4)}`})${judgeSpent(o.judge)}, ${o.candidates} candidates`;
  const lines = [
    `agl optimize: run ${o.runId} ended: ${why}; ${spent}`,
    `agl optimize: val  ${score(seed.val)} (seed) -> ${score(best.val)} (best, ${o.bestCandidate})`,
    ...(seed.test !== null || best.test !== null ? [`agl optimize: test ${score(seed.test)} (seed) -> ${score(best.test)} (best, held out)`] : []),
  ];
  for (const [name, p] of Object.entries(o.prompts)) {
    if (p.seed === p.best) lines.push(`prompt ${name}: unchanged`);
    else lines.push(`prompt ${name}:`, ...printedLineDiff(p.seed, p.best).map((l) => `  ${l}`));
  }
  lines.push(
    o.bestCandidate === o.seedCandidate
      ? 'agl optimize: no candidate beat the seed on val; nothing to promote'
      : `agl optimize: nothing has changed for your agent yet; to use the best: agl optimize promote ${o.runId}` +
          (Object.keys(o.seedFiles).length ? ' (writes <name>.optimized.md beside a file seed; --apply writes the file itself)' : ''),
  );
  return lines;
}

/** The seed's text against the best's as printed lines (protocol/text-diff.ts, the one line diff): unchanged lines with two spaces, the seed's with `-`, the new text's with `+`. */
export function printedLineDiff(seed: string, best: string): string[] {
  const mark = { same: ' ', del: '-', add: '+' } as const;
  return lcsDiff(seed.split('\n'), best.split('\n')).map(({ op, item }) => `${mark[op]} ${item}`);
}
