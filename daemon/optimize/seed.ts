/**
 * Where a run's seed comes from: the texts the agent uses today. They live in the agent's code (the seed of each
 * `llm.prompt(name, seed)` call, a string or a file) or in the store (a text promoted earlier), so the run reads them
 * from the agent itself: one probe rollout of the first val task, with the run's LLM and no candidate, whose
 * `llm.prompt` spans record each prompt's text as the agent got it, where it came from (promoted or seed) and, for a
 * file seed, its file (what `agl optimize promote` writes beside). The seed candidate then holds those texts, so every
 * rollout of the run scores exactly the texts it names, whatever is promoted meanwhile.
 */
import type { LightningStore } from '../../protocol/lightning-store.js';
import { promptVersions } from '../../protocol/span-reading.js';
import type { Task } from '../algorithm/rollouts.js';
import { rolloutConfig } from './evaluator.js';

export interface SeedPrompts {
  prompts: Record<string, string>;
  /** Each prompt's seed file (absolute), when its seed is a file. */
  files: Record<string, string>;
  /** Where each text came from: the agent's seed, or the text promoted for it. */
  sources: Record<string, string>;
}

export interface ProbeOptions {
  store: LightningStore;
  runId: string;
  agent: string;
  /** The run's LLM resource (no prompt_template: the agent reads its own texts). */
  resourcesId: string;
  names: readonly string[];
  task: Task;
  timeoutSeconds: number;
  signal?: AbortSignal;
}

/** Rolls out the probe (or finds the one a killed run left) and reads the texts of `names` from its spans. */
export async function probeSeed(o: ProbeOptions): Promise<SeedPrompts & { enqueued: boolean }> {
  const before = (await o.store.queryRollouts({ runId: o.runId, limit: 500 })).items.find((r) => r.metadata.probe === true && r.status !== 'cancelled');
  const rollout =
    before ??
    (await o.store.enqueueRollout({
      input: o.task.input,
      mode: 'val',
      agent: o.agent,
      resourcesId: o.resourcesId,
      config: rolloutConfig(o.timeoutSeconds),
      metadata: { runId: o.runId, taskId: o.task.id, probe: true },
    }));
  let ended = null;
  while (!ended) {
    if (o.signal?.aborted) throw new Error('interrupted');
    [ended] = await o.store.waitForRollouts([rollout.id], 2_000);
  }
  const spans = await o.store.querySpans({ rolloutId: rollout.id, attemptId: 'latest' });
  // The texts it read, unfilled (a text read twice is one reading).
  const read = promptVersions(spans).filter((r) => r.template !== null);
  const out = { prompts: {} as Record<string, string>, files: {} as Record<string, string>, sources: {} as Record<string, string>, enqueued: !before };
  for (const name of o.names) {
    const r = read.find((x) => x.name === name);
    if (!r) continue;
    out.prompts[name] = r.template!;
    out.sources[name] = r.source;
    if (r.file) out.files[name] = r.file;
  }
  const missing = o.names.filter((n) => !(n in out.prompts));
  if (missing.length) {
    const attempt = ended.status === 'succeeded' ? null : await o.store.getLatestAttempt(rollout.id);
    const why = attempt?.error ? ` (the rollout ${ended.status}: ${attempt.error.message.split('\n')[0]})` : '';
    const seen = read.map((r) => r.name);
    throw new Error(
      `the agent read no prompt named ${missing.join(', ')} in a rollout of val task ${o.task.id}${why}; ` +
        (seen.length ? `it read ${seen.join(', ')}` : 'it called llm.prompt for none') +
        ': give --prompt the names it passes to llm.prompt(NAME, seed)',
    );
  }
  return out;
}
