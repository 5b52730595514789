/**
 * The judge's test-retest reliability (daemon/judge/reliability.ts) on synthetic scores with known answers: the noise
 * is the mean of d²/2 over the retest pairs, the signal the pooled spread within groups, r = clamp(1 - noise/signal,
 * 0, 1), both smoothed over steps; a judge that always agrees with itself has r 1, one drawing at random r ~0, and a
 * judge with a known share of noise the reliability that share says. Then what the trainer does with it
 * (daemon/algorithm/step-advantages.ts): the judged groups' advantages times r, or left out at scale 0.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import type { TrainedPolicy } from '../../daemon/algorithm/open-policy-set.js';
import type { GroupRollout } from '../../daemon/algorithm/rollouts.js';
import { advantagesPerPolicy } from '../../daemon/algorithm/step-advantages.js';
import type { CreditedItem } from '../../daemon/algorithm/step-credit.js';
import type { RolledOut } from '../../daemon/algorithm/step-collect.js';
import { chiSquareLow, evidenceOf, reliabilityOf, smoothed, SMOOTHING, type ReliabilityState } from '../../daemon/judge/reliability.js';
import { rng as seededStream } from '../../samples/shared/rng.js';

const close = (a: number | null, b: number, eps = 1e-12) => assert.ok(a !== null && Math.abs(a - b) < eps, `${a} is not ${b}`);

/** A normal draw (Box-Muller) from a seeded stream. */
const gauss = (next: () => number) => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());

describe("the judge's reliability", () => {
  it('noise is the mean of d²/2 over the pairs, signal the pooled spread within groups (groups of one add nothing)', () => {
    const e = evidenceOf(
      [[0, 1], [0.5, 0.5, 0.5], [0.7]],
      [
        [0.2, 0.6],
        [1, 1],
      ],
    );
    // Spread: (0.25 + 0.25) + 0 over (1 + 2) degrees of freedom; noise: (0.16 / 2 + 0) over 2 pairs.
    assert.deepEqual({ ...e, noiseSum: Math.round(e.noiseSum * 1e12) / 1e12 }, { pairs: 2, noiseSum: 0.08, spreadSum: 0.5, spreadDf: 3 });
    const r = reliabilityOf(e);
    close(r.noise, 0.04);
    close(r.signal, 0.5 / 3);
    close(r.noiseBound, 0.08 / chiSquareLow(2));
    close(r.r, Math.max(0, 1 - 0.08 / chiSquareLow(2) / (0.5 / 3)));
  });

  it("r reads the noise's upper 95% bound: the chi-square's 5% quantiles as tables give them, from 5 pairs up", () => {
    for (const [df, q] of [
      [5, 1.1455],
      [10, 3.9403],
      [30, 18.4927],
      [60, 43.188],
    ] as const)
      assert.ok(Math.abs(chiSquareLow(df) - q) / q < 0.02, `df ${df}: ${chiSquareLow(df)} vs ${q}`);
    assert.ok(chiSquareLow(2) < 0.1026, 'below the table (0.1026) at 2 pairs: the bound errs on the side of less trust');
    // The same noise/signal ratio (0.1) is trusted more as pairs accumulate: 4 pairs, then 40.
    const few = reliabilityOf({ pairs: 4, noiseSum: 4 * 0.01, spreadSum: 1, spreadDf: 10 });
    const many = reliabilityOf({ pairs: 40, noiseSum: 40 * 0.01, spreadSum: 1, spreadDf: 10 });
    assert.ok(few.r < many.r && many.r < 0.9 && many.r > 0.8, `${few.r} < ${many.r} < 0.9`);
  });

  it('a judge that always agrees with itself has r 1; no pair, r 1; noise without spread, r 0; r never below 0', () => {
    assert.equal(
      reliabilityOf(
        evidenceOf(
          [[0, 1, 1, 0]],
          [
            [1, 1],
            [0, 0],
          ],
        ),
      ).r,
      1,
    );
    assert.equal(reliabilityOf(evidenceOf([[0, 1]], [])).r, 1);
    assert.equal(reliabilityOf(null).r, 1);
    assert.equal(reliabilityOf(evidenceOf([[0.5, 0.5]], [[0.2, 0.8]])).r, 0);
    assert.equal(reliabilityOf(evidenceOf([[0.4, 0.6]], [[0, 1]])).r, 0, 'noise 0.25 against a spread of 0.02: clamped at 0');
    assert.equal(reliabilityOf(evidenceOf([[0.5, 0.5]], [[0.5, 0.5]])).r, 1, 'no spread and no noise: nothing to scale');
  });

  it('smoothing: the sums of earlier steps decay by SMOOTHING, the new step adds its own', () => {
    const a = evidenceOf([[0, 1]], [[0, 0.2]]);
    const b = evidenceOf([[0.2, 0.4]], [[0, 0.4]]);
    const s = smoothed(smoothed(null, a), b);
    close(s.pairs, SMOOTHING * 1 + 1);
    close(s.noiseSum, SMOOTHING * 0.02 + 0.08);
    close(s.spreadSum, SMOOTHING * 0.5 + 0.02);
    close(s.spreadDf, SMOOTHING + 1);
    const bound = (SMOOTHING * 0.02 + 0.08) / chiSquareLow(SMOOTHING + 1);
    close(reliabilityOf(s).r, Math.max(0, 1 - bound / ((SMOOTHING * 0.5 + 0.02) / (SMOOTHING + 1))));
  });

  it('a judge whose scores are truth plus known noise: the truth’s share of the spread is 0.04 / (0.04 + 0.01) = 0.8, r a little under', () => {
    const next = seededStream(42);
    let state: ReliabilityState | null = null;
    for (let step = 0; step < 40; step++) {
      const groups: number[][] = [];
      const pairs: [number, number][] = [];
      for (let g = 0; g < 12; g++) {
        const truth = Array.from({ length: 8 }, () => 0.2 * gauss(next));
        groups.push(truth.map((t) => t + 0.1 * gauss(next)));
        pairs.push([truth[0]! + 0.1 * gauss(next), truth[0]! + 0.1 * gauss(next)]);
      }
      state = smoothed(state, evidenceOf(groups, pairs));
    }
    const r = reliabilityOf(state);
    const said = `r ${r.r.toFixed(3)} (noise ${r.noise!.toFixed(4)}, bound ${r.noiseBound!.toFixed(4)}, signal ${r.signal!.toFixed(4)})`;
    assert.ok(Math.abs(1 - r.noise! / r.signal! - 0.8) < 0.1, said);
    assert.ok(r.r > 0.6 && r.r < 1 - r.noise! / r.signal!, `r reads the bound, below the estimate's share: ${said}`);
  });

  it('a judge that draws every score at random: r 0 at almost every step from the first, never near a trusted judge', () => {
    const rs: number[] = [];
    for (let seed = 1; seed <= 10; seed++) {
      const next = seededStream(seed);
      let state: ReliabilityState | null = null;
      for (let step = 0; step < 16; step++) {
        const groups = Array.from({ length: 12 }, () => Array.from({ length: 8 }, () => next()));
        const pairs = Array.from({ length: 12 }, (): [number, number] => [next(), next()]);
        state = smoothed(state, evidenceOf(groups, pairs));
        rs.push(reliabilityOf(state).r);
      }
    }
    // Noise and spread are the same variance here: r > 0 needs the noise's upper bound below the spread's estimate, a
    // chance the 95% bound leaves at a few steps in a hundred (the sums of neighbouring steps overlap).
    const said = rs.map((r) => r.toFixed(2)).join(' ');
    assert.ok(rs.filter((r) => r === 0).length >= 0.95 * rs.length, said);
    assert.ok(Math.max(...rs) < 0.5, said);
    assert.equal(rs[0], 0, `the first step already: ${said}`);
  });
});

describe("the judge's reliability in the update", () => {
  const training = parseTrainConfig({ training: { grpo: { scaleRewards: 'group' } } }).training;
  const policy = { name: 'p', roles: null, grpo: training.grpo } as unknown as TrainedPolicy;
  const item = (groupId: string, credit: number) => ({ g: {} as GroupRollout, s: { agentName: null }, credit, groupId }) as unknown as CreditedItem;
  const items = [item('judged', 1), item('judged', 0), item('own', 1), item('own', 0)];
  const rolled = { scheduled: [], sampled: null, groups: [], leftOut: [] } as RolledOut;

  it("scales the judged groups' advantages by r and leaves the others as they are", () => {
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

  it('scale 0 (below judge.minReliability): the judged groups are left out of the update', () => {
    const out = advantagesPerPolicy(items, rolled, [policy], training, { groups: new Set(['judged']), scale: 0 });
    assert.deepEqual(out.advantages.slice(0, 2), [0, 0]);
    assert.deepEqual(
      out.perPolicy[0]!.map((x) => x.groupId),
      ['own', 'own'],
    );
  });
});
