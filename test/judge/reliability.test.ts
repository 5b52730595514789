/**
 * How informative a judge is (daemon/judge/reliability.ts) on synthetic scores with known answers: the test-retest
 * reliability is the pooled within-group correlation of the scores two separate calls gave the same trajectories, with
 * the degrees of freedom the group means leave (a Pearson correlation's textbook bound for one group, pairs - groups
 * pooled); its weight is its informativeness (sqrt of the reliability) once the reliability's lower 95% bound is above 0. Judges flipping a 0/1 score with
 * probability 0.1, 0.2, 0.3 read informativeness near 1 - 2f and a weight above 0; one scoring at random, or only by
 * the place a trajectory is shown at, reads weight 0 in 95%+ of seeded runs; a few agreeing pairs never give weight 1.
 * Then what the trainer does with it (daemon/algorithm/step-advantages.ts): the judged groups' advantages times the
 * weight, or left out at 0.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import type { TrainedPolicy } from '../../daemon/algorithm/open-policy-set.js';
import type { GroupRollout } from '../../daemon/algorithm/rollouts.js';
import { advantagesPerPolicy } from '../../daemon/algorithm/step-advantages.js';
import type { CreditedItem } from '../../daemon/algorithm/step-credit.js';
import type { RolledOut } from '../../daemon/algorithm/step-collect.js';
import { correlationLow, evidenceOf, reliabilityOf, smoothed, SMOOTHING, type ReliabilityState, type RetestGroup } from '../../daemon/judge/reliability.js';
import { rng as seededStream } from '../../samples/shared/rng.js';

const close = (a: number | null, b: number, eps = 1e-9) => assert.ok(a !== null && Math.abs(a - b) < eps, `${a} is not ${b}`);

/** A synthetic judge: one call's scores of a group's trajectories (their truths, 0/1) from a seeded stream. */
type Scorer = (truths: number[], next: () => number) => number[];
const flipping =
  (f: number): Scorer =>
  (truths, next) =>
    truths.map((t) => (next() < f ? 1 - t : t));
const atRandom: Scorer = (truths, next) => truths.map(() => next());
/** Scores only the place each trajectory is shown at, in an order shuffled anew for each call. */
const byPosition: Scorer = (truths, next) => {
  const order = truths.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order.map((place) => 1 - place / (truths.length - 1));
};

/** `groups` groups of 8 with 4 right (both outcomes: what GRPO learns from), each scored by two separate calls. */
function retested(score: Scorer, next: () => number, groups: number): RetestGroup[] {
  return Array.from({ length: groups }, () => {
    const truths = [1, 1, 1, 1, 0, 0, 0, 0];
    return { scores: score(truths, next), seconds: score(truths, next) };
  });
}

/** The weight after `steps` steps of `groups` retested groups each (the run's smoothing), for each of `seeds` seeded runs. */
function weights(score: Scorer, o: { groups: number; steps: number; seeds: number }): number[] {
  return Array.from({ length: o.seeds }, (_, k) => {
    const next = seededStream(5000 + k);
    let state: ReliabilityState | null = null;
    for (let step = 0; step < o.steps; step++) state = smoothed(state, evidenceOf(retested(score, next, o.groups)));
    return reliabilityOf(state).weight;
  });
}

describe("the judge's reliability", () => {
  it("one group shown again whole is a Pearson correlation: Anscombe's first set reads r 0.816, its bound Fisher's with n - 3", () => {
    const x = [10, 8, 13, 9, 11, 14, 6, 4, 12, 7, 5];
    const y = [8.04, 6.95, 7.58, 8.81, 8.33, 9.96, 7.24, 4.26, 10.84, 4.82, 5.68];
    const e = evidenceOf([{ scores: x, seconds: y }]);
    close(e.df, 10, 1e-12);
    const r = reliabilityOf(e);
    close(r.r, 0.81642, 5e-5); // the published correlation of Anscombe's first set
    close(r.low, 0.5113, 5e-4); // tanh(atanh(0.81642) - 1.6449 / sqrt(11 - 3)) = tanh(1.1460 - 0.5816)
    close(r.weight, Math.sqrt(Math.min(r.r!, 1 - 1 / 10))); // shown informative (bound > 0): weighed by its estimate
    close(r.informativeness, Math.sqrt(r.r!));
    close(r.noise, x.reduce((a, xi, i) => a + (xi - y[i]!) ** 2 / 2, 0) / 11);
  });

  it('pooled over groups, each group mean costs a degree of freedom: 4 groups of 8 have 28, one rollout of a group of n 1 - 1/n', () => {
    const next = seededStream(3);
    const groups = retested(flipping(0.2), next, 4);
    const e = evidenceOf(groups);
    close(e.df, 28, 1e-12);
    assert.equal(e.pairs, 32);
    const r = reliabilityOf(e);
    close(r.low, Math.max(0, Math.tanh(Math.atanh(r.r!) - 1.6449 / Math.sqrt(26))));
    // Deviations from each call's own group mean: a judge that adds 0.3 to every score of its second call agrees fully.
    const shifted = evidenceOf([{ scores: [0, 1, 0, 1], seconds: [0.3, 1.3, 0.3, 1.3] }]);
    close(reliabilityOf(shifted).r, 1);
    // Single mode: one rollout of a group of 4 scored again, its deviation from the group as each call saw it.
    const one = evidenceOf([{ scores: [0, 1, 1, 0], seconds: [null, 0, null, null] }]);
    close(one.df, 0.75, 1e-12);
    close(one.crossSum, (1 - 0.5) * (0 - 0.25));
    assert.equal(reliabilityOf(one).weight, 0, 'one pair bounds nothing');
  });

  it('few pairs give little weight: one agreeing pair 0, one group of 3 (2 degrees of freedom) 0, perfect agreement over n values below 1', () => {
    assert.equal(reliabilityOf(evidenceOf([{ scores: [0, 1], seconds: [0, 1] }])).weight, 0);
    assert.equal(reliabilityOf(evidenceOf([{ scores: [0, 1, 1], seconds: [0, 1, 1] }])).weight, 0);
    const seven = reliabilityOf(evidenceOf([{ scores: [0, 1, 1, 0, 1, 0, 0, 1], seconds: [0, 1, 1, 0, 1, 0, 0, 1] }]));
    assert.equal(seven.r, 1);
    close(seven.low, correlationLow(1 - 1 / 7, 7), 1e-12);
    close(seven.weight, Math.sqrt(1 - 1 / 7), 1e-12); // perfect agreement over 7 values: not 1
    assert.ok(seven.weight < 0.93, `perfect over 7 degrees of freedom: ${seven.weight}`);
    const many = reliabilityOf(evidenceOf(Array.from({ length: 6 }, () => ({ scores: [0, 1, 1, 0, 1, 0, 0, 1], seconds: [0, 1, 1, 0, 1, 0, 0, 1] }))));
    assert.ok(many.weight > 0.95 && many.weight < 1, `perfect over 42: ${many.weight}`);
    assert.deepEqual({ ...reliabilityOf(null), signal: 0 }, { r: null, low: 0, informativeness: null, weight: 0, noise: null, signal: 0, pairs: 0, df: 0 });
    assert.equal(reliabilityOf(evidenceOf([{ scores: [0.5, 0.5], seconds: [0.5, 0.5] }])).weight, 0, 'no spread: nothing shown to reproduce');
  });

  it('smoothing: the sums of earlier steps decay by SMOOTHING, the step adds its own; a state kept before these sums starts them at 0', () => {
    const a = evidenceOf([{ scores: [0, 1, 1], seconds: [0, 1, 0] }]);
    const b = evidenceOf([{ scores: [0.2, 0.4], seconds: [0.4, 0.2] }]);
    const s = smoothed(smoothed(null, a), b);
    for (const key of Object.keys(a) as (keyof ReliabilityState)[]) close(s[key], SMOOTHING * a[key] + b[key], 1e-12);
    const old = smoothed({ pairs: 10, noiseSum: 1, spreadSum: 2, spreadDf: 30 }, a);
    close(old.pairs, SMOOTHING * 10 + a.pairs);
    close(old.crossSum, a.crossSum);
    close(old.df, a.df);
  });

  it('judges flipping a 0/1 score with probability 0.1, 0.2, 0.3: informativeness near 1 - 2f, weighed by it once the bound is above 0', () => {
    for (const f of [0.1, 0.2, 0.3]) {
      const next = seededStream(Math.round(f * 100));
      const r = reliabilityOf(evidenceOf(retested(flipping(f), next, 200)));
      const said = `f ${f}: r ${r.r!.toFixed(3)}, informativeness ${r.informativeness!.toFixed(3)}, weight ${r.weight.toFixed(3)}`;
      assert.ok(Math.abs(r.informativeness! - (1 - 2 * f)) < 0.06, said);
      assert.ok(r.low > 0 && r.low < r.r!, said);
      close(r.weight, r.informativeness!, 1e-9); // 200 groups: the cap 1 - 1/df does not bind
    }
    // As a run reads them (6 groups of 8 shown again a step, smoothed), over 400 seeded runs: the 90% and 80% judges
    // above 0 from the 3rd step in 95%+ of them, the 70% judge (informativeness 0.4, reliability 0.16) by the 16th in 80%+.
    for (const [f, steps, share, mean] of [
      [0.1, 3, 0.95, 0.6],
      [0.2, 3, 0.95, 0.4],
      [0.3, 16, 0.8, 0.15],
    ] as const) {
      const ws = weights(flipping(f), { groups: 6, steps, seeds: 400 });
      const said = `f ${f}, ${steps} steps: above 0 in ${ws.filter((w) => w > 0).length} of 400, mean ${(ws.reduce((a, w) => a + w, 0) / 400).toFixed(3)}`;
      assert.ok(ws.filter((w) => w > 0).length >= share * ws.length, said);
      assert.ok(ws.reduce((a, w) => a + w, 0) / ws.length > mean && Math.max(...ws) < 1 - 2 * f + 0.25, `${said}, max ${Math.max(...ws).toFixed(3)}`);
    }
    // 16 pairs (two groups) suffice for the 90% judge to read a weight above 0 in most seeded runs.
    assert.ok(weights(flipping(0.1), { groups: 2, steps: 1, seeds: 400 }).filter((w) => w > 0).length >= 0.7 * 400);
  });

  it('a judge scoring at random, or only by the place a trajectory is shown at: weight 0 in 95%+ of seeded runs, under 0.6 when not', () => {
    for (const [name, score] of [
      ['random', atRandom],
      ['position-only', byPosition],
    ] as const)
      for (const steps of [1, 5, 16]) {
        const ws = weights(score, { groups: 6, steps, seeds: 400 });
        const said = `${name}, ${steps} steps: ${ws
          .filter((w) => w > 0)
          .map((w) => w.toFixed(2))
          .join(' ')}`;
        assert.ok(ws.filter((w) => w === 0).length >= 0.95 * ws.length, said);
        // Where the bound passes by chance (under 5% of runs) the weight is the estimate that passed it: about 0.4-0.5.
        if (steps > 1) assert.ok(Math.max(...ws) < 0.6, said); // a first step's one chance in 25 can read more
      }
  });
});

describe("the judge's reliability in the update", () => {
  const training = parseTrainConfig({ training: { grpo: { scaleRewards: 'group' } } }).training;
  const policy = { name: 'p', roles: null, grpo: training.grpo } as unknown as TrainedPolicy;
  const item = (groupId: string, credit: number) => ({ g: {} as GroupRollout, s: { agentName: null }, credit, groupId }) as unknown as CreditedItem;
  const items = [item('judged', 1), item('judged', 0), item('own', 1), item('own', 0)];
  const rolled = { scheduled: [], sampled: null, groups: [], leftOut: [] } as RolledOut;

  it("scales the judged groups' advantages by the judge's weight and leaves the others as they are", () => {
    const plain = advantagesPerPolicy(items, rolled, [policy], training);
    const scaled = advantagesPerPolicy(items, rolled, [policy], training, { groups: new Set(['judged']), scale: 0.4 });
    assert.deepEqual(
      scaled.advantages,
      plain.advantages.map((a, k) => (k < 2 ? a * 0.4 : a)),
    );
    assert.deepEqual(
      scaled.perPolicy[0]!.map((x) => x.advantage),
      scaled.advantages,
    );
    assert.ok(Math.abs(plain.advantages[0]!) > 0.5, 'the groups have spread: there is something to scale');
  });

  it('scale 0 (weight 0, or at most judge.minReliability): the judged groups are left out of the update', () => {
    const out = advantagesPerPolicy(items, rolled, [policy], training, { groups: new Set(['judged']), scale: 0 });
    assert.deepEqual(out.advantages.slice(0, 2), [0, 0]);
    assert.deepEqual(
      out.perPolicy[0]!.map((x) => x.groupId),
      ['own', 'own'],
    );
  });
});
