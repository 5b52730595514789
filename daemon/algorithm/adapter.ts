/**
 * The adapter: an attempt's spans -> an ordered trajectory of transitions, one per LLM call.
 * It rebuilds the span tree (repairing broken parentage: a parent that never arrived, or a cycle),
 * takes each LLM-call span's prompt/completion token ids and log-probs, names the agent that made
 * the call (its own attribute or the nearest ancestor's), filters agents by a name pattern (selective
 * optimization), and records the rewards and tool outcomes seen after each call, for credit assignment.
 */
import type { Span, AttributeValue } from '../../protocol/store.js';
import { AGL, AGL_V0_REWARD_PREFIX, GENAI, SPAN } from '../../protocol/spans.js';

/** A reward emitted during the trajectory, attached to the LLM call that preceded it. */
export interface RewardSeen { value: number; name: string | null; spanId: string; time: number }
/** A tool execution seen after an LLM call (input to automatic intermediate rewards). */
export interface ToolOutcome { toolName: string; succeeded: boolean; spanId: string; time: number }

/** One LLM call as the algorithm trains on it. */
export interface TrajectoryStep {
  rolloutId: string;
  attemptId: string;
  spanId: string;
  /** 0-based position among the kept calls of the trajectory. */
  index: number;
  agentName: string | null;
  promptIds: number[];
  completionIds: number[];
  /** Log-probs of the completion under the policy that sampled it (null when the producer had none). */
  logprobs: number[] | null;
  /** Rewards emitted after this call and before the next LLM call of the attempt (any agent). */
  rewards: RewardSeen[];
  tools: ToolOutcome[];
  startTime: number;
}

export interface Trajectory {
  rolloutId: string;
  attemptId: string;
  steps: TrajectoryStep[];
  /** Every reward of the attempt in order; the last one is the episode's final reward. */
  rewards: RewardSeen[];
  /** LLM calls dropped: no token ids (e.g. an upstream that returned none) or filtered out by agent. */
  skipped: { spanId: string; reason: 'no-token-ids' | 'agent-filtered' }[];
}

export interface AdapterOptions {
  /** Keep only calls whose agent name matches (selective optimization). A RegExp or a pattern string. */
  agentMatch?: RegExp | string | null;
}

const MAX_TREE_DEPTH = 1000;

export function isLlmCallSpan(span: Span): boolean {
  if (span.name === SPAN.llmCall) return true;
  const op = span.attributes[GENAI.operationName];
  return op === 'chat' || op === 'text_completion';
}

export function isToolSpan(span: Span): boolean {
  return span.name === SPAN.tool || span.attributes[GENAI.operationName] === 'execute_tool';
}

/** Reward spans in our shape (agl.reward.value) or agent-lightning v0's (agentlightning.reward.0.value). */
export function rewardOfSpan(span: Span): { value: number; name: string | null } | null {
  const own = span.attributes[AGL.rewardValue];
  if (typeof own === 'number' && Number.isFinite(own)) {
    const name = span.attributes[AGL.rewardName];
    return { value: own, name: typeof name === 'string' ? name : null };
  }
  const v0 = span.attributes[`${AGL_V0_REWARD_PREFIX}.0.value`];
  if (typeof v0 === 'number' && Number.isFinite(v0)) {
    const name = span.attributes[`${AGL_V0_REWARD_PREFIX}.0.name`];
    return { value: v0, name: typeof name === 'string' ? name : null };
  }
  return null;
}

/** Token ids / log-probs are stored as a JSON array attribute, or a JSON string of one. */
export function numberArrayAttr(value: AttributeValue | undefined): number[] | null {
  let v: unknown = value;
  if (typeof v === 'string') {
    try { v = JSON.parse(v); } catch { return null; }
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) return null;
  return v as number[];
}

function agentNameAttr(span: Span): string | null {
  const a = span.attributes[AGL.agentName] ?? span.attributes[GENAI.agentName];
  return typeof a === 'string' && a.length > 0 ? a : null;
}

function toRegExp(p: RegExp | string): RegExp {
  return typeof p === 'string' ? new RegExp(p) : p;
}

/** Time order, ties broken by the store's per-rollout sequence id (clocks can tie, sequence ids cannot). */
function byTime(a: Span, b: Span): number {
  return a.startTime - b.startTime || a.sequenceId - b.sequenceId;
}

/**
 * Parent of each span after repair: a missing parent (span lost or never sent) or a cycle makes the
 * span a child of the attempt's root (the runner's agentRun span when present), else a root itself.
 */
export function repairedParents(spans: Span[]): Map<string, string | null> {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const root = spans.find((s) => s.name === SPAN.agentRun && (s.parentSpanId === null || !byId.has(s.parentSpanId)));
  const parent = new Map<string, string | null>();
  for (const s of spans) {
    let p = s.parentSpanId;
    if (p !== null && !byId.has(p)) p = root && root.spanId !== s.spanId ? root.spanId : null;
    if (p === s.spanId) p = null;
    parent.set(s.spanId, p);
  }
  // Break cycles: walk up from each span; a revisit means a loop, cut it at the span we started from.
  for (const s of spans) {
    const seen = new Set<string>([s.spanId]);
    let cur = parent.get(s.spanId) ?? null;
    let depth = 0;
    while (cur !== null && depth++ < MAX_TREE_DEPTH) {
      if (seen.has(cur)) { parent.set(s.spanId, root && root.spanId !== s.spanId ? root.spanId : null); break; }
      seen.add(cur);
      cur = parent.get(cur) ?? null;
    }
  }
  return parent;
}

/** Agent name of a call: its own attribute, else the nearest ancestor's (attribute, or an operation span's name). */
function resolveAgentName(span: Span, byId: Map<string, Span>, parent: Map<string, string | null>): string | null {
  const own = agentNameAttr(span);
  if (own) return own;
  let cur = parent.get(span.spanId) ?? null;
  for (let depth = 0; cur !== null && depth < MAX_TREE_DEPTH; depth++) {
    const s = byId.get(cur);
    if (!s) break;
    const a = agentNameAttr(s);
    if (a) return a;
    cur = parent.get(cur) ?? null;
  }
  return null;
}

/** Turns the spans of ONE attempt into its trajectory. Spans of other attempts must be filtered out first. */
export function spansToTrajectory(spans: Span[], opts: AdapterOptions = {}): Trajectory {
  const sorted = [...spans].sort(byTime);
  const rolloutId = sorted[0]?.rolloutId ?? '';
  const attemptId = sorted[0]?.attemptId ?? '';
  const byId = new Map(sorted.map((s) => [s.spanId, s]));
  const parent = repairedParents(sorted);
  const match = opts.agentMatch ? toRegExp(opts.agentMatch) : null;

  const rewards: RewardSeen[] = [];
  const skipped: Trajectory['skipped'] = [];
  // Every LLM call (kept or not) delimits which rewards/tools "follow" it.
  const calls: { span: Span; step: TrajectoryStep | null }[] = [];
  const events: { time: number; seq: number; apply: (owner: TrajectoryStep | null) => void }[] = [];

  for (const span of sorted) {
    if (isLlmCallSpan(span)) {
      const promptIds = numberArrayAttr(span.attributes[AGL.promptTokenIds]);
      const completionIds = numberArrayAttr(span.attributes[AGL.completionTokenIds]);
      const agentName = resolveAgentName(span, byId, parent);
      let step: TrajectoryStep | null = null;
      if (!promptIds || !completionIds || completionIds.length === 0) {
        skipped.push({ spanId: span.spanId, reason: 'no-token-ids' });
      } else if (match && !(agentName !== null && match.test(agentName))) {
        skipped.push({ spanId: span.spanId, reason: 'agent-filtered' });
      } else {
        const lp = numberArrayAttr(span.attributes[AGL.completionLogprobs]);
        step = {
          rolloutId: span.rolloutId, attemptId: span.attemptId, spanId: span.spanId, index: 0, agentName,
          promptIds, completionIds, logprobs: lp && lp.length === completionIds.length ? lp : null,
          rewards: [], tools: [], startTime: span.startTime,
        };
      }
      calls.push({ span, step });
      continue;
    }
    const reward = rewardOfSpan(span);
    if (reward) {
      const r: RewardSeen = { ...reward, spanId: span.spanId, time: span.endTime ?? span.startTime };
      rewards.push(r);
      events.push({ time: r.time, seq: span.sequenceId, apply: (owner) => owner?.rewards.push(r) });
    } else if (isToolSpan(span)) {
      const explicit = span.attributes[AGL.toolSucceeded];
      const succeeded = typeof explicit === 'boolean' ? explicit : span.status.code !== 'error';
      const name = span.attributes[GENAI.toolName];
      const t: ToolOutcome = { toolName: typeof name === 'string' ? name : span.name, succeeded, spanId: span.spanId, time: span.endTime ?? span.startTime };
      events.push({ time: t.time, seq: span.sequenceId, apply: (owner) => owner?.tools.push(t) });
    }
  }
  rewards.sort((a, b) => a.time - b.time);

  // Attach each reward / tool outcome to the last LLM call that started before it (the first call if none did).
  // A call of a filtered-out agent still owns what follows it: that reward is not the kept agent's doing.
  for (const ev of events.sort((a, b) => a.time - b.time || a.seq - b.seq)) {
    let owner: { step: TrajectoryStep | null } | undefined;
    for (const c of calls) { if (c.span.startTime <= ev.time) owner = c; else break; }
    ev.apply((owner ?? calls[0])?.step ?? null);
  }
  const steps = calls.map((c) => c.step).filter((s): s is TrajectoryStep => s !== null);
  steps.forEach((s, i) => { s.index = i; });
  return { rolloutId, attemptId, steps, rewards, skipped };
}

/** Splits a rollout's spans by attempt and adapts one attempt (the given one, else the latest seen). */
export function spansOfAttempt(spans: Span[], attemptId?: string): Span[] {
  if (attemptId) return spans.filter((s) => s.attemptId === attemptId);
  const last = spans.reduce<Span | null>((a, s) => (a === null || s.sequenceId > a.sequenceId ? s : a), null);
  return last ? spans.filter((s) => s.attemptId === last.attemptId) : [];
}
