/**
 * What the runs on the dashboard's charts measured (charts.ts draws it): every metric point by run, which recorded
 * values nothing measured and why (protocol/training-health.ts unmeasuredPoints: the loss of a step without an update,
 * a policy's reward in a step without its calls; drawn as gaps), and one colour slot per policy and role name, the
 * same on every chart.
 */
import { parsePolicyMetric, parseRoleMetric } from '../../protocol/metrics.js';
import type { MetricPoint } from '../../protocol/store.js';
import { unmeasuredPoints, type RunContext } from '../../protocol/training-health.js';
import type { ChartRun } from './chart-options.js';

const ownerOf = (metric: string): string | undefined => parsePolicyMetric(metric)?.policy ?? parseRoleMetric(metric)?.role;

export class ChartData {
  /** run id -> metric -> step -> value */
  private readonly values = new Map<string, Map<string, Map<number, number>>>();
  /** run id -> metric -> step -> why nothing measured the value recorded there. */
  private readonly unmeasured = new Map<string, Map<string, Map<number, string>>>();
  /** Policy and role name -> colour slot, given in name order as names appear, never taken back. */
  private readonly ownerSlots = new Map<string, number>();
  private runs: ChartRun[] = [];

  /** Which runs are drawn, first = the run the header shows; the others' points are dropped. */
  setRuns(runs: ChartRun[]): void {
    this.runs = runs;
    for (const id of [...this.values.keys()]) {
      if (runs.some((r) => r.id === id)) continue;
      this.values.delete(id);
      this.unmeasured.delete(id);
    }
  }

  add(runId: string, points: MetricPoint[], ctx: RunContext = {}): void {
    if (!this.values.has(runId)) this.values.set(runId, new Map());
    const run = this.values.get(runId)!;
    for (const p of points) {
      if (!run.has(p.name)) run.set(p.name, new Map());
      run.get(p.name)!.set(p.step, p.value);
    }
    const all = [...run].flatMap(([name, steps]) => [...steps].map(([step, value]) => ({ name, step, value })));
    this.unmeasured.set(runId, unmeasuredPoints(all, ctx));
  }

  /** The runs drawn that have points. */
  shownRuns(): ChartRun[] {
    return this.runs.filter((r) => this.values.has(r.id));
  }

  /** Every metric name of the runs shown. */
  names(): Set<string> {
    return new Set(this.shownRuns().flatMap((r) => [...this.values.get(r.id)!.keys()]));
  }

  present(metric: string): boolean {
    return this.shownRuns().some((r) => this.values.get(r.id)!.has(metric));
  }

  /**
   * The steps a line of a run's metric spans: those it was recorded at, and those where nothing measured it (a policy's
   * loss at a step without its update is not recorded: the step is still on the line, as a gap).
   */
  stepsOf(runId: string, metric: string): number[] {
    return [...new Set([...(this.series(runId, metric)?.keys() ?? []), ...(this.unmeasured.get(runId)?.get(metric)?.keys() ?? [])])];
  }

  /** A run's recorded values of a metric, by step (measured or not). */
  series(runId: string, metric: string): Map<number, number> | undefined {
    return this.values.get(runId)?.get(metric);
  }

  /** Why nothing measured the value of a run's metric at a step, or undefined when it was measured. */
  whyUnmeasured(runId: string, metric: string, step: number): string | undefined {
    return this.unmeasured.get(runId)?.get(metric)?.get(step);
  }

  /** The first reason any run shown gives for a metric it never measured ('' when none). */
  firstWhy(metric: string): string {
    return this.shownRuns().flatMap((r) => [...(this.unmeasured.get(r.id)?.get(metric)?.values() ?? [])])[0] ?? '';
  }

  /** A run's measured value of a metric at a step (null: none recorded, or nothing measured it). */
  measured(runId: string, metric: string, step: number): number | null {
    if (this.whyUnmeasured(runId, metric, step) !== undefined) return null;
    return this.series(runId, metric)?.get(step) ?? null;
  }

  /** Every measured value of a metric across the runs shown. */
  allValues(metric: string): number[] {
    return this.shownRuns().flatMap((r) =>
      [...(this.series(r.id, metric)?.keys() ?? [])].map((step) => this.measured(r.id, metric, step)).filter((v): v is number => v !== null),
    );
  }

  latest(runId: string, name: string): number | undefined {
    const series = this.series(runId, name);
    if (!series || series.size === 0) return undefined;
    return series.get(Math.max(...series.keys()));
  }

  /** The step with the highest value of a metric in a run. */
  best(runId: string, name: string): { step: number; reward: number } | null {
    let best: { step: number; reward: number } | null = null;
    for (const [step, value] of this.series(runId, name) ?? []) if (!best || value > best.reward) best = { step, reward: value };
    return best;
  }

  /** The colour slot of a policy's or a role's line (null for other metrics): one per name, the same on every chart. */
  ownerSlot(metric: string): number | null {
    const name = ownerOf(metric);
    if (name === undefined) return null;
    if (!this.ownerSlots.has(name)) {
      // New names take the next slots in name order, so the same run draws the same colours each time it opens.
      const names = [...this.names()].map(ownerOf).filter((n): n is string => n !== undefined && !this.ownerSlots.has(n));
      for (const n of [...new Set(names)].sort()) this.ownerSlots.set(n, this.ownerSlots.size);
    }
    return this.ownerSlots.get(name) ?? null;
  }
}
