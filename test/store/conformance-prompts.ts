/**
 * Conformance, part five: what a prompt optimization (protocol/prompts.ts) keeps in the store. Runs of a kind (training
 * by default; the dashboard's and the CodeLens' numbers are training runs'), candidates with their lineage (the same
 * candidate again is a no-op, another under a stored id or ordinal a conflict), decided once (a score may be filled in
 * later, never changed), optimizer calls stored once by (run, seq), prompts promoted per agent and name with their
 * history and cleared back to the seed, rollouts found by their candidate, and the optimization view assembled from all
 * of it (daemon/store/views-optimize.ts). Called from storeConformance with its per-test store, so every backend (and
 * the HTTP client) runs it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, NotFoundError, type LightningStore } from '../../protocol/lightning-store.js';
import { candidateId, type OptimizerCallInput, type PromptCandidateInput } from '../../protocol/prompts.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import { METRICS } from '../../protocol/metrics.js';
import { agentHeadline } from '../../daemon/store/views.js';
import { optimizationView } from '../../daemon/store/views-optimize.js';
import { rolloutsPage } from '../../daemon/store/views-rollouts.js';
import { reward, run as rollout } from './conformance-search.js';

const AGENT = 'samples/calc/agent.ts#calcAgent';

/** The seed of `runId` (ordinal 0) and a reflection on it, as an optimizer stores them. */
function seedOf(runId: string): PromptCandidateInput {
  const lineage = { parents: [], origin: 'seed' as const, component: null, reflection: null, minibatch: null };
  return { id: candidateId(runId, 0), runId, ordinal: 0, prompts: { system: 'Answer.', planner: 'Plan.' }, ...lineage };
}
function childOf(parent: PromptCandidateInput, ordinal: number, system: string): PromptCandidateInput {
  const lineage = { parents: [parent.id], origin: 'reflection' as const, component: 'system', reflection: 'it skipped the units', minibatch: ['t1', 't2'] };
  return { id: candidateId(parent.runId, ordinal), runId: parent.runId, ordinal, prompts: { ...parent.prompts, system }, ...lineage };
}
const call = (runId: string, seq: number, extra: Partial<OptimizerCallInput> = {}): OptimizerCallInput => ({
  ...{ runId, seq, purpose: 'reflect', model: 'opt-model', requestHash: `h${seq}`, messages: [{ role: 'user', content: `reflect ${seq}` }] },
  ...{ response: `answer ${seq}`, error: null, attempts: 1, promptTokens: 100 + seq, completionTokens: 10 + seq, cost: null, ms: 5 },
  ...extra,
});

async function optimization(store: LightningStore) {
  return store.createTrainingRun({ agent: AGENT, kind: 'optimize', config: {}, totalSteps: 0 });
}

export function promptsConformance(ctx: { readonly store: LightningStore }): void {
  describe('runs of a kind', () => {
    it('records a training run unless told otherwise, and lists runs by kind and agent', async () => {
      const train = await ctx.store.createTrainingRun({ agent: AGENT, config: {}, totalSteps: 2 });
      const opt = await optimization(ctx.store);
      const evaluation = await ctx.store.createTrainingRun({ agent: 'other.ts#agent', kind: 'eval', config: {}, totalSteps: 1 });
      assert.deepEqual([train.kind, opt.kind, evaluation.kind], ['train', 'optimize', 'eval']);
      assert.equal((await ctx.store.getTrainingRun(opt.id))?.kind, 'optimize');
      const ids = async (agent?: string, kind?: 'train' | 'optimize' | 'eval') => (await ctx.store.listTrainingRuns(agent, kind)).map((r) => r.id).sort();
      assert.deepEqual(await ids(undefined, 'optimize'), [opt.id]);
      assert.deepEqual(await ids(AGENT, 'train'), [train.id]);
      assert.deepEqual(await ids('calc/agent.ts#calcAgent', 'optimize'), [opt.id], 'an older form of the agent id');
      assert.deepEqual(await ids(AGENT), [train.id, opt.id].sort());
      assert.deepEqual(await ids(undefined, 'eval'), [evaluation.id]);
    });

    it("gives an agent's headline from its training runs' validations, never an optimization's", async () => {
      const opt = await optimization(ctx.store);
      await ctx.store.addMetrics([{ runId: opt.id, step: 1, name: METRICS.valReward, value: 0.9 }]);
      assert.equal((await agentHeadline(ctx.store, AGENT)).heldOut, null);
      const train = await ctx.store.createTrainingRun({ agent: AGENT, config: {}, totalSteps: 1 });
      await ctx.store.addMetrics([{ runId: train.id, step: 1, name: METRICS.valReward, value: 0.4 }]);
      const headline = await agentHeadline(ctx.store, AGENT);
      assert.deepEqual([headline.source, headline.heldOut?.runId, headline.heldOut?.value], ['held-out', train.id, 0.4]);
    });

    it("counts in an agent's train reward its training runs' rollouts only, never an optimization's train split nor an evaluation's", async () => {
      const train = await ctx.store.createTrainingRun({ agent: AGENT, config: {}, totalSteps: 2 });
      const opt = await optimization(ctx.store);
      const evaluation = await ctx.store.createTrainingRun({ agent: AGENT, kind: 'eval', config: {}, totalSteps: 1 });
      const ended = { agent: AGENT, finish: 'succeeded' as const };
      for (const r of [0, 0.5]) await rollout(ctx.store, 't', [reward(r)], { ...ended, mode: 'train', metadata: { runId: train.id, step: 1 } });
      // Newer than the training run's: an optimization scoring a candidate on its train split (mode train), an
      // evaluation (mode test), a train-mode rollout no run enqueued.
      for (const r of [1, 1])
        await rollout(ctx.store, 't', [reward(r)], { ...ended, mode: 'train', metadata: { runId: opt.id, candidate: candidateId(opt.id, 0), split: 'train' } });
      await rollout(ctx.store, 't', [reward(1)], { ...ended, mode: 'test', metadata: { runId: evaluation.id, taskId: 't' } });
      await rollout(ctx.store, 't', [reward(1)], { ...ended, mode: 'train' });
      const headline = await agentHeadline(ctx.store, AGENT);
      assert.deepEqual([headline.source, headline.recent], ['train', { mode: 'train', count: 2, mean: 0.25 }]);
      assert.equal(headline.text, 'train reward 0.25');
      assert.match(headline.tooltip, /2 latest rollouts of its training runs \(prompt optimizations' and evaluations' rollouts do not count;/);
      assert.deepEqual([headline.rollouts, headline.otherRunRollouts], [3, 3], "the agent's own ended rollouts, its optimization's and eval's apart");
      assert.match(headline.tooltip, /3 rollouts ended \(and 3 rollouts of its evals and optimizations, not counted here\)/);
    });

    it("gives an agent only optimized no reward and no rollouts of its own: its candidates' scores are not its reward", async () => {
      const opt = await optimization(ctx.store);
      for (const split of ['train', 'val'] as const)
        await rollout(ctx.store, 't', [reward(1)], {
          agent: AGENT,
          finish: 'succeeded',
          mode: split,
          metadata: { runId: opt.id, candidate: candidateId(opt.id, 0), split },
        });
      const headline = await agentHeadline(ctx.store, AGENT);
      assert.deepEqual([headline.source, headline.value, headline.rollouts, headline.otherRunRollouts], ['none', null, 0, 2]);
      assert.equal(headline.text, 'not trained or run yet');
    });
  });

  describe('prompt candidates', () => {
    it('stores a candidate with its lineage; the same one again is the stored one, another under its id or ordinal a conflict', async () => {
      const opt = await optimization(ctx.store);
      const seed = await ctx.store.addPromptCandidate(seedOf(opt.id));
      assert.deepEqual([seed.status, seed.reason, seed.resourcesId, seed.decidedAt], ['proposed', null, null, null]);
      assert.deepEqual(seed.scores, { minibatch: null, val: null, test: null });
      assert.deepEqual(await ctx.store.addPromptCandidate(seedOf(opt.id)), seed, 'a resumed optimizer re-adds it');
      await assert.rejects(ctx.store.addPromptCandidate({ ...seedOf(opt.id), prompts: { system: 'Answer!', planner: 'Plan.' } }), ConflictError);
      const child = await ctx.store.addPromptCandidate(childOf(seedOf(opt.id), 1, 'Answer with units.'));
      assert.deepEqual([child.parents, child.component, child.reflection, child.minibatch], [[seed.id], 'system', 'it skipped the units', ['t1', 't2']]);
      await assert.rejects(ctx.store.addPromptCandidate({ ...childOf(seedOf(opt.id), 1, 'Answer with units.'), reflection: 'another' }), /reflection/);
      await assert.rejects(ctx.store.addPromptCandidate({ ...childOf(seedOf(opt.id), 1, 'Other.'), id: 'pc-other' }), /ordinal 1 of run/);
      await assert.rejects(ctx.store.addPromptCandidate(seedOf('run-missing')), NotFoundError);
      await assert.rejects(ctx.store.addPromptCandidate({ ...childOf(seedOf(opt.id), 2, 'x'), parents: ['pc-missing'] }), NotFoundError);
      const elsewhere = await ctx.store.addPromptCandidate(seedOf((await optimization(ctx.store)).id));
      await assert.rejects(
        ctx.store.addPromptCandidate({ ...childOf(seedOf(opt.id), 2, 'x'), parents: [elsewhere.id] }),
        NotFoundError,
        "another run's candidate",
      );
      await assert.rejects(ctx.store.addPromptCandidate({ ...childOf(seedOf(opt.id), 2, 'x'), component: 'critic' }), /is none of the candidate's prompts/);
      await ctx.store.addPromptCandidate(childOf(seedOf(opt.id), 3, 'Third.'));
      await ctx.store.addPromptCandidate(childOf(seedOf(opt.id), 2, 'Second.'));
      assert.deepEqual(
        (await ctx.store.listPromptCandidates(opt.id)).map((c) => [c.ordinal, c.prompts.system]),
        [
          [0, 'Answer.'],
          [1, 'Answer with units.'],
          [2, 'Second.'],
          [3, 'Third.'],
        ],
      );
      assert.deepEqual(await ctx.store.getPromptCandidate(child.id), child);
      assert.equal(await ctx.store.getPromptCandidate('pc-missing'), null);
      assert.deepEqual(await ctx.store.listPromptCandidates('run-missing'), []);
    });

    it('decides a candidate once: the same decision again changes nothing, a score may be filled in, another decision is a conflict', async () => {
      const opt = await optimization(ctx.store);
      await ctx.store.addPromptCandidate(seedOf(opt.id));
      const child = await ctx.store.addPromptCandidate(childOf(seedOf(opt.id), 1, 'Answer with units.'));
      const decision = { status: 'accepted' as const, scores: { minibatch: { parent: 0.25, child: 0.75 } } };
      const accepted = await ctx.store.decidePromptCandidate(child.id, decision);
      assert.deepEqual(
        [accepted.status, accepted.scores, accepted.createdAt],
        ['accepted', { minibatch: { parent: 0.25, child: 0.75 }, val: null, test: null }, child.createdAt],
      );
      assert.ok(accepted.decidedAt !== null && accepted.decidedAt >= child.createdAt);
      assert.deepEqual(await ctx.store.decidePromptCandidate(child.id, decision), accepted, 'a resumed optimizer decides it again');
      const scored = await ctx.store.decidePromptCandidate(child.id, { status: 'accepted', scores: { val: 0.7 } });
      assert.deepEqual(
        [scored.scores.val, scored.scores.minibatch, scored.decidedAt],
        [0.7, accepted.scores.minibatch, accepted.decidedAt],
        'its val score, once scored',
      );
      await assert.rejects(ctx.store.decidePromptCandidate(child.id, { status: 'accepted', scores: { val: 0.8 } }), /val score 0.7 already/);
      await assert.rejects(ctx.store.decidePromptCandidate(child.id, { status: 'rejected', reason: 'worse' }), ConflictError);
      assert.deepEqual(await ctx.store.getPromptCandidate(child.id), scored);
      assert.deepEqual(await ctx.store.addPromptCandidate(childOf(seedOf(opt.id), 1, 'Answer with units.')), scored, 'added again as proposed: as stored');
      await assert.rejects(ctx.store.decidePromptCandidate('pc-missing', { status: 'rejected' }), NotFoundError);
    });

    it('stores a candidate refused at birth with its reason, decided already', async () => {
      const opt = await optimization(ctx.store);
      await ctx.store.addPromptCandidate(seedOf(opt.id));
      const input = { ...childOf(seedOf(opt.id), 1, 'Answer.'), status: 'refused' as const, reason: 'the same text as pc-0, scored already' };
      const refused = await ctx.store.addPromptCandidate(input);
      assert.deepEqual([refused.status, refused.reason, refused.decidedAt], ['refused', input.reason, refused.createdAt]);
      assert.deepEqual(await ctx.store.addPromptCandidate(input), refused);
      await assert.rejects(ctx.store.addPromptCandidate({ ...input, reason: 'too long' }), ConflictError);
      assert.deepEqual(await ctx.store.decidePromptCandidate(refused.id, { status: 'refused', reason: input.reason }), refused);
      await assert.rejects(ctx.store.decidePromptCandidate(refused.id, { status: 'accepted' }), ConflictError);
    });
  });

  describe('optimizer calls', () => {
    it('stores each call once by (run, seq), in order: the identical call again is the stored one, another a conflict', async () => {
      const opt = await optimization(ctx.store);
      const second = await ctx.store.addOptimizerCall(call(opt.id, 1, { cost: 0.002 }));
      const first = await ctx.store.addOptimizerCall(call(opt.id, 0, { response: null, error: '429 after 3 attempts', attempts: 3 }));
      assert.equal(typeof first.createdAt, 'number');
      assert.deepEqual(await ctx.store.listOptimizerCalls(opt.id), [first, second]);
      assert.deepEqual(await ctx.store.addOptimizerCall(call(opt.id, 1, { cost: 0.002 })), second);
      await assert.rejects(ctx.store.addOptimizerCall(call(opt.id, 1, { response: 'another answer', cost: 0.002 })), /response/);
      await assert.rejects(ctx.store.addOptimizerCall(call('run-missing', 0)), NotFoundError);
      assert.deepEqual(await ctx.store.listOptimizerCalls('run-missing'), []);
    });
  });

  describe('promoted prompts', () => {
    it("promotes a candidate's text per agent and name, keeps the history, and clears it back to the seed", async () => {
      const opt = await optimization(ctx.store);
      const seed = await ctx.store.addPromptCandidate(seedOf(opt.id));
      const best = await ctx.store.addPromptCandidate(childOf(seedOf(opt.id), 1, 'Answer with units.'));
      const promoted = await ctx.store.promotePrompt({
        agent: AGENT,
        name: 'system',
        text: best.prompts.system!,
        candidateId: best.id,
        by: 'agl optimize promote',
      });
      assert.deepEqual([promoted.runId, promoted.candidateId, promoted.text], [opt.id, best.id, 'Answer with units.']);
      await assert.rejects(ctx.store.promotePrompt({ agent: AGENT, name: 'system', text: 'edited', candidateId: best.id, by: 'editor' }), ConflictError);
      await assert.rejects(ctx.store.promotePrompt({ agent: AGENT, name: 'critic', text: 'x', candidateId: best.id, by: 'editor' }), /has no prompt 'critic'/);
      await assert.rejects(ctx.store.promotePrompt({ agent: AGENT, name: 'system', text: 'x', candidateId: 'pc-missing', by: 'editor' }), NotFoundError);
      await ctx.store.promotePrompt({ agent: AGENT, name: 'planner', text: seed.prompts.planner!, candidateId: seed.id, by: 'editor' });
      const own = await ctx.store.promotePrompt({ agent: AGENT, name: 'system', text: 'My own words.', candidateId: null, by: 'editor' });
      assert.equal(own.runId, null);
      const current = async (agent?: string) => (await ctx.store.listPromotedPrompts(agent)).map((p) => [p.agent, p.name, p.text]);
      assert.deepEqual(await current(AGENT), [
        [AGENT, 'planner', 'Plan.'],
        [AGENT, 'system', 'My own words.'],
      ]);
      assert.deepEqual(await current('calc/agent.ts#calcAgent'), await current(AGENT), 'an older form of the agent id');
      assert.deepEqual(await current('other.ts#agent'), []);
      assert.equal(await ctx.store.clearPromotedPrompt({ agent: AGENT, name: 'system', by: 'editor' }), true);
      assert.equal(await ctx.store.clearPromotedPrompt({ agent: AGENT, name: 'system', by: 'editor' }), false, 'nothing promoted any more');
      assert.deepEqual(await current(), [[AGENT, 'planner', 'Plan.']]);
      assert.deepEqual(
        (await ctx.store.listPromptPromotions(AGENT, 'system')).map((p) => [p.text, p.candidateId, p.by]),
        [
          [null, null, 'editor'],
          ['My own words.', null, 'editor'],
          ['Answer with units.', best.id, 'agl optimize promote'],
        ],
      );
    });
  });

  optimizationViewConformance(ctx);
  promptVersionFilterConformance(ctx);
}

/** A reward span saying what the grader saw. */
const graded = (value: number, feedback?: string) => ({
  name: SPAN.reward,
  attributes: { [AGL.rewardValue]: value, ...(feedback ? { [AGL.rewardFeedback]: feedback } : {}) },
});

function optimizationViewConformance(ctx: { readonly store: LightningStore }): void {
  describe('optimization view (one request)', () => {
    it('scores each candidate on the val set from its rollouts, with feedback, the Pareto front, the best-so-far curve and the calls', async () => {
      const store = ctx.store;
      const opt = await optimization(store);
      const seed = await store.addPromptCandidate(seedOf(opt.id));
      const c1 = await store.addPromptCandidate(childOf(seedOf(opt.id), 1, 'Answer with units.'));
      const c2 = await store.addPromptCandidate(childOf(seedOf(opt.id), 2, 'Answer in JSON.'));
      const c3 = await store.addPromptCandidate({ ...childOf(seedOf(opt.id), 3, ''), status: 'refused', reason: 'empty' });
      const val = (candidate: string, taskId: string, spans: Parameters<typeof rollout>[2], finish: 'succeeded' | 'failed' = 'succeeded', error?: string) =>
        rollout(store, { task: taskId }, spans, { mode: 'val', metadata: { runId: opt.id, candidate, taskId, split: 'val' }, finish, error });
      const s1 = await val(seed.id, 'v1', [graded(0, 'missed rule A')]);
      await val(seed.id, 'v2', [graded(1)]);
      const s3 = await val(seed.id, 'v3', [], 'failed', 'Timeout: too slow');
      const minibatch = await rollout(store, { task: 't1' }, [graded(1)], {
        metadata: { runId: opt.id, candidate: c1.id, taskId: 't1', split: 'train' },
        finish: 'succeeded',
      });
      for (const [task, reward] of [
        ['v1', 1],
        ['v2', 1],
        ['v3', 0.5],
      ] as const)
        await val(c1.id, task, [graded(reward)]);
      const broken = {
        name: SPAN.exception,
        attributes: { [AGL.exceptionType]: 'ValueError', [AGL.exceptionMessage]: 'bad json' },
        status: { code: 'error' as const },
      };
      const c2v1 = await val(c2.id, 'v1', [broken]);
      await val(c2.id, 'v2', [graded(0)]);
      await val(c2.id, 'v3', [graded(1)]);
      await val(seed.id, 'v2', [graded(0)]); // a task rolled out again (a resumed run): its first score stands
      const held = await rollout(store, { task: 't9' }, [graded(1)], {
        metadata: { runId: opt.id, candidate: c1.id, taskId: 't9', split: 'test' },
        finish: 'succeeded',
      });
      await store.enqueueRollout({ input: { task: 'v1' }, mode: 'val', metadata: { runId: opt.id, candidate: seed.id, taskId: 'v1', split: 'val' } });
      await store.addOptimizerCall(call(opt.id, 0, { cost: 0.5 }));
      await store.addOptimizerCall(call(opt.id, 1));

      const view = await optimizationView(store, opt.id);
      assert.equal(view.run.id, opt.id);
      assert.deepEqual(view.valTasks, ['v1', 'v2', 'v3']);
      assert.deepEqual(
        view.candidates.map((c) => [c.id, c.status, c.valMean, c.rollouts]),
        [
          [seed.id, 'proposed', 1 / 3, 5],
          [c1.id, 'proposed', 2.5 / 3, 5],
          [c2.id, 'proposed', 1 / 3, 3],
          [c3.id, 'refused', null, 0],
        ],
      );
      assert.deepEqual(view.candidates[0]!.val, {
        v1: { score: 0, feedback: 'missed rule A', rolloutId: s1.id },
        v2: { score: 1, feedback: null, rolloutId: view.candidates[0]!.val.v2!.rolloutId },
        v3: { score: 0, feedback: 'Timeout: too slow', rolloutId: s3.id },
      });
      assert.deepEqual(view.candidates[2]!.val.v1, { score: 0, feedback: 'ValueError: bad json', rolloutId: c2v1.id });
      assert.deepEqual(view.front, [c1.id, c2.id], 'c1 dominates the seed; c2 is best on v3');
      assert.deepEqual(view.curve, [
        { rollouts: 3, best: 1 / 3, candidateId: seed.id },
        { rollouts: 7, best: 2.5 / 3, candidateId: c1.id },
      ]);
      assert.equal(view.rolloutsUsed, 13);
      assert.deepEqual(view.calls, { count: 2, tokens: { prompt: 201, completion: 21 }, cost: 0.5 });
      assert.equal(view.candidates[1]!.scores.val, null, "the view reads scores from rollouts; the record keeps the optimizer's");

      const ofC1 = (await store.queryRollouts({ candidate: c1.id, order: 'asc' })).items.map((r) => r.metadata.taskId);
      assert.deepEqual(ofC1, ['t1', 'v1', 'v2', 'v3', 't9'], 'rollouts of one prompt version');
      const listed = await rolloutsPage(store, { candidate: c1.id, runId: opt.id, mode: 'train' });
      assert.deepEqual(
        listed.items.map((i) => i.rollout.id),
        [held.id, minibatch.id],
        'the list, newest first: the val rollouts are another mode',
      );
      assert.deepEqual(
        listed.runs.map((r) => [r.id, r.kind]),
        [[opt.id, 'optimize']],
      );
      await assert.rejects(optimizationView(store, 'run-missing'), /does not exist in this daemon's store/);
    });

    it('scores a val rollout that failed 0 with its error, whatever reward it emitted before failing', async () => {
      const store = ctx.store;
      const opt = await optimization(store);
      const seed = await store.addPromptCandidate(seedOf(opt.id));
      const meta = (taskId: string) => ({ mode: 'val' as const, metadata: { runId: opt.id, candidate: seed.id, taskId, split: 'val' } });
      await rollout(store, { task: 'v1' }, [graded(1, 'looked right')], {
        ...meta('v1'),
        finish: 'failed',
        error: 'rollout timed out after 30 s: the agent process was killed',
      });
      await rollout(store, { task: 'v2' }, [graded(1, 'right')], { ...meta('v2'), finish: 'succeeded' });
      const view = await optimizationView(store, opt.id);
      assert.deepEqual(
        Object.entries(view.candidates[0]!.val).map(([task, s]) => [task, s.score, s.feedback]),
        [
          ['v1', 0, 'rollout timed out after 30 s: the agent process was killed'],
          ['v2', 1, 'right'],
        ],
      );
      assert.equal(view.candidates[0]!.valMean, 0.5);
    });
  });
}

/** A prompt span: the agent read `name` at `version` (text sha `sha`). */
const readPrompt = (name: string, source: string, version: string, sha: string) => ({
  name: SPAN.prompt,
  attributes: { [AGL.promptName]: name, [AGL.promptSource]: source, [AGL.promptVersion]: version, [AGL.promptSha]: sha, [AGL.promptTemplate]: `${name} text` },
});

function promptVersionFilterConformance(ctx: { readonly store: LightningStore }): void {
  describe('rollouts by the prompt versions they read', () => {
    it('finds rollouts by a version (candidate, promoted candidate, seed) or a text sha, in any of their prompt spans', async () => {
      const store = ctx.store;
      const scored = await rollout(store, { task: 1 }, [readPrompt('system', 'candidate', 'pc-opt-a-3', 'aaaaaaaaaaaa')], { finish: 'succeeded' });
      const promoted = await rollout(
        store,
        { task: 2 },
        [readPrompt('planner', 'seed', 'seed', 'bbbbbbbbbbbb'), readPrompt('system', 'promoted', 'pc-opt-a-3', 'aaaaaaaaaaaa')],
        {
          finish: 'succeeded',
        },
      );
      const seeded = await rollout(store, { task: 3 }, [readPrompt('system', 'seed', 'seed', 'cccccccccccc')], { finish: 'failed' });
      const none = await rollout(store, { task: 4 }, [{ name: 'step', attributes: { [AGL.promptVersion]: 'pc-opt-a-3' } }], { finish: 'succeeded' });
      const ids = async (promptVersion: string, more = {}) => (await store.queryRollouts({ promptVersion, order: 'asc', ...more })).items.map((r) => r.id);
      assert.deepEqual(
        await ids('pc-opt-a-3'),
        [scored.id, promoted.id],
        'scored in its optimization, and read once promoted; another span with the attribute is no prompt read',
      );
      assert.deepEqual(await ids('seed'), [promoted.id, seeded.id]);
      assert.deepEqual(await ids('cccccccccccc'), [seeded.id], 'a text by its sha');
      assert.deepEqual(await ids('seed', { status: ['failed'] }), [seeded.id], 'with the other filters');
      assert.deepEqual(await ids('pc-none'), []);
      const page = await rolloutsPage(store, { promptVersion: 'aaaaaaaaaaaa' });
      assert.deepEqual(
        page.items.map((i) => i.rollout.id),
        [promoted.id, scored.id],
        'the list, newest first',
      );
      assert.equal(page.total, 2);
      assert.ok(!page.items.some((i) => i.rollout.id === none.id));
    });
  });
}
