/**
 * What Apply does with a prompt candidate, decided without VS Code (test/extension/apply-plan.test.ts): for each of its
 * prompts, a seed that is a file (the run's summary names it: `agl optimize` read it from the agent's llm.prompt span)
 * gets the candidate's text written into that file, after VS Code's diff editor showed the file against it; any other
 * seed is a string in the agent's code, so the candidate's text is promoted (the version the agent gets outside
 * optimization, until cleared), after a diff of the seed's text against it. A prompt whose text is already the file's,
 * or already the promoted one, needs nothing. Nothing happens before the user says so (optimize-apply.ts asks).
 */
import type { PromotedPrompt, PromptCandidate } from '../protocol/prompts.js';
import type { TrainingRun } from '../protocol/store.js';

/** One prompt's part of an Apply. */
export type ApplyStep =
  /** Write `text` into the seed file `file` (its text now: `current`); `clearPromoted`: a promoted text the agent reads instead goes. */
  | { kind: 'file'; name: string; file: string; current: string; text: string; clearPromoted: boolean }
  /** Promote `text` for the run's agent (`seed`: the text the agent reads without a promotion). */
  | { kind: 'promote'; name: string; seed: string; text: string }
  /** Already what the agent reads: `why` says so. */
  | { kind: 'same'; name: string; why: string };

export interface ApplyPlan {
  agent: string;
  candidate: PromptCandidate;
  steps: ApplyStep[];
}

/** The prompts' seed files a run recorded (summary.seedFiles, absolute paths by prompt name), read safely. */
export function seedFiles(run: TrainingRun): Record<string, string> {
  const files = (run.summary as { seedFiles?: unknown }).seedFiles;
  if (typeof files !== 'object' || files === null) return {};
  return Object.fromEntries(Object.entries(files).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/**
 * The steps of applying `candidateId` of `run`: `candidates` the run's (the seed, ordinal 0, holds each prompt's seed
 * text), `promoted` what the agent gets now, `readFile` a seed file's text (null: it is gone, so the text is promoted).
 */
export function applyPlan(
  run: TrainingRun,
  candidates: readonly PromptCandidate[],
  candidateId: string,
  promoted: readonly PromotedPrompt[],
  readFile: (path: string) => string | null,
): ApplyPlan {
  const candidate = candidates.find((c) => c.id === candidateId);
  if (!candidate) throw new Error(`candidate '${candidateId}' is not one of optimization ${run.id}'s (it has ${candidates.length})`);
  const seed = candidates.find((c) => c.ordinal === 0);
  const files = seedFiles(run);
  const steps = Object.entries(candidate.prompts).map(([name, text]): ApplyStep => {
    const file = files[name];
    const current = file ? readFile(file) : null;
    const now = promoted.find((p) => p.agent === run.agent && p.name === name);
    if (file && current !== null) {
      // A promoted text wins over the seed: the file's new text reaches the agent only once that promotion is cleared.
      if (current === text && !now) return { kind: 'same', name, why: `${file} already holds it` };
      return { kind: 'file', name, file, current, text, clearPromoted: now !== undefined };
    }
    if (now?.text === text) return { kind: 'same', name, why: `it is already promoted for ${run.agent}` };
    return { kind: 'promote', name, seed: now?.text ?? seed?.prompts[name] ?? '', text };
  });
  return { agent: run.agent, candidate, steps };
}

/** The question Apply asks, in words: what will be written where, and what promoted. */
export function describePlan(plan: ApplyPlan, relative: (file: string) => string = (f) => f): { message: string; detail: string } {
  const label = `#${plan.candidate.ordinal}`;
  const lines = plan.steps.map((s) =>
    s.kind === 'file'
      ? `• "${s.name}": write its text into ${relative(s.file)} (the file is the prompt's seed)` +
        (s.clearPromoted ? `, and clear the text promoted for ${plan.agent}, which it reads instead of the file` : '')
      : s.kind === 'promote'
        ? `• "${s.name}": promote it for ${plan.agent}: the agent reads it instead of the seed in its code until cleared ` +
          `(agl optimize promote ${plan.candidate.runId} --clear clears it; agl optimize promote ${plan.candidate.runId} ${plan.candidate.ordinal} does the same as Apply)`
        : `• "${s.name}": nothing to do, ${s.why}`,
  );
  return { message: `Apply candidate ${label}?`, detail: lines.join('\n') };
}
