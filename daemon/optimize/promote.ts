/**
 * `agl optimize promote RUN [CANDIDATE]`: nothing replaces a user's prompt without their say (issue #40 item 5). This
 * publishes a candidate of an optimization (default: the run's best) as the promoted text of each of its prompts, for
 * the run's agent: `llm.prompt(name, seed)` returns it outside optimization from then on. A prompt whose seed is a file
 * also gets the text in a file: `<name>.optimized.md` beside the seed, or the seed file itself with `apply`. `--clear`
 * undoes it: the agent reads the seeds in its code again.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { OptimizationSummary, PromptCandidate } from '../../protocol/prompts.js';

export interface Promoted {
  runId: string;
  agent: string;
  candidate: string;
  prompts: { name: string; text: string; file: string | null }[];
}

/** The candidate `which` names (its id or its ordinal in the run), or the run's best. */
async function candidateOf(store: LightningStore, runId: string, which: string | undefined): Promise<PromptCandidate> {
  const run = await store.getTrainingRun(runId);
  if (!run || run.kind !== 'optimize') throw new Error(`no optimization run ${runId} in this store (agl status lists the runs)`);
  const summary = run.summary as OptimizationSummary;
  const all = await store.listPromptCandidates(runId);
  const id = which ?? summary.bestCandidate;
  if (!id) throw new Error(`run ${runId} has no best candidate yet (it has not scored one on val): name a candidate`);
  const c = all.find((x) => x.id === id || String(x.ordinal) === id);
  if (!c) throw new Error(`run ${runId} has no candidate ${id} (its candidates: ${all.map((x) => x.ordinal).join(', ') || 'none'})`);
  if (c.status === 'refused') throw new Error(`candidate ${c.id} was refused (${c.reason}): it was never scored`);
  return c;
}

/** Promotes the candidate's texts and writes each file seed's text beside it (or into it, with `apply`). */
export async function promote(store: LightningStore, runId: string, which: string | undefined, o: { apply: boolean }): Promise<Promoted> {
  const c = await candidateOf(store, runId, which);
  const run = (await store.getTrainingRun(runId))!;
  const files = (run.summary as OptimizationSummary).seedFiles ?? {};
  const out: Promoted = { runId, agent: run.agent, candidate: c.id, prompts: [] };
  for (const [name, text] of Object.entries(c.prompts)) {
    await store.promotePrompt({ agent: run.agent, name, text, candidateId: c.id, runId, by: 'agl optimize promote' });
    const seedFile = files[name];
    let file: string | null = null;
    if (seedFile) {
      file = o.apply ? seedFile : join(dirname(seedFile), `${basename(seedFile, extname(seedFile))}.optimized.md`);
      const endsInNewline = existsSync(seedFile) && readFileSync(seedFile, 'utf8').endsWith('\n');
      writeFileSync(file, endsInNewline && !text.endsWith('\n') ? `${text}\n` : text);
    }
    out.prompts.push({ name, text, file });
  }
  return out;
}

/** Clears the promoted texts of the run's prompts for its agent (`--clear`): the names that had one. */
export async function clearPromoted(store: LightningStore, runId: string): Promise<{ runId: string; agent: string; cleared: string[] }> {
  const run = await store.getTrainingRun(runId);
  if (!run || run.kind !== 'optimize') throw new Error(`no optimization run ${runId} in this store (agl status lists the runs)`);
  const names = Array.isArray(run.config.prompts) ? run.config.prompts.filter((p): p is string => typeof p === 'string') : [];
  const cleared: string[] = [];
  for (const name of names) if (await store.clearPromotedPrompt({ agent: run.agent, name, by: 'agl optimize promote --clear' })) cleared.push(name);
  return { runId, agent: run.agent, cleared };
}
