/**
 * The judge's divergence monitor (daemon/algorithm/judge-divergence.ts) on synthetic series of step means: the judge's
 * reward rising while the trusted reward (or the held-out reward) falls over the window is a divergence, said with the
 * window and the numbers; noise alone, both rising, or a rise too small is none; the run's flags set it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { DivergenceMonitor, describeDivergence, findDivergence, trendOf, type DivergencePoint } from '../../daemon/algorithm/judge-divergence.js';
import { METRICS } from '../../protocol/metrics.js';
import { TRAIN_OPTIONS, configOverrides } from '../../protocol/train-options.js';
import { stepNotes } from '../../protocol/training-health.js';
import { rng } from '../../samples/shared/rng.js';

const series = (judge: number[], trusted: number[], val: (number | null)[] = []): DivergencePoint[] =>
  judge.map((j, i) => ({ step: i + 1, judge: j, trusted: trusted[i] ?? null, val: val[i] ?? null }));

describe('the judge divergence monitor', () => {
  it('fits a trend: the change over the span and its t statistic', () => {
    const exact = trendOf([0.1, 0.2, 0.3, 0.4].map((y, i) => ({ x: i + 1, y })))!;
    assert.ok(Math.abs(exact.change - 0.3) < 1e-12);
    assert.ok(exact.t > 1e6);
    const noisy = trendOf([0.5, 0.4, 0.6, 0.5, 0.55].map((y, i) => ({ x: i, y })))!;
    assert.ok(Math.abs(noisy.t) < 2);
    assert.equal(trendOf([{ x: 1, y: 1 }]), null);
  });

  it('the judge rising while the trusted reward falls over the window is a divergence, with the window and the numbers', () => {
    const s = series([0.4, 0.5, 0.61, 0.7, 0.79, 0.9], [0.6, 0.6, 0.5, 0.41, 0.3, 0.2]);
    const d = findDivergence(s, 5)!;
    assert.ok(d);
    assert.deepEqual([d.fromStep, d.toStep, d.against], [2, 6, 'trusted']);
    assert.ok(d.judge.change > 0.35 && d.other.change < -0.35, JSON.stringify(d));
    assert.match(
      describeDivergence(d, true),
      /^judge divergence over steps 2-6: the judge's reward rose 0\.500 -> 0\.900 while the trusted reward .* fell 0\.600 -> 0\.200: .*; stopping/,
    );
  });

  it('the judge rising while held-out validation falls is one too; both rising, or too few steps, is none', () => {
    const flat = [0.5, 0.52, 0.49, 0.51, 0.5];
    const d = findDivergence(series([0.4, 0.5, 0.6, 0.7, 0.8], flat, [0.7, null, null, null, 0.5]), 5);
    assert.equal(d?.against, 'val');
    assert.deepEqual([d?.other.from, d?.other.to], [0.7, 0.5]);
    assert.equal(findDivergence(series([0.4, 0.5, 0.6, 0.7, 0.8], [0.3, 0.4, 0.5, 0.6, 0.7]), 5), null);
    assert.equal(findDivergence(series([0.4, 0.5, 0.6, 0.7], [0.7, 0.6, 0.5, 0.4]), 5), null);
    // A rise smaller than MIN_CHANGE over the window is no divergence however steady.
    assert.equal(findDivergence(series([0.5, 0.51, 0.52, 0.53, 0.54], [0.5, 0.49, 0.48, 0.47, 0.46]), 5), null);
  });

  it('noise alone over 200 steps never diverges', () => {
    const next = rng(7);
    const noise = (n: number) => Array.from({ length: n }, () => 0.5 + (next() - 0.5) * 0.3);
    const [judge, trusted, val] = [noise(200), noise(200), noise(200).map((v, i) => (i % 5 === 4 ? v : null))];
    for (let end = 5; end <= 200; end++) assert.equal(findDivergence(series(judge, trusted, val).slice(0, end), 5), null, `steps to ${end}`);
  });

  it("a run's monitor records the trusted reward, marks the step it diverges at once, and stops when asked", () => {
    const lines: string[] = [];
    const m = new DivergenceMonitor({ window: 3, stop: true, log: (l) => lines.push(l) });
    assert.deepEqual(m.noteStep(1, 0.3, 0.6), { [METRICS.judgeTrustedReward]: 0.6 });
    m.noteStep(2, 0.5, 0.4);
    assert.equal(m.stopping, false);
    assert.deepEqual(m.noteStep(3, 0.7, 0.2), { [METRICS.judgeTrustedReward]: 0.2, [METRICS.judgeDivergence]: 1 });
    assert.equal(m.stopping, true);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /steps 1-3/);
    assert.deepEqual(m.noteStep(4, 0.9, 0.1), { [METRICS.judgeTrustedReward]: 0.1 });
    const c = parseTrainConfig(configOverrides(TRAIN_OPTIONS, { 'stop-on-divergence': true, 'divergence-window': '4' }));
    assert.deepEqual([c.training.stopOnDivergence, c.training.divergenceWindow], [true, 4]);
    assert.deepEqual([parseTrainConfig({}).training.stopOnDivergence, parseTrainConfig({}).training.divergenceWindow], [false, 5]);
  });

  it("the dashboard's notes say the step it diverged at, with the judge's and the trusted reward", () => {
    const step = (k: number, judge: number, trusted: number, diverged = false) => [
      { step: k, name: METRICS.rewardMean, value: judge },
      { step: k, name: METRICS.judgeTrustedReward, value: trusted },
      { step: k, name: METRICS.loss, value: 0.1 },
      { step: k, name: METRICS.rolloutTransitions, value: 8 },
      ...(diverged ? [{ step: k, name: METRICS.judgeDivergence, value: 1 }] : []),
    ];
    const notes = stepNotes([...step(1, 0.3, 0.6), ...step(2, 0.5, 0.4), ...step(3, 0.7, 0.2, true)]).filter((n) => n.kind === 'judge-divergence');
    assert.equal(notes.length, 1);
    assert.equal(notes[0]!.step, 3);
    assert.match(notes[0]!.text, /^the judge's reward rose while the trusted reward .* fell .*: now the judge's 0\.700, the trusted 0\.200; /);
    assert.match(notes[0]!.tryFirst, /agl judge check RUN --labels/);
  });
});
