/**
 * When the optimizer's model fails (#40 item 4): a 429, a 500, a timeout, an empty or a cut-off answer is tried again
 * after a backoff (the server's retry-after when it gives one); when the tries run out, the proposal is dropped with
 * its reason and the run goes on; a refused key stops the run at once, saying which flag to fix. Every call is stored
 * with its attempts, tokens and cost; a resumed run gets call k's stored answer without calling, and asking call k
 * something else is an error. Real store, the real `openai` client, the scripted server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { promptFromAnswer } from '../../daemon/optimize/meta.js';
import { Proposer, type ProposerOptions } from '../../daemon/optimize/proposer.js';
import type { OptimizerCall } from '../../protocol/prompts.js';
import { type Fault, OPTIMIZER_MODEL } from '../../samples/apo/scripted-llm.js';
import { statedRules } from '../../samples/apo/world.js';
import { DESK_AGENT, deskFlags, type OptimizeStack, startOptimizeStack } from '../helpers/optimize-stack.js';

let stack: OptimizeStack;
/** Faults by optimizer request number (retries included), as the server counts them. */
let faultAt: (n: number) => Fault | null = () => null;
before(async () => {
  stack = await startOptimizeStack({ workers: 6, perProcess: 3, llm: { faults: (n) => faultAt(n), timeoutHoldMs: 1_500, dropPlaceholder: 0, unfenced: 0 } });
});
after(() => stack.close());

const REQUEST = 'Instructions:\n```\nAnswer.\n\nRecord: {record}\nQuestion: {question}\n```\nFeedback: yes/no answer: expected yes, got true\n';

async function proposer(o: Partial<ProposerOptions> = {}): Promise<{ p: Proposer; runId: string }> {
  const run = await stack.conn.store.createTrainingRun({ agent: 'a.ts#x', config: {}, totalSteps: 1, kind: 'optimize' });
  const base = {
    url: stack.llm.url,
    model: OPTIMIZER_MODEL,
    apiKey: 'k',
    runId: run.id,
    priceIn: 2,
    priceOut: 8,
    retries: 3,
    timeoutMs: 1000,
    backoffMs: 5,
    stored: [],
  };
  return { p: new Proposer({ ...base, record: (c) => stack.conn.store.addOptimizerCall(c), ...o }), runId: run.id };
}

test('429, 500, a timeout, an empty and a cut-off answer are each tried again, and the call stored with its attempts and cost', async () => {
  for (const fault of ['rate-limit', 'server-error', 'timeout', 'empty', 'unparseable'] as const) {
    const { p, runId } = await proposer();
    const n = stack.llm.counts.optimizer;
    faultAt = (k) => (k === n || k === n + 1 ? fault : null);
    const answer = await p.ask('reflect', REQUEST, promptFromAnswer);
    assert.ok('text' in answer && statedRules(answer.text).some((r) => r.id === 'yesno'), `${fault}: ${JSON.stringify(answer)}`);
    const [call] = await stack.conn.store.listOptimizerCalls(runId);
    assert.equal(call!.attempts, 3, fault);
    assert.equal(call!.error, null);
    assert.ok(call!.promptTokens > 0 && call!.completionTokens > 0);
    assert.equal(call!.cost, (call!.promptTokens * 2 + call!.completionTokens * 8) / 1e6);
  }
});

test('when the tries run out the proposal is dropped with its reason, and stored so', async () => {
  const { p, runId } = await proposer({ retries: 2 });
  faultAt = () => 'server-error';
  const answer = await p.ask('reflect', REQUEST, promptFromAnswer);
  assert.ok('dropped' in answer && /500.*after 3 tries/.test(answer.dropped), JSON.stringify(answer));
  const [call] = await stack.conn.store.listOptimizerCalls(runId);
  assert.equal(call!.response, null);
  assert.equal(call!.attempts, 3);
  assert.match(call!.error!, /500/);
  faultAt = () => null;
});

test("a resumed run's call k is answered from the store; asking call k something else is an error", async () => {
  const { p, runId } = await proposer();
  faultAt = () => null;
  const first = await p.ask('reflect', REQUEST, promptFromAnswer);
  const stored: OptimizerCall[] = await stack.conn.store.listOptimizerCalls(runId);
  const served = stack.llm.counts.optimizer;
  const replay = new Proposer({ ...(p as unknown as { o: ProposerOptions }).o, stored });
  assert.deepEqual(await replay.ask('reflect', REQUEST, promptFromAnswer), first);
  assert.equal(stack.llm.counts.optimizer, served, 'the stored answer was used, the server not asked');
  const other = new Proposer({ ...(p as unknown as { o: ProposerOptions }).o, stored });
  await assert.rejects(other.ask('reflect', `${REQUEST}\nsomething else`, promptFromAnswer), /optimizer call 0 of run .* was asked something else before/);
});

test('a run whose optimizer fails now and then drops those proposals and goes on to a better prompt', async () => {
  const kinds: Fault[] = ['rate-limit', 'server-error', 'timeout', 'empty', 'unparseable'];
  faultAt = (n) => (n % 2 === 1 ? kinds[Math.floor(n / 2) % kinds.length]! : null);
  const o = await stack.optimize(DESK_AGENT, deskFlags(stack.llm, { seed: '1', 'optimizer-retries': '0', 'optimizer-timeout': '1' }));
  faultAt = () => null;
  const calls = await stack.conn.store.listOptimizerCalls(o.runId);
  const failed = calls.filter((c) => c.response === null);
  assert.ok(failed.length >= 2 && new Set(failed.map((c) => c.error!.split(':')[0])).size >= 2, `failed calls: ${failed.map((c) => c.error).join(' | ')}`);
  const cs = await stack.conn.store.listPromptCandidates(o.runId);
  assert.equal(cs.filter((c) => c.reason?.startsWith("the optimizer's answer was dropped")).length, failed.length);
  assert.notEqual(o.stopReason, 'failed');
  assert.ok(o.scores.best.val! > o.scores.seed.val! + 0.3, `${o.scores.seed.val} -> ${o.scores.best.val}`);
});

test('a refused key stops the run, naming the flags to check', async () => {
  faultAt = () => 'unauthorized';
  const o = await stack.optimize(DESK_AGENT, deskFlags(stack.llm, { seed: '2', budget: '120' }));
  faultAt = () => null;
  assert.equal(o.stopReason, 'failed');
  assert.match(o.error!, /refused the request \(401.*check --optimizer-url, --optimizer-model and the key in --optimizer-key-env/);
  assert.equal(o.bestCandidate, o.seedCandidate);
});
