/**
 * What the optimization view derives from its data (protocol/webview-optimize.ts OptimizationView), pure and without
 * the DOM (test/webview/optimize-model.test.ts): the lineage as tree rows (each candidate under its parent, a merge
 * under its first parent naming the others), how each status and origin is told in words and an icon (never by colour
 * alone), the best candidate, the best score of each val task, and each prompt's change against the parent.
 */
import type { OptimizationSummary, PromptCandidate } from '../../protocol/prompts.js';
import { lineDiff, type DiffLine } from '../../protocol/text-diff.js';
import type { OptimizationCandidate, OptimizationView } from '../../protocol/webview-optimize.js';

/** A status as the view tells it: a codicon and a word (a colour only adds to them). */
export const STATUS_LOOK: Record<PromptCandidate['status'], { icon: string; word: string; title: string }> = {
  accepted: { icon: 'pass', word: 'accepted', title: 'kept: better than its parent on its minibatch, then scored on every val task' },
  rejected: { icon: 'close', word: 'rejected', title: 'scored on its minibatch and not better than its parent: not kept' },
  refused: { icon: 'circle-slash', word: 'refused', title: 'never scored: a check failed before any rollout (the reason says which)' },
  proposed: { icon: 'clock', word: 'proposed', title: 'stored, not decided yet (being scored)' },
};

/** How a candidate came to be, in words. */
export const ORIGIN_WORDS: Record<PromptCandidate['origin'], string> = {
  seed: 'seed',
  reflection: 'reflection',
  merge: 'merge',
  edit: 'edit',
  user: 'your edit',
};

/** `#3`: a candidate by its place in the run (0 is the seed). */
export const label = (c: Pick<OptimizationCandidate, 'ordinal'>): string => `#${c.ordinal}`;

/** One row of the lineage tree. */
export interface LineageRow {
  candidate: OptimizationCandidate;
  depth: number;
  /** For a merge: its other parents (the tree shows it under its first). */
  alsoFrom: OptimizationCandidate[];
  /** Its children, shown below it. */
  children: number;
}

/**
 * The candidates as a tree, depth first: the seed (and any candidate whose parents are not in the run) at the top,
 * each child under its first parent, siblings by ordinal.
 */
export function lineageRows(candidates: readonly OptimizationCandidate[]): LineageRow[] {
  const byId = new Map(candidates.map((c) => [c.id, c]));
  const kids = new Map<string, OptimizationCandidate[]>();
  const roots: OptimizationCandidate[] = [];
  for (const c of [...candidates].sort((a, b) => a.ordinal - b.ordinal)) {
    const parent = c.parents.find((p) => byId.has(p));
    if (parent) kids.set(parent, [...(kids.get(parent) ?? []), c]);
    else roots.push(c);
  }
  const rows: LineageRow[] = [];
  const visit = (c: OptimizationCandidate, depth: number) => {
    const first = c.parents.find((p) => byId.has(p));
    const alsoFrom = c.parents.filter((p) => p !== first && byId.has(p)).map((p) => byId.get(p)!);
    rows.push({ candidate: c, depth, alsoFrom, children: kids.get(c.id)?.length ?? 0 });
    for (const k of kids.get(c.id) ?? []) visit(k, depth + 1);
  };
  for (const r of roots) visit(r, 0);
  return rows;
}

/**
 * The run's best candidate: the highest val mean so far (on a tie, the one the run's summary names, else the lower
 * ordinal); null before any is scored on every val task.
 */
export function bestCandidate(view: Pick<OptimizationView, 'run' | 'candidates'>): OptimizationCandidate | null {
  const named = (view.run.summary as OptimizationSummary).bestCandidate;
  let best: OptimizationCandidate | null = null;
  for (const c of view.candidates) {
    if (c.valMean === null) continue;
    if (best === null || c.valMean > best.valMean! || (c.valMean === best.valMean && c.id === named)) best = c;
  }
  return best;
}

/** Per val task, the best score any candidate reached on it (the grid marks the cells that reach it). */
export function taskBests(view: Pick<OptimizationView, 'candidates' | 'valTasks'>): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of view.valTasks)
    for (const c of view.candidates) {
      const s = c.val[t]?.score;
      if (s !== undefined && s > (out.get(t) ?? -Infinity)) out.set(t, s);
    }
  return out;
}

/** The candidates the grid lists: those with a score on some val task, by ordinal. */
export const gridCandidates = (candidates: readonly OptimizationCandidate[]): OptimizationCandidate[] =>
  candidates.filter((c) => Object.keys(c.val).length > 0).sort((a, b) => a.ordinal - b.ordinal);

/** One prompt of a candidate against its parent's text of it. */
export interface PromptChange {
  name: string;
  text: string;
  /** The parent's text; null for a candidate without a parent in the run (the seed). */
  parentText: string | null;
  /** The line diff against the parent (empty when unchanged or without a parent). */
  diff: DiffLine[];
  changed: boolean;
}

/** Each of the candidate's prompts against its first parent's: the edited one (`component`) first, then by name. */
export function promptChanges(c: OptimizationCandidate, candidates: readonly OptimizationCandidate[]): PromptChange[] {
  const parent = candidates.find((p) => p.id === c.parents[0]) ?? null;
  const names = Object.keys(c.prompts).sort((a, b) => Number(b === c.component) - Number(a === c.component) || a.localeCompare(b));
  return names.map((name) => {
    const text = c.prompts[name]!;
    const parentText = parent ? (parent.prompts[name] ?? '') : null;
    const changed = parentText !== null && parentText !== text;
    return { name, text, parentText, diff: changed ? lineDiff(parentText, text) : [], changed };
  });
}

/** "0.713" for a score, "—" for none. */
export const fmtScore = (v: number | null | undefined): string => (v === null || v === undefined ? '—' : v.toFixed(3));

/**
 * The optimizer's reflection as the view shows it, without its ``` fences: a fenced block holding one of the
 * candidate's new prompt texts (the diff beside shows that) becomes a line naming it; any other block keeps its text,
 * unfenced. `raw` is what the optimizer answered, one click away in the view.
 */
export function reflectionProse(raw: string, prompts: Readonly<Record<string, string>>): string {
  const promptOf = (text: string) => Object.keys(prompts).find((name) => prompts[name]!.trim() === text.trim()) ?? null;
  const unfenced = raw
    .replace(/```[^\n`]*\n([\s\S]*?)```/g, (_block, body: string) => {
      const name = promptOf(body);
      return name ? `[the new text of ${name}: the diff shows it]` : body.replace(/\n$/, '');
    })
    .replace(/^```[^\n`]*$/gm, '') // a fence the answer left open
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const onlyTheText = unfenced.replace(/\[the new text of [^\]]*: the diff shows it\]/g, '').trim() === '';
  return onlyTheText ? '[the answer was the new text only: the diff shows it]' : unfenced;
}

/**
 * What to do next with the run, in words (the view says it above everything else): promote its best (`agl optimize
 * promote RUN N`, or Apply), or, once promoted, that the agent reads it until cleared and how to clear it. Null while
 * the run goes on or before a candidate beat nothing to promote.
 */
export function nextStep(view: Pick<OptimizationView, 'run' | 'candidates' | 'promoted'>, best: OptimizationCandidate | null): string | null {
  if (view.run.status === 'running') return null;
  const run = view.run.id;
  const clear = `until cleared: agl optimize promote ${run} --clear`;
  const fromHere = view.promoted.filter((p) => p.runId === run && p.candidateId);
  if (fromHere.length) {
    const promoted = view.candidates.find((c) => c.id === fromHere[0]!.candidateId);
    const names = fromHere.map((p) => p.name).join(', ');
    return `Promoted ${promoted ? label(promoted) : fromHere[0]!.candidateId}: ${view.run.agent} reads its ${names} instead of the seed, ${clear}.`;
  }
  if (!best) return null;
  if (best.ordinal === 0) return 'The seed is still the best: nothing to promote.';
  const other = view.promoted.length ? ` (it replaces the text promoted now, from ${view.promoted[0]!.runId ?? 'an edit by hand'})` : '';
  return `Next step: promote ${label(best)}: agl optimize promote ${run} ${best.ordinal}, or Apply…${other}; the agent reads it instead of the seed ${clear}.`;
}
