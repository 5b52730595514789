/**
 * The GRPO variants as `training.grpo` options, against values worked out by hand in the comments:
 * Dr.GRPO (no std scaling, token sum over a constant), GSPO (one clipped importance ratio per sequence),
 * DAPO dynamic sampling (groups without reward spread dropped, the batch refilled from fresh tasks, bounded),
 * and the config errors that name the bad key.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import type { Rollout } from '../../protocol/store.js';
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { computeAdvantages, GrpoConfig, grpoLossFn, GrpoStats } from '../../daemon/algorithm/grpo.js';
import { type GroupRollout, type Task, dynamicSampling, groupsWithSpread } from '../../daemon/algorithm/rollouts.js';
import { freshTasks, tasksForStep } from '../../daemon/algorithm/schedule.js';
import { llmCall, reward } from './helpers.js';

const near = (a: number, b: number, tol = 1e-5) => assert.ok(Math.abs(a - b) < tol, `${a} != ${b}`);

function inputs(logp: number[][], mask: number[][], indices: number[]) {
  return { logprobs: tf.tensor2d(logp), mask: tf.tensor2d(mask), entropy: tf.zerosLike(tf.tensor2d(mask)) as tf.Tensor2D, indices };
}
/** d loss / d logprobs at `logp` (one micro-batch holding every sequence). */
function gradient(fn: ReturnType<typeof grpoLossFn>, logp: number[][], mask: number[][]): number[] {
  const m = tf.tensor2d(mask);
  const g = tf.grad((v: tf.Tensor) => fn({ logprobs: v as tf.Tensor2D, mask: m, entropy: tf.zerosLike(m) as tf.Tensor2D, indices: logp.map((_, i) => i) }))(
    tf.tensor2d(logp),
  );
  return Array.from(g.dataSync());
}

test("variants fill in their papers' settings; keys given explicitly win", () => {
  const dr = GrpoConfig.parse({ variant: 'dr_grpo' });
  assert.equal(dr.scaleRewards, 'none');
  assert.equal(dr.lossAggregation, 'token-sum-norm');
  const dapo = GrpoConfig.parse({ variant: 'dapo' });
  assert.deepEqual([dapo.epsilon, dapo.epsilonHigh, dapo.lossAggregation, dapo.dynamicSampling], [0.2, 0.28, 'token-mean', true]);
  const gspo = GrpoConfig.parse({ variant: 'gspo' });
  assert.deepEqual([gspo.importanceSampling, gspo.lossAggregation, gspo.sequenceEpsilon, gspo.sequenceEpsilonHigh], ['sequence', 'seq-mean', 3e-4, 4e-4]);
  assert.equal(GrpoConfig.parse({ variant: 'dapo', dynamicSampling: false }).dynamicSampling, false);
  const plain = GrpoConfig.parse({});
  assert.deepEqual([plain.variant, plain.scaleRewards, plain.importanceSampling, plain.dynamicSampling], ['grpo', 'group', 'token', false]);
  // Parsing a parsed config changes nothing (the trainer re-parses it in the loss).
  assert.deepEqual(GrpoConfig.parse(dr), dr);
});

test('an unknown variant, value or key under training.grpo is a config error naming the key', () => {
  const err = (grpo: unknown) => {
    try {
      parseTrainConfig({ training: { grpo } });
    } catch (e) {
      return (e as Error).message;
    }
    return 'no error';
  };
  assert.match(err({ variant: 'drgrpo' }), /training\.grpo\.variant:/);
  assert.match(err({ importanceSampling: 'seq' }), /training\.grpo\.importanceSampling:/);
  assert.match(err({ lossAggregation: 'sum' }), /training\.grpo\.lossAggregation:/);
  assert.match(err({ dynamicSamplingRounds: -1 }), /training\.grpo\.dynamicSamplingRounds:/);
  assert.match(err({ lossNormTokens: 0 }), /training\.grpo\.lossNormTokens:/);
  assert.match(err({ lossType: 'dr_grpo' }), /training\.grpo: .*lossType/);
  assert.equal(parseTrainConfig({ training: { grpo: { variant: 'gspo' } } }).training.grpo.importanceSampling, 'sequence');
});

test('Dr.GRPO: advantages centred, not divided by the std', () => {
  // Group A credits 1, 0, 0, 1: mean 0.5 -> +-0.5 (GRPO would divide by std sqrt(1/3) and give +-0.866).
  // Group B credits 0.2, 0.6: mean 0.4 -> -0.2, +0.2.
  const items = [1, 0, 0, 1].map((credit) => ({ groupId: 'A', credit })).concat([0.2, 0.6].map((credit) => ({ groupId: 'B', credit })));
  const a = computeAdvantages(items, { variant: 'dr_grpo' }).advantages;
  [0.5, -0.5, -0.5, 0.5, -0.2, 0.2].forEach((x, i) => near(a[i], x));
});

test('Dr.GRPO: the token sum over a constant, so every token weighs the same whatever its sequence length', () => {
  // Sequence 0: A = +0.5, two tokens; sequence 1: A = -0.5, one token; ratios 1 (logp = old).
  // Per-token surrogate -A r: -0.5, -0.5 | +0.5. Sum -0.5.
  const samples = [
    { advantage: 0.5, oldLogprobs: [-1, -1] },
    { advantage: -0.5, oldLogprobs: [-1] },
  ];
  const logp = [
      [-1, -1],
      [-1, 0],
    ],
    mask = [
      [1, 1],
      [1, 0],
    ];
  // token-sum-norm, 4 tokens per sequence x 2 sequences: -0.5 / 8 = -0.0625.
  const dr = grpoLossFn(samples, { variant: 'dr_grpo', lossNormTokens: 4 });
  near(dr(inputs(logp, mask, [0, 1])).dataSync()[0], -0.0625);
  // token-mean: -0.5 / 3 tokens; seq-mean: (-0.5 + 0.5) / 2 = 0.
  near(grpoLossFn(samples, { lossAggregation: 'token-mean' })(inputs(logp, mask, [0, 1])).dataSync()[0], -0.5 / 3);
  near(grpoLossFn(samples, { lossAggregation: 'seq-mean' })(inputs(logp, mask, [0, 1])).dataSync()[0], 0);
  // Gradient per token = -A r / (4 x 2): -0.0625, -0.0625 | +0.0625 (padding 0).
  gradient(grpoLossFn(samples, { variant: 'dr_grpo', lossNormTokens: 4 }), logp, mask).forEach((g, i) => near(g, [-0.0625, -0.0625, 0.0625, 0][i]));
  // seq-mean divides by each sequence's own length: -0.5 / (2 x 2) = -0.125 per token of the long one, +0.5 / (1 x 2) = 0.25 for the short one.
  gradient(grpoLossFn(samples, { lossAggregation: 'seq-mean' }), logp, mask).forEach((g, i) => near(g, [-0.125, -0.125, 0.25, 0][i]));
  // Split into two micro-batches, the shares still add up to the batch loss.
  const fn = grpoLossFn(samples, { variant: 'dr_grpo', lossNormTokens: 4 });
  near(fn(inputs([[-1, -1]], [[1, 1]], [0])).dataSync()[0] + fn(inputs([[-1]], [[1]], [1])).dataSync()[0], -0.0625);
  assert.throws(() => grpoLossFn(samples, { lossAggregation: 'token-sum-norm' }), /lossNormTokens/);
});

test('GSPO: one length-normalised ratio per sequence, clipped with its own small epsilons', () => {
  // Sequence 0: A = +1, old [-1, -1], new [-0.5, -1.1]: mean log-ratio (0.5 - 0.1) / 2 = 0.2, s = e^0.2 = 1.2214,
  //   above 1 + 4e-4 -> clipped: both tokens get max(-1.2214, -1.0004) = -1.0004.
  // Sequence 1: A = -1, old [-1], new [-1.0001]: s = e^-0.0001 = 0.9999, inside [0.9997, 1.0004]: +0.9999.
  // seq-mean: (-1.0004 + 0.9999) / 2.
  const samples = [
    { advantage: 1, oldLogprobs: [-1, -1] },
    { advantage: -1, oldLogprobs: [-1] },
  ];
  const stats = new GrpoStats();
  const fn = grpoLossFn(samples, { variant: 'gspo', ratioBase: 'sampler' }, stats);
  near(
    fn(
      inputs(
        [
          [-0.5, -1.1],
          [-1.0001, 0],
        ],
        [
          [1, 1],
          [1, 0],
        ],
        [0, 1],
      ),
    ).dataSync()[0],
    (-1.0004 + Math.exp(-0.0001)) / 2,
    1e-6,
  );
  // Statistics per token: sequence 0's two tokens were clipped, sequence 1's was not; mean ratio (2 x 1.2214 + 0.9999) / 3.
  near(stats.summary().clipRatio, 2 / 3);
  near(stats.summary().ratioMean, (2 * Math.exp(0.2) + Math.exp(-0.0001)) / 3, 1e-4);
  // Token-level ratios would clip only the first token of sequence 0 (e^0.5 > 1.3; e^-0.1 = 0.905 is not clipped):
  near(
    grpoLossFn(samples, { lossAggregation: 'seq-mean', ratioBase: 'sampler' })(
      inputs(
        [
          [-0.5, -1.1],
          [-1.0001, 0],
        ],
        [
          [1, 1],
          [1, 0],
        ],
        [0, 1],
      ),
    ).dataSync()[0],
    ((-1.3 - Math.exp(-0.1)) / 2 + Math.exp(-0.0001)) / 2,
    1e-5,
  );
});

test('GSPO gradients: shared by the tokens of a sequence, zero once the sequence ratio is clipped', () => {
  const samples = [
    { advantage: 1, oldLogprobs: [-1, -1] },
    { advantage: -1, oldLogprobs: [-1] },
  ];
  const mask = [
    [1, 1],
    [1, 0],
  ];
  // At logp = old, s = 1: loss = (-A0 s0 - A1 s1) / 2 with s = exp(mean log-ratio), so
  // d/dlogp of a token of sequence 0 = -1 x 1 x (1/2 tokens) / 2 = -0.25; of sequence 1's token = +1 x 1 x 1 / 2 = +0.5.
  gradient(
    grpoLossFn(samples, { variant: 'gspo', ratioBase: 'sampler' }),
    [
      [-1, -1],
      [-1, 0],
    ],
    mask,
  ).forEach((g, i) => near(g, [-0.25, -0.25, 0.5, 0][i]));
  // Sequence 0 moved outside the clip range (s = e^0.2): its tokens get no gradient; sequence 1's is unchanged.
  gradient(
    grpoLossFn(samples, { variant: 'gspo', ratioBase: 'sampler' }),
    [
      [-0.5, -1.1],
      [-1, 0],
    ],
    mask,
  ).forEach((g, i) => near(g, [0, 0, 0.5, 0][i]));
});

/** A rollout of `task` whose final reward is `r` (spans read by the real adapter). */
function rolledOut(task: Task, r: number, k: number): GroupRollout {
  const rolloutId = `${task.id}-${k}`;
  const spans = [llmCall(`c-${rolloutId}`, 1), reward(`r-${rolloutId}`, 2, r)].map((s) => ({ ...s, rolloutId }));
  return { rollout: { id: rolloutId } as Rollout, task, trajectory: spansToTrajectory(spans), error: null };
}
const group = (id: string, rewards: number[]) => rewards.map((r, k) => rolledOut({ id, input: {} }, r, k));

test('DAPO dynamic sampling: groups without reward spread dropped, refilled with fresh tasks until the batch is full', async () => {
  // Round 0: A earned 1, 1 (no spread), B 0, 1 (spread): 1 of the 2 groups wanted.
  // Round 1 asks for 1 fresh task: C earns 0, 0 (no spread). Round 2: D earns 1, 0 -> B and D fill the batch.
  const later: Record<string, number[]> = { C: [0, 0], D: [1, 0], E: [0, 1] };
  const asked: { round: number; used: string[]; n: number }[] = [];
  const fresh = (round: number, used: Set<string>, n: number) => {
    asked.push({ round, used: [...used].sort(), n });
    return ['C', 'D', 'E']
      .filter((id) => !used.has(id))
      .slice(0, n)
      .map((id) => ({ id, input: {} }));
  };
  const rollOut = async (tasks: Task[]) => tasks.flatMap((t) => group(t.id, later[t.id]));
  const first = [...group('A', [1, 1]), ...group('B', [0, 1])];
  assert.deepEqual([...groupsWithSpread(first)], ['B']);
  const r = await dynamicSampling(first, { batchSize: 2, maxRounds: 3, freshTasks: fresh, rollOut });
  assert.equal(r.rounds, 2);
  assert.deepEqual([...r.kept], ['B', 'D']);
  assert.deepEqual(
    r.groups.map((g) => g.task.id),
    ['A', 'A', 'B', 'B', 'C', 'C', 'D', 'D'],
  );
  assert.deepEqual(asked, [
    { round: 1, used: ['A', 'B'], n: 1 },
    { round: 2, used: ['A', 'B', 'C'], n: 1 },
  ]);

  // Bounded: one extra round at most, then the step trains on the one group it has.
  const bounded = await dynamicSampling(first, { batchSize: 2, maxRounds: 1, freshTasks: (round, used, n) => fresh(round, used, n), rollOut });
  assert.deepEqual([bounded.rounds, [...bounded.kept]], [1, ['B']]);
  // A full first round needs no refill; more groups with spread than the batch holds: the first ones are kept.
  const full = await dynamicSampling([...group('B', [0, 1]), ...group('E', [1, 0]), ...group('D', [1, 0])], {
    batchSize: 2,
    maxRounds: 3,
    freshTasks: fresh,
    rollOut,
  });
  assert.deepEqual([full.rounds, [...full.kept]], [0, ['B', 'E']]);
  // No fresh task left: it stops instead of looping.
  const dry = await dynamicSampling(first, { batchSize: 2, maxRounds: 5, freshTasks: () => [], rollOut });
  assert.deepEqual([dry.rounds, [...dry.kept]], [0, ['B']]);
  // A failed rollout (no trajectory) scores 0 like everywhere else: 0 and a failure have no spread.
  assert.deepEqual(
    [...groupsWithSpread([rolledOut({ id: 'F', input: {} }, 0, 0), { ...rolledOut({ id: 'F', input: {} }, 1, 1), trajectory: null, error: 'boom' }])],
    [],
  );
});

test('fresh tasks for a refill round: deterministic in (seed, step, round), none the step already used', () => {
  const train = Array.from({ length: 10 }, (_, i) => ({ id: `t${i}`, input: {} }));
  const scheduled = tasksForStep(train, 3, 1, 0);
  const used = new Set(scheduled.map((t) => t.id));
  const a = freshTasks(train, 1, 0, 1, used, 4);
  assert.equal(a.length, 4);
  assert.ok(a.every((t) => !used.has(t.id)));
  assert.equal(new Set(a.map((t) => t.id)).size, 4);
  assert.deepEqual(freshTasks(train, 1, 0, 1, used, 4), a, 'the same on resume');
  assert.equal(freshTasks(train, 1, 0, 1, used, 50).length, 7, 'never more than the unused tasks');
});
