/**
 * A prompt optimization's records (protocol/prompts.ts) in the store, written once for SQLite and PostgreSQL: the
 * rules (a candidate's texts and lineage never change, a candidate is decided once, an optimizer call is stored once,
 * a promotion of a candidate publishes that candidate's text), the statements both engines run (`?` placeholders) and
 * rows <-> records. PromptRecords applies them over four primitives each backend gives (sql-store.ts): a read, an
 * insert unless a row is in the way, a read-modify-write of one row, a write. Re-adding what is stored is answered with
 * the stored record, so a resumed optimizer replays its adds without special cases.
 */
import { ConflictError, NotFoundError } from '../../protocol/lightning-store.js';
import { sameAgent } from '../../protocol/agent-id.js';
import {
  CandidateDecision,
  ClearPromotedPromptInput,
  OptimizerCallInput,
  PromotePromptInput,
  PromptCandidateInput,
  type CandidateDecisionParsed,
  type CandidateScores,
  type OptimizerCall,
  type PromotePromptInputParsed,
  type PromotedPrompt,
  type PromptCandidate,
  type PromptCandidateInputParsed,
  type PromptPromotion,
} from '../../protocol/prompts.js';
import { canonicalJson } from '../../protocol/span-reading.js';
import type { MovingTable } from './changes.js';
import type { Row } from './common.js';

/** One statement and its values (`?` placeholders). */
export interface Statement {
  sql: string;
  params: unknown[];
}

/** What a read-modify-write decides from the row it read: its result, and the write (of a row that moved) if any. */
export interface RowChange<T> {
  result: T;
  write?: Statement;
  /** The id of the row the write moved (the change feed reports it). */
  moved?: string;
}

/** What a backend gives PromptRecords: sql-store.ts's shared reads and three writes, each in its own transaction. */
export interface RecordsBackend {
  /** A read (shared SQL). */
  select(sql: string, params: unknown[]): Promise<Row[]>;
  /** Inserts, unless a row `existing` finds is in the way: then that row, and nothing written. */
  insertUnlessExists(insert: Statement, existing: Statement): Promise<Row | null>;
  /** Reads a row (locked until the write), lets `change` decide, and writes what it says, atomically. */
  modifyRow<T>(select: Statement, table: MovingTable, change: (row: Row | undefined) => RowChange<T>): Promise<T>;
  execute(write: Statement): Promise<void>;
  /** The column a table's rows are ordered by insertion with (schema.ts ORDER_COLUMN). */
  orderColumn: string;
}

/** The fields a candidate keeps for good once stored: its place, its texts, its lineage. */
const LINEAGE = ['runId', 'ordinal', 'prompts', 'parents', 'origin', 'component', 'reflection', 'minibatch', 'resourcesId'] as const;
const SCORE_KEYS = ['minibatch', 'val', 'test'] as const;
const same = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
const says = (status: string, reason: string | null) => `${status}${reason ? ` (${reason})` : ''}`;

// --- candidates --------------------------------------------------------------------------------------------------
const rowToCandidate = (r: Row): PromptCandidate => JSON.parse(r.data);
const candidateWrite = (c: PromptCandidate): unknown[] => [c.status, JSON.stringify(c), c.decidedAt ?? c.createdAt];

/** Why `input` cannot be added where `stored` is (same id, or same run and ordinal), or null: the same candidate again. */
export function candidateConflict(stored: PromptCandidate, input: PromptCandidateInputParsed): string | null {
  if (stored.id !== input.id)
    return `ordinal ${input.ordinal} of run '${input.runId}' is candidate '${stored.id}' already: give '${input.id}' the run's next ordinal`;
  const changed = LINEAGE.filter((k) => !same(stored[k], input[k]));
  if (changed.length) {
    return `prompt candidate '${input.id}' differs from the stored one in ${changed.join(', ')}: a candidate's texts and lineage never change (store new texts as a new candidate, with the run's next ordinal)`;
  }
  if (input.status !== 'proposed' && (stored.status !== input.status || stored.reason !== input.reason)) {
    return `prompt candidate '${input.id}' is stored ${says(stored.status, stored.reason)}, added again ${says(input.status, input.reason)}: a candidate is decided once`;
  }
  return null;
}

/** `stored`'s scores with those of `next` filled in where stored has none; a conflict when a set score would change. */
function fillScores(id: string, stored: CandidateScores, next: CandidateScores): CandidateScores {
  const out = { ...stored };
  for (const key of SCORE_KEYS) {
    if (next[key] === null || same(stored[key], next[key])) continue;
    if (stored[key] !== null) {
      throw new ConflictError(
        `prompt candidate '${id}' has its ${key} score ${JSON.stringify(stored[key])} already (asked: ${JSON.stringify(next[key])}): a score once set never changes`,
      );
    }
    (out as Record<string, unknown>)[key] = next[key];
  }
  return out;
}

/** The candidate after `decision`, and whether it changed (null: as stored). Throws ConflictError for a second, other decision. */
export function decideCandidate(stored: PromptCandidate, d: CandidateDecisionParsed, now: number): PromptCandidate | null {
  if (stored.status === 'proposed')
    return { ...stored, status: d.status, reason: d.reason, scores: fillScores(stored.id, stored.scores, d.scores), decidedAt: now };
  if (stored.status !== d.status || stored.reason !== d.reason) {
    throw new ConflictError(
      `prompt candidate '${stored.id}' was decided ${says(stored.status, stored.reason)}; asked ${says(d.status, d.reason)}: a candidate is decided once`,
    );
  }
  const scores = fillScores(stored.id, stored.scores, d.scores);
  return same(scores, stored.scores) ? null : { ...stored, scores };
}

// --- optimizer calls ---------------------------------------------------------------------------------------------
const rowToCall = (r: Row): OptimizerCall => JSON.parse(r.data);

/** Why `input` cannot be stored where `stored` is (same run and seq), or null: the identical call again. */
export function callConflict(stored: OptimizerCall, input: OptimizerCall): string | null {
  const changed = (Object.keys(input) as (keyof OptimizerCall)[]).filter((k) => k !== 'createdAt' && !same(stored[k], input[k]));
  if (!changed.length) return null;
  return `optimizer call ${input.seq} of run '${input.runId}' differs from the stored one in ${changed.join(', ')}: a call is stored once (a new call takes the run's next seq)`;
}

// --- promoted prompts --------------------------------------------------------------------------------------------
const rowToPromotion = (r: Row): PromptPromotion => ({
  agent: r.agent,
  name: r.name,
  text: r.text ?? null,
  candidateId: r.candidate_id ?? null,
  runId: r.run_id ?? null,
  by: r.promoted_by,
  promotedAt: Number(r.promoted_at),
});
const INSERT_PROMOTION_SQL = 'INSERT INTO promoted_prompts (agent, name, text, candidate_id, run_id, promoted_by, promoted_at) VALUES (?, ?, ?, ?, ?, ?, ?)';
const promotionInsert = (p: PromptPromotion): Statement => ({
  sql: INSERT_PROMOTION_SQL,
  params: [p.agent, p.name, p.text, p.candidateId, p.runId, p.by, p.promotedAt],
});

/** What is promoted now, from a history oldest first: the latest entry per key, unless it is a clear. */
function current(history: PromptPromotion[], key: (p: PromptPromotion) => string): PromotedPrompt[] {
  const latest = new Map<string, PromptPromotion>();
  for (const p of history) latest.set(key(p), p);
  return [...latest.values()]
    .filter((p): p is PromotedPrompt => p.text !== null)
    .sort((a, b) => a.agent.localeCompare(b.agent) || a.name.localeCompare(b.name));
}

export class PromptRecords {
  constructor(private readonly db: RecordsBackend) {}

  private async requireRun(runId: string): Promise<void> {
    if (!(await this.db.select('SELECT 1 AS one FROM training_runs WHERE id = ?', [runId])).length) throw new NotFoundError('training run', runId);
  }

  async addCandidate(input: PromptCandidateInput): Promise<PromptCandidate> {
    const c = PromptCandidateInput.parse(input);
    await this.requireRun(c.runId);
    for (const parent of c.parents) {
      const found = await this.getCandidate(parent);
      if (found?.runId !== c.runId) throw new NotFoundError(`parent of '${c.id}': prompt candidate of run '${c.runId}'`, parent);
    }
    const now = Date.now();
    const candidate: PromptCandidate = { ...c, createdAt: now, decidedAt: c.status === 'proposed' ? null : now };
    const blocking = await this.db.insertUnlessExists(
      {
        sql: 'INSERT INTO prompt_candidates (id, run_id, ordinal, status, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        params: [c.id, c.runId, c.ordinal, c.status, JSON.stringify(candidate), now, now],
      },
      { sql: 'SELECT data FROM prompt_candidates WHERE id = ? OR (run_id = ? AND ordinal = ?)', params: [c.id, c.runId, c.ordinal] },
    );
    if (!blocking) return candidate;
    const stored = rowToCandidate(blocking);
    const conflict = candidateConflict(stored, c);
    if (conflict) throw new ConflictError(conflict);
    return stored;
  }

  async decideCandidate(id: string, decision: CandidateDecision): Promise<PromptCandidate> {
    const d = CandidateDecision.parse(decision);
    return this.db.modifyRow({ sql: 'SELECT data FROM prompt_candidates WHERE id = ?', params: [id] }, 'prompt_candidates', (row) => {
      if (!row) throw new NotFoundError('prompt candidate', id);
      const stored = rowToCandidate(row);
      const next = decideCandidate(stored, d, Date.now());
      if (!next) return { result: stored };
      return {
        result: next,
        moved: id,
        write: { sql: 'UPDATE prompt_candidates SET status = ?, data = ?, updated_at = ? WHERE id = ?', params: [...candidateWrite(next), id] },
      };
    });
  }

  async getCandidate(id: string): Promise<PromptCandidate | null> {
    const [row] = await this.db.select('SELECT data FROM prompt_candidates WHERE id = ?', [id]);
    return row ? rowToCandidate(row) : null;
  }

  async listCandidates(runId: string): Promise<PromptCandidate[]> {
    return (await this.db.select('SELECT data FROM prompt_candidates WHERE run_id = ? ORDER BY ordinal', [runId])).map(rowToCandidate);
  }

  async addCall(input: OptimizerCallInput): Promise<OptimizerCall> {
    const c = OptimizerCallInput.parse(input);
    await this.requireRun(c.runId);
    const call: OptimizerCall = { ...c, createdAt: Date.now() };
    const blocking = await this.db.insertUnlessExists(
      {
        sql: 'INSERT INTO optimizer_calls (run_id, seq, data, created_at) VALUES (?, ?, ?, ?)',
        params: [c.runId, c.seq, JSON.stringify(call), call.createdAt],
      },
      { sql: 'SELECT data FROM optimizer_calls WHERE run_id = ? AND seq = ?', params: [c.runId, c.seq] },
    );
    if (!blocking) return call;
    const stored = rowToCall(blocking);
    const conflict = callConflict(stored, call);
    if (conflict) throw new ConflictError(conflict);
    return stored;
  }

  async listCalls(runId: string): Promise<OptimizerCall[]> {
    return (await this.db.select('SELECT data FROM optimizer_calls WHERE run_id = ? ORDER BY seq', [runId])).map(rowToCall);
  }

  /** Checks a promotion of a candidate against the candidate, filling in its run. */
  private async ofCandidate(p: PromotePromptInputParsed): Promise<string | null> {
    if (p.candidateId === null) return p.runId;
    const c = await this.getCandidate(p.candidateId);
    if (!c) throw new NotFoundError('prompt candidate', p.candidateId);
    if (!(p.name in c.prompts)) throw new ConflictError(`prompt candidate '${c.id}' has no prompt '${p.name}' (it has ${Object.keys(c.prompts).join(', ')})`);
    if (c.prompts[p.name] !== p.text)
      throw new ConflictError(`text is not prompt candidate '${c.id}''s text of '${p.name}': promote that text, or a text of your own with candidateId null`);
    if (p.runId !== null && p.runId !== c.runId) throw new ConflictError(`prompt candidate '${c.id}' is of run '${c.runId}', not '${p.runId}'`);
    return c.runId;
  }

  async promote(input: PromotePromptInput): Promise<PromotedPrompt> {
    const p = PromotePromptInput.parse(input);
    const promoted: PromotedPrompt = { ...p, runId: await this.ofCandidate(p), promotedAt: Date.now() };
    await this.db.execute(promotionInsert(promoted));
    return promoted;
  }

  /** The history of every prompt (of `agent`'s stored forms, when given), oldest first. */
  private async history(agent?: string, name?: string): Promise<PromptPromotion[]> {
    const where = name === undefined ? '' : ' WHERE name = ?';
    const rows = await this.db.select(`SELECT * FROM promoted_prompts${where} ORDER BY ${this.db.orderColumn}`, name === undefined ? [] : [name]);
    return rows.map(rowToPromotion).filter((p) => agent === undefined || sameAgent(p.agent, agent));
  }

  async listPromoted(agent?: string): Promise<PromotedPrompt[]> {
    // One agent: its prompts whatever form of its id promoted them; every agent: each stored form on its own.
    return current(await this.history(agent), (p) => (agent === undefined ? JSON.stringify([p.agent, p.name]) : p.name));
  }

  async clear(input: ClearPromotedPromptInput): Promise<boolean> {
    const c = ClearPromotedPromptInput.parse(input);
    const now = current(await this.history(c.agent, c.name), (p) => p.name)[0];
    if (!now) return false;
    await this.db.execute(promotionInsert({ agent: now.agent, name: c.name, text: null, candidateId: null, runId: null, by: c.by, promotedAt: Date.now() }));
    return true;
  }

  async listPromotions(agent: string, name: string): Promise<PromptPromotion[]> {
    return (await this.history(agent, name)).reverse();
  }
}
