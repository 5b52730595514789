/**
 * `agl export --format jsonl [--run ID] [--out FILE]`: every transition a training run used, one JSON
 * line each, with its credit and GRPO advantage joined to the LLM call's span (prompt and completion
 * token ids and text, log-probs), for people who train larger models elsewhere (TRL, verl).
 */
import { createWriteStream } from 'node:fs';
import { AGL, GENAI } from '../../protocol/spans.js';
import { numberArrayAttr } from '../../protocol/span-reading.js';
import type { Span } from '../../protocol/store.js';
import { DEFAULT_POLICY, isOnePolicy, ONE_POLICY, policySet } from '../../protocol/policy-set.js';
import { recordedTrainConfig } from '../../protocol/train-config.js';
import { openStore } from '../store/index.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { resolveDataDir } from '../../client/daemon-state.js';
import { EXPORT_COMMAND } from '../../protocol/cli-commands.js';
import { parseCommand } from './flags.js';

function text(span: Span | undefined, key: string): unknown {
  const v = span?.attributes[key];
  if (typeof v !== 'string') return null;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

export async function exportTransitions(store: LightningStore, runId: string, write: (line: string) => void): Promise<number> {
  const transitions = await store.queryTransitions({ runId });
  // The policy of each call, from the run's policy set: its role's, else the default policy (or the run's one policy).
  const config = recordedTrainConfig((await store.getTrainingRun(runId))?.config);
  const set = config ? policySet(config) : null;
  const policyOf = (role: string | null | undefined): string => (role && set?.owners[role]) || (!set || isOnePolicy(set) ? ONE_POLICY : DEFAULT_POLICY);
  const spansByRollout = new Map<string, Map<string, Span>>();
  let n = 0;
  for (const t of transitions) {
    let spans = spansByRollout.get(t.rolloutId);
    if (!spans) {
      spans = new Map((await store.querySpans({ rolloutId: t.rolloutId, attemptId: t.attemptId })).map((s) => [s.spanId, s]));
      spansByRollout.clear(); // transitions come grouped by rollout: keep memory flat
      spansByRollout.set(t.rolloutId, spans);
    }
    const s = spans.get(t.spanId);
    write(
      `${JSON.stringify({
        ...t,
        policy: typeof s?.attributes[AGL.policyName] === 'string' ? s.attributes[AGL.policyName] : policyOf(t.agentName),
        policyVersion: typeof s?.attributes[AGL.policyVersion] === 'number' ? s.attributes[AGL.policyVersion] : null,
        promptTokenIds: numberArrayAttr(s?.attributes[AGL.promptTokenIds]),
        completionTokenIds: numberArrayAttr(s?.attributes[AGL.completionTokenIds]),
        completionLogprobs: numberArrayAttr(s?.attributes[AGL.completionLogprobs]),
        prompt: text(s, GENAI.inputMessages),
        completion: text(s, GENAI.outputMessages),
      })}\n`,
    );
    n++;
  }
  return n;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(EXPORT_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
  const a = parsed.values;
  if (a.format !== 'jsonl') {
    process.stderr.write(`agl export: --format ${a.format} is not supported; use --format jsonl\n`);
    return 2;
  }
  const store = await openStore(a.store ?? process.env.AGL_STORE ?? { dataDir: resolveDataDir(a['data-dir']) });
  try {
    let runId = a.run;
    if (!runId) {
      const runs = await store.listTrainingRuns();
      const latest = runs.sort((x, y) => y.createdAt - x.createdAt)[0];
      if (!latest) {
        process.stderr.write('agl export: this store has no training runs yet (run `agl train` first)\n');
        return 1;
      }
      runId = latest.id;
    } else if (!(await store.getTrainingRun(runId))) {
      process.stderr.write(`agl export: no training run '${runId}' in this store\n`);
      return 1;
    }
    const out = a.out ? createWriteStream(a.out) : process.stdout;
    const n = await exportTransitions(store, runId, (line) => out.write(line));
    if (a.out) await new Promise<void>((res, rej) => (out as ReturnType<typeof createWriteStream>).end((e?: Error | null) => (e ? rej(e) : res())));
    process.stderr.write(`agl export: ${n} transitions of run ${runId}${a.out ? ` -> ${a.out}` : ''}\n`);
    return 0;
  } finally {
    await store.close();
  }
}
