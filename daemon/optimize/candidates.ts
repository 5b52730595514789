/**
 * The run's candidates, in their deterministic order (ordinal 0 is the seed): each stored with its lineage before a
 * rollout is spent on it, then decided once (accepted, rejected, or refused by the checks), with the scores it was
 * decided on. A resumed run proposes the same candidates in the same order and finds each in the store: the store
 * takes an identical record again as a no-op, and the candidate keeps the resources version its rollouts ran with.
 * The pool also keeps what the search reads back: every candidate's val scores, and which texts were scored already.
 */
import { type CandidateDecision, type CandidateScores, candidateId, type PromptCandidate, type PromptCandidateInput } from '../../protocol/prompts.js';
import { type CheckContext, promptsKey, refusal } from './checks.js';

/** The store's side of candidates (LightningStore's methods). */
export interface CandidateRecords {
  addPromptCandidate(input: PromptCandidateInput): Promise<PromptCandidate>;
  decidePromptCandidate(id: string, decision: CandidateDecision): Promise<PromptCandidate>;
}

/** A proposal: its texts and where they came from. */
export interface Proposal {
  prompts: Record<string, string>;
  parents: string[];
  origin: PromptCandidate['origin'];
  component: string | null;
  reflection: string | null;
  minibatch: string[] | null;
}

export interface PoolOptions {
  runId: string;
  records: CandidateRecords;
  /** The run's candidates already stored (a resumed run's), in ordinal order. */
  stored: readonly PromptCandidate[];
  /** Publishes a candidate's texts as a resources version (with the run's LLM); its id. */
  publish(prompts: Record<string, string>, id: string): Promise<string>;
  maxChars: number;
}

export class CandidatePool {
  readonly all: PromptCandidate[] = [];
  /** Val scores (in the val set's order) of the candidates scored on all of val. */
  readonly val = new Map<string, number[]>();
  private readonly scored = new Set<string>();
  private seed: Record<string, string> | null = null;

  constructor(private readonly o: PoolOptions) {}

  get(id: string): PromptCandidate {
    const c = this.all.find((x) => x.id === id);
    if (!c) throw new Error(`no candidate ${id} in this run`);
    return c;
  }

  /** Why these texts must not be rolled out (the checks: checks.ts), or null. The seed itself is never refused. */
  refusal(prompts: Record<string, string>): string | null {
    if (!this.seed) return null;
    const ctx: CheckContext = { seed: this.seed, maxChars: this.o.maxChars, seen: (p) => this.scored.has(promptsKey(p)) };
    return refusal(prompts, ctx);
  }

  /**
   * Stores a proposal as the next candidate: refused with the checks' reason (or `unusable`'s, when the optimizer's
   * answer gave no texts), else proposed with its resources version published, ready to be rolled out.
   */
  async propose(p: Proposal, unusable: string | null = null): Promise<PromptCandidate> {
    const ordinal = this.all.length;
    const id = candidateId(this.o.runId, ordinal);
    const reason = unusable ?? (ordinal === 0 ? null : this.refusal(p.prompts));
    const before = this.o.stored[ordinal];
    if (before && before.id !== id) throw new Error(`the stored candidate ${ordinal} of run ${this.o.runId} is ${before.id}, not ${id}`);
    const resourcesId = reason !== null ? null : (before?.resourcesId ?? (await this.o.publish(p.prompts, id)));
    // A refused candidate is stored refused at birth, with its reason: it is never rolled out.
    const input: PromptCandidateInput = { id, runId: this.o.runId, ordinal, ...p, status: reason === null ? 'proposed' : 'refused', reason, resourcesId };
    const c = await this.o.records.addPromptCandidate(input);
    if (reason === null) this.scored.add(promptsKey(p.prompts));
    if (ordinal === 0) this.seed = p.prompts;
    this.all.push(c);
    return c;
  }

  /** Decides a proposed candidate once, with the scores it was decided on. */
  async decide(c: PromptCandidate, status: 'accepted' | 'rejected', scores: Partial<CandidateScores>, reason: string | null = null): Promise<PromptCandidate> {
    const decided = await this.o.records.decidePromptCandidate(c.id, {
      status,
      reason,
      scores: { minibatch: scores.minibatch ?? null, val: scores.val ?? null, test: scores.test ?? null },
    });
    this.all[this.all.indexOf(c)] = decided;
    return decided;
  }

  /** Keeps a candidate's scores on all of val (what parent selection and the best read). */
  setVal(id: string, scores: number[]): void {
    this.val.set(id, scores);
  }

  /** The candidates whose lineage reaches `id` (itself included), nearest first. */
  ancestors(id: string): string[] {
    const out: string[] = [];
    const queue = [id];
    while (queue.length) {
      const next = queue.shift()!;
      if (out.includes(next)) continue;
      out.push(next);
      queue.push(...this.get(next).parents);
    }
    return out;
  }
}
