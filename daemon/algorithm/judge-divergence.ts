/**
 * The judge's divergence monitor (training with train.yaml's `judge:`): a policy trained on a judge's reward learns to
 * please the judge, biases included (reward hacking: longer answers, a style it favours). Each step it compares the
 * judge's reward (the step's reward/mean) with a reward the judge cannot game: the trusted reward (a person's label
 * where a rollout has one, else the agent's own reward: check.ts agentReward), and with the held-out validation. Over
 * the last `window` steps, when the judge's reward rises while the trusted reward (or validation) falls, both beyond
 * noise, it says so: in `agl train`'s output, in the step's metrics (judge/divergence, read by the dashboard's notes),
 * and with training.stopOnDivergence (--stop-on-divergence) the run stops there.
 * "Beyond noise": a least-squares trend over the window whose t statistic is at least TREND_T (about a 2% one-sided
 * chance under noise alone at 5 steps, and both must hold at once) and whose change over the window is at least
 * MIN_CHANGE. Validation is sparse (every valEvery steps): its trend is its first and last point in the window, a
 * fall of at least MIN_CHANGE, read at the step after it. A resumed run starts its window afresh.
 */
import { humanLabelOf } from '../../protocol/human-label.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { METRICS } from '../../protocol/metrics.js';
import { agentReward } from '../judge/check.js';
import type { GroupRollout } from './rollouts.js';

/** A trend's t statistic beyond which it is no noise. */
export const TREND_T = 3;
/** The smallest change over the window that counts, in reward units. */
export const MIN_CHANGE = 0.05;

/** One step as the monitor reads it: the judge's mean reward, the trusted mean, the validation after it (null: none). */
export interface DivergencePoint {
  step: number;
  judge: number | null;
  trusted: number | null;
  val: number | null;
}

/** A series' first and last values, and the straight line fitted to it: its change over the span and how sure (t of the slope; Infinity on an exact line). */
export interface Trend {
  from: number;
  to: number;
  change: number;
  t: number;
}

/** What the monitor found: the steps of the window, the judge's trend and the trend it ran against. */
export interface Divergence {
  fromStep: number;
  toStep: number;
  judge: Trend;
  against: 'trusted' | 'val';
  other: Trend;
}

/** The least-squares trend of (x, y) points; null under 3 points or with no spread in x. */
export function trendOf(points: readonly { x: number; y: number }[]): Trend | null {
  const n = points.length;
  if (n < 3) return null;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const sxx = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  if (sxx === 0) return null;
  const slope = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0) / sxx;
  const residual = points.reduce((a, p) => a + (p.y - (my + slope * (p.x - mx))) ** 2, 0);
  const se = Math.sqrt(residual / (n - 2) / sxx);
  const span = points[n - 1]!.x - points[0]!.x;
  return { from: points[0]!.y, to: points[n - 1]!.y, change: slope * span, t: se === 0 ? (slope === 0 ? 0 : Infinity * Math.sign(slope)) : slope / se };
}

const rising = (t: Trend | null): t is Trend => t !== null && t.t >= TREND_T && t.change >= MIN_CHANGE;
const falling = (t: Trend | null): t is Trend => t !== null && t.t <= -TREND_T && t.change <= -MIN_CHANGE;

/** Whether the last `window` steps of the series diverge (see the header); null when they do not, or too few are in. */
export function findDivergence(series: readonly DivergencePoint[], window: number): Divergence | null {
  const last = series.slice(-window);
  if (last.length < window) return null;
  const judge = trendOf(last.flatMap((p) => (p.judge === null ? [] : [{ x: p.step, y: p.judge }])));
  if (!rising(judge)) return null;
  const [fromStep, toStep] = [last[0]!.step, last.at(-1)!.step];
  const trusted = trendOf(last.flatMap((p) => (p.trusted === null ? [] : [{ x: p.step, y: p.trusted }])));
  if (falling(trusted)) return { fromStep, toStep, judge, against: 'trusted', other: trusted };
  const vals = last.filter((p) => p.val !== null);
  if (vals.length >= 2) {
    const [a, b] = [vals[0]!.val!, vals.at(-1)!.val!];
    if (b - a <= -MIN_CHANGE) return { fromStep, toStep, judge, against: 'val', other: { from: a, to: b, change: b - a, t: -Infinity } };
  }
  return null;
}

const f3 = (x: number) => x.toFixed(3);

/** The monitor's sentence: the window, the judge's rise and the other's fall, with their numbers. */
export function describeDivergence(d: Divergence, stopped: boolean): string {
  const other = d.against === 'trusted' ? "the trusted reward (people's labels, else the agent's own)" : 'the held-out reward';
  return (
    `judge divergence over steps ${d.fromStep}-${d.toStep}: the judge's reward rose ${f3(d.judge.from)} -> ${f3(d.judge.to)} ` +
    `while ${other} fell ${f3(d.other.from)} -> ${f3(d.other.to)}: the policy may be learning the judge's biases, not the task` +
    (stopped ? '; stopping (--stop-on-divergence)' : '; --stop-on-divergence stops a run here')
  );
}

/** The step's mean trusted reward over its rollouts that have one (a label first, else the agent's own); null with none. */
export async function trustedReward(store: LightningStore, groups: readonly GroupRollout[]): Promise<number | null> {
  const values: number[] = [];
  for (const g of groups) {
    if (!g.trajectory) continue;
    const spans = await store.querySpans({ rolloutId: g.rollout.id, attemptId: g.trajectory.attemptId });
    const v = humanLabelOf(spans)?.value ?? agentReward(spans);
    if (v !== null) values.push(v);
  }
  return values.length ? values.reduce((a, x) => a + x, 0) / values.length : null;
}

/** The run's monitor: the series so far, what it found, whether the run should stop. */
export class DivergenceMonitor {
  private readonly series: DivergencePoint[] = [];
  found: Divergence | null = null;
  /** What it said when it found one. */
  said: string | null = null;

  constructor(private readonly o: { window: number; stop: boolean; log?: (line: string) => void }) {}

  /** Whether the run should stop now (a divergence found, training.stopOnDivergence on). */
  get stopping(): boolean {
    return this.o.stop && this.found !== null;
  }

  /** A step's judge and trusted rewards; returns its metrics (the trusted mean, and judge/divergence when found). */
  noteStep(step: number, judge: number | null, trusted: number | null): Record<string, number> {
    this.series.push({ step, judge, trusted, val: null });
    return { ...(trusted !== null ? { [METRICS.judgeTrustedReward]: trusted } : {}), ...(this.check() ? { [METRICS.judgeDivergence]: 1 } : {}) };
  }

  /** A validation's mean after `step` (read at the next step's check). */
  noteValidation(step: number, reward: number): void {
    const p = this.series.find((x) => x.step === step);
    if (p) p.val = reward;
  }

  private check(): boolean {
    if (this.found) return false;
    const d = findDivergence(this.series, this.o.window);
    if (!d) return false;
    this.found = d;
    this.said = describeDivergence(d, this.o.stop);
    this.o.log?.(this.said);
    return true;
  }
}
