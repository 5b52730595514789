/**
 * A TypeScript/JavaScript worker process (forked by the runner with tsx loaded): imports agent modules
 * once and runs one attempt at a time through the SDK, sending spans and the outcome over IPC. It stays
 * alive between rollouts, so thousands of rollouts do not pay node + tsx start-up each.
 */
import { pathToFileURL } from 'node:url';
import type { SpanInput } from '../../protocol/store.js';
import { isRolloutAgent, LLM, type AgentFunction } from '../../sdk/index.js';
import { BatchingSink, installTraceparentFetch, runAttempt } from '../../sdk/runner/index.js';
import type { FromWorker, JobOutcome, RunJob, ToWorker } from './protocol.js';

installTraceparentFetch();

const send = (msg: FromWorker) => new Promise<void>((resolve, reject) => process.send!(msg, undefined, {}, (err) => (err ? reject(err) : resolve())));
const modules = new Map<string, Promise<Record<string, unknown>>>();

async function loadAgent(spec: string): Promise<{ fn: AgentFunction; name: string }> {
  const hash = spec.lastIndexOf('#');
  const file = hash >= 0 ? spec.slice(0, hash) : spec;
  const wanted = hash >= 0 ? spec.slice(hash + 1) : '';
  let mod = modules.get(file);
  if (!mod) {
    mod = import(pathToFileURL(file).href) as Promise<Record<string, unknown>>;
    modules.set(file, mod);
  }
  let exports: Record<string, unknown>;
  try {
    exports = await mod;
  } catch (err) {
    modules.delete(file);
    throw new Error(`could not load agent module ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (wanted) {
    const fn = exports[wanted] ?? (wanted === 'default' ? undefined : (exports.default as Record<string, unknown> | undefined)?.[wanted]);
    if (typeof fn !== 'function') throw new Error(`${file} has no exported function '${wanted}' (exports: ${Object.keys(exports).join(', ') || 'none'})`);
    return { fn: fn as AgentFunction, name: wanted };
  }
  const marked = Object.entries(exports).filter(([, v]) => isRolloutAgent(v));
  if (marked.length !== 1)
    throw new Error(
      `${file}: name the agent export (file#export); found ${marked.length} rollout() exports${marked.length ? `: ${marked.map(([k]) => k).join(', ')}` : ''}`,
    );
  return { fn: marked[0][1] as AgentFunction, name: marked[0][0] };
}

async function run(job: RunJob): Promise<void> {
  const sink = new BatchingSink((spans: SpanInput[]) => send({ type: 'spans', spans }), { delayMs: 10 });
  try {
    const { fn, name } = await loadAgent(job.agent);
    const outcome = await runAttempt(
      fn,
      { rolloutId: job.rolloutId, attemptId: job.attemptId, mode: job.mode, task: job.task, llm: new LLM(job.llm), agentName: name },
      sink,
    );
    await send({ type: 'done', attemptId: job.attemptId, outcome });
  } catch (err) {
    const e = err as Error;
    const outcome: JobOutcome = { status: 'failed', reward: null, error: { message: e.message, stack: e.stack }, unrecorded: true };
    await send({ type: 'done', attemptId: job.attemptId, outcome });
  }
}

process.on('message', (msg: ToWorker) => {
  if (msg.type === 'run') void run(msg.job);
  else if (msg.type === 'shutdown') process.disconnect();
});
process.on('unhandledRejection', (err) => {
  console.error('agent: unhandled rejection:', err);
});
void send({ type: 'ready' });
