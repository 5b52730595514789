/**
 * The zero-overhead reference for bench/store.ts: replays the rollout sleeps the runners actually drew
 * through the same pattern (batch barriers, or the queue's top-up threshold) with instant claims and
 * instant completion checks. Its throughput / limit is the best any store could do on that run.
 */
export type Pattern = 'batch' | 'queue';

class MinHeap {
  private a: number[] = [];
  get size(): number {
    return this.a.length;
  }
  push(v: number): void {
    const a = this.a;
    a.push(v);
    for (let i = a.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if (a[p]! <= a[i]!) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): number {
    const a = this.a;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1,
          r = l + 1;
        let m = i;
        if (l < a.length && a[l]! < a[m]!) m = l;
        if (r < a.length && a[r]! < a[m]!) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

export function patternBound(
  sc: { pattern: Pattern; batch: number; threshold?: number; runners: number },
  total: number,
  sleeps: number[],
  limit: number,
): number {
  if (sleeps.length === 0) return Number.NaN;
  let k = 0;
  const duration = () => sleeps[k++ % sleeps.length]!;
  let now = 0;
  if (sc.pattern === 'batch') {
    for (let done = 0; done < total; done += sc.batch) {
      const free = new MinHeap();
      for (let i = 0; i < sc.runners; i++) free.push(now);
      let end = now;
      for (let i = 0; i < Math.min(sc.batch, total - done); i++) {
        const t = free.pop() + duration();
        end = Math.max(end, t);
        free.push(t);
      }
      now = end;
    }
  } else {
    const busy = new MinHeap();
    let free = sc.runners,
      available = 0,
      active = 0,
      submitted = 0;
    for (;;) {
      while (submitted < total && active < sc.threshold!) {
        const n = Math.min(sc.batch, total - submitted);
        available += n;
        active += n;
        submitted += n;
      }
      while (available > 0 && free > 0) {
        busy.push(now + duration());
        free--;
        available--;
      }
      if (busy.size === 0) break;
      now = busy.pop();
      free++;
      active--;
    }
  }
  return total / now / limit;
}

/** One rollout's total sleep as the synthetic agent draws it: rounds ~ U{1..maxRounds}, 2 children a round plus `final`, each U(0, sleep). */
export function drawRolloutSleep(sc: { maxRounds: number; sleep: number }, random: () => number = Math.random): number {
  const rounds = 1 + Math.floor(random() * sc.maxRounds);
  let t = 0;
  for (let i = 0; i < 2 * rounds + 1; i++) t += random() * sc.sleep;
  return t;
}

/**
 * What the workload itself allows: the zero-overhead efficiency over `reps` fresh draws of the sleeps (not
 * only this run's), as its mean and the share of draws reaching `target`. A scenario whose draws rarely or
 * never reach the target cannot meet it reliably with any store.
 */
export function patternOdds(
  sc: { pattern: Pattern; batch: number; threshold?: number; runners: number; maxRounds: number; sleep: number },
  total: number,
  limit: number,
  target = 0.9,
  reps = 200,
): { mean: number; shareAtTarget: number } {
  let sum = 0,
    hits = 0;
  for (let r = 0; r < reps; r++) {
    const e = patternBound(
      sc,
      total,
      Array.from({ length: total }, () => drawRolloutSleep(sc)),
      limit,
    );
    sum += e;
    if (e >= target) hits++;
  }
  return { mean: sum / reps, shareAtTarget: hits / reps };
}

export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
