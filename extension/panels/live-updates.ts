/**
 * What the open panels do with the daemon's events (protocol/events.ts; Ctx holds the one stream and the panel host
 * hands each event on). Free of the vscode API, so test/webview drives exactly this code against a real daemon and
 * its stream.
 *   RolloutsRefresh  the trajectory viewer: tells its webview which rollouts changed (TrajectoryProtocol.changed), so
 *                    the open list re-reads its page and an open rollout re-reads itself; on `hello` (a reconnection)
 *                    any may have changed.
 *   RunMetricsFeed   the training dashboard: re-reads the shown run and the compared ones when the stream says their
 *                    progress or metrics moved (every watched run on `hello`), and pushes the run with the points
 *                    after those already sent (DashboardProtocol.metrics); says when a run appeared (the dashboard may
 *                    be waiting for the first one).
 *   OptimizationRefresh  the optimization view: tells its webview when the watched optimization moved (its record,
 *                    candidates or optimizer calls: changedOptimizationIds; or a rollout of its agent, whose val scores
 *                    the view shows), at most every OPTIMIZATION_GAP_MS (the view's read is the run's whole record);
 *                    and when an optimization appeared.
 * Nothing here polls: without an event nothing is read.
 */
import { changedOptimizationIds, changedRolloutIds, type DaemonEvent } from '../../protocol/events.js';
import type { MetricPoint, TrainingRun } from '../../protocol/store.js';
import type { AglClient } from '../../client/client.js';

/** While the store keeps changing (a training run), the viewer's list is re-read at most this often (ms); the first change goes at once. */
export const REFRESH_GAP_MS = 250;

export class RolloutsRefresh {
  private pending = new Set<string>();
  private all = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = 0;

  constructor(
    private readonly notify: (changed: { rolloutIds: string[]; all?: boolean }) => void,
    private readonly gapMs = REFRESH_GAP_MS,
  ) {}

  onEvent(event: DaemonEvent): void {
    if (event.type === 'hello' || (event.type === 'store' && event.change.truncated)) this.all = true;
    else if (event.type === 'store') for (const id of changedRolloutIds(event.change)) this.pending.add(id);
    else return;
    if (this.all || this.pending.size) this.schedule();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.pending.clear();
    this.all = false;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.last = Date.now();
        const changed = { rolloutIds: [...this.pending], ...(this.all && { all: true }) };
        this.pending.clear();
        this.all = false;
        this.notify(changed);
      },
      Math.max(0, this.last + this.gapMs - Date.now()),
    );
  }
}

/** While an optimization keeps moving, its view is told at most this often (ms); the first change goes at once. */
export const OPTIMIZATION_GAP_MS = 500;

export class OptimizationRefresh {
  private watched: { runId: string; agent: string } | null = null;
  private readonly knownRuns = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = 0;

  constructor(
    private readonly notify: (runId: string) => void,
    private readonly runAppeared: () => void,
    private readonly gapMs = OPTIMIZATION_GAP_MS,
  ) {}

  /** Follow this run (the view shows it); its agent's rollouts move its scores. */
  watch(runId: string, agent: string): void {
    this.watched = { runId, agent };
    this.knownRuns.add(runId);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.watched = null;
  }

  onEvent(event: DaemonEvent): void {
    if (event.type === 'hello') {
      this.runAppeared();
      this.schedule();
      return;
    }
    if (event.type !== 'store') return;
    const { change } = event;
    const fresh = change.runs.filter((r) => r.kind === 'optimize' && !this.knownRuns.has(r.id));
    for (const r of fresh) this.knownRuns.add(r.id);
    if (fresh.length || change.truncated) this.runAppeared();
    const w = this.watched;
    if (!w) return;
    // A rollout's change names its agent, not its run: one of the agent's may be this run's (a val score landing); a
    // promotion or clear of the agent's prompts changes the view's next step.
    const ofAgent = change.rollouts.some((r) => r.agent === w.agent) || change.promotedPrompts.some((p) => p.agent === w.agent);
    if (change.truncated || changedOptimizationIds(change).includes(w.runId) || ofAgent) this.schedule();
  }

  private schedule(): void {
    if (this.timer || !this.watched) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.last = Date.now();
        if (this.watched) this.notify(this.watched.runId);
      },
      Math.max(0, this.last + this.gapMs - Date.now()),
    );
  }
}

/** Where a watched run's pushes stand. */
interface RunCursor {
  lastStep: number;
  lastUpdated: number;
  reading: boolean;
  /** An event came while a read was under way: read once more after it. */
  again: boolean;
}

export class RunMetricsFeed {
  private readonly runs = new Map<string, RunCursor>();
  private readonly knownRuns = new Set<string>();

  constructor(
    private readonly client: () => Promise<AglClient>,
    private readonly send: (run: TrainingRun, points: MetricPoint[]) => void,
    private readonly runAppeared: () => void = () => {},
    private readonly log: (message: string) => void = () => {},
  ) {}

  /** Watches these runs from now on (the shown one and the compared ones); each is read at once (catching up). */
  watch(runIds: string[]): void {
    for (const id of [...this.runs.keys()]) if (!runIds.includes(id)) this.runs.delete(id);
    for (const id of runIds) {
      if (!this.runs.has(id)) this.runs.set(id, { lastStep: -1, lastUpdated: 0, reading: false, again: false });
      void this.read(id);
    }
  }

  stop(): void {
    this.runs.clear();
  }

  onEvent(event: DaemonEvent): void {
    if (event.type === 'hello') {
      this.runAppeared();
      for (const id of this.runs.keys()) void this.read(id);
      return;
    }
    if (event.type !== 'store') return;
    const { change } = event;
    // The dashboard lists training runs only: an optimization or evaluation appearing is not one.
    const fresh = change.runs.filter((r) => r.kind === 'train' && !this.knownRuns.has(r.id));
    for (const r of fresh) this.knownRuns.add(r.id);
    if (fresh.length || change.truncated) this.runAppeared();
    const moved = new Set([...change.runs.map((r) => r.id), ...change.metrics.map((m) => m.runId)]);
    for (const id of this.runs.keys()) if (change.truncated || moved.has(id)) void this.read(id);
  }

  /** Reads the run and its points from the step before the last sent (validation writes a point at the current step after the training point). */
  private async read(runId: string): Promise<void> {
    const cursor = this.runs.get(runId);
    if (!cursor) return;
    if (cursor.reading) {
      cursor.again = true;
      return;
    }
    cursor.reading = true;
    try {
      const client = await this.client();
      const run = await client.getTrainingRun(runId);
      const points = run ? await client.queryMetrics(runId, cursor.lastStep >= 0 ? cursor.lastStep - 1 : undefined) : [];
      if (run && this.runs.get(runId) === cursor && (points.length || run.updatedAt !== cursor.lastUpdated)) {
        this.send(run, points);
        cursor.lastUpdated = run.updatedAt;
        for (const p of points) cursor.lastStep = Math.max(cursor.lastStep, p.step);
      }
    } catch (err) {
      this.log(`dashboard: reading run ${runId}: ${(err as Error).message}`); // the daemon restarting: its hello reads again
    } finally {
      cursor.reading = false;
    }
    if (cursor.again) {
      cursor.again = false;
      void this.read(runId);
    }
  }
}
