/**
 * A search's context (daemon/optimize/search.ts) on a fresh optimization run of the optimize stack's daemon: the run's
 * own pool, evaluator and proposer against the scripted server, so a test can drive one step of a search (a merge, a
 * reflection) on candidates it sets up, and read what the step rolled out and asked.
 */
import { loadTasks } from '../../daemon/algorithm/run-plan.js';
import { Budget } from '../../daemon/optimize/budget.js';
import { CandidatePool } from '../../daemon/optimize/candidates.js';
import { StoreEvaluator } from '../../daemon/optimize/evaluator.js';
import { readMetaPrompts } from '../../daemon/optimize/meta.js';
import { Proposer } from '../../daemon/optimize/proposer.js';
import type { SearchContext } from '../../daemon/optimize/search.js';
import { storedAgentId } from '../../daemon/runner/agent-ref.js';
import { AGENT_MODEL, OPTIMIZER_MODEL } from '../../samples/apo/scripted-llm.js';
import { deskFlags, type OptimizeStack } from './optimize-stack.js';

/** A search's context on a fresh optimization run of `agent` (its pool, evaluator, proposer: the run's own parts). */
export async function searchContext(stack: OptimizeStack, agent: string, components: string[], rolloutBudget = 1000): Promise<SearchContext> {
  const { store } = stack.conn;
  const run = await store.createTrainingRun({ agent, config: {}, totalSteps: 1, kind: 'optimize' });
  const flags = deskFlags(stack.llm);
  const llm = {
    type: 'llm' as const,
    endpoint: `${stack.daemon.url}/v1`,
    model: AGENT_MODEL,
    backend: 'upstream' as const,
    upstreamUrl: stack.llm.url,
    samplingParams: {},
  };
  const pool = new CandidatePool({
    runId: run.id,
    records: store,
    stored: [],
    maxChars: 8000,
    publish: async (prompts) => {
      const templates = Object.entries(prompts).map(([name, template]) => [name, { type: 'prompt_template' as const, template, engine: 'f-string' as const }]);
      return (await store.addResources({ resources: { llm, ...Object.fromEntries(templates) } })).id;
    },
  });
  const budget = new Budget(rolloutBudget, 0);
  const evaluator = new StoreEvaluator({ store, runId: run.id, agent: storedAgentId(agent), budget, rolloutTimeoutSeconds: 60 });
  const proposer = new Proposer({
    url: stack.llm.url,
    model: OPTIMIZER_MODEL,
    apiKey: 'k',
    runId: run.id,
    priceIn: null,
    priceOut: null,
    retries: 1,
    timeoutMs: 5000,
    backoffMs: 5,
    stored: [],
    record: (c) => store.addOptimizerCall(c),
  });
  return {
    pool,
    evaluator,
    ask: (purpose, content, read) => proposer.ask(purpose, content, read),
    meta: readMetaPrompts(),
    budget,
    train: loadTasks(flags.train!, 'train'),
    val: loadTasks(flags.val!, 'val'),
    components,
    seed: 0,
    minibatch: 3,
    log: () => {},
  };
}
