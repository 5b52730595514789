/**
 * The rollout budget of an optimization (`--budget N`): every rollout counts, minibatches, validation and test alike.
 * What the run's end needs (the test set scored for the seed and for the best candidate) is reserved from the start,
 * and a step of the search starts only when its most costly outcome fits what is left, so a run never spends more
 * than N. The count is of (candidate, task, split) scores asked for, in the run's deterministic order: a resumed run
 * counts the scores it finds in the store as it counted them the first time, and so takes the same decisions; the
 * rollouts a kill lost (at most those in flight) come on top, and the summary reports them as spent.
 */
export class Budget {
  /** Scores asked for so far. */
  spent = 0;

  constructor(
    readonly total: number,
    /** Kept for the run's end (the test set, for the seed and the best). */
    private reserve: number,
  ) {}

  /** Whether `n` more fit, the reserve kept. */
  fits(n: number): boolean {
    return this.spent + n <= this.total - this.reserve;
  }

  spend(n: number): void {
    this.spent += n;
  }

  /** The run's end: what was reserved for it is now to spend. */
  releaseReserve(): void {
    this.reserve = 0;
  }

  get left(): number {
    return Math.max(0, this.total - this.reserve - this.spent);
  }
}
