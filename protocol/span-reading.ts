/**
 * The one reading of the span conventions (spans.ts) that every consumer shares: the algorithm's adapter
 * and credit, the CodeLens stats, `agl rollouts show`, the runner's terminal print, the trajectory viewer
 * and its panel host. What kind a span is, the reward it carries, an attempt's final reward, the parent
 * of each span after repair, and the (sub-)agent each span belongs to. Pure, no I/O.
 *
 * The rules, where readers once disagreed:
 *  - a reward span is a span named `agentlightning.reward` (SPAN.reward: what the SDK, the Python helper
 *    and agent-lightning v0 write, and what readers can query by name) whose value is a finite number in
 *    `agl.reward.value`, or else in agent-lightning v0's `agentlightning.reward.0.value`;
 *  - the final reward is the reward span marked `agl.reward.final` (the value the agent function returned),
 *    else the last reward in time order (end time, ties by the store's sequence id); none: no final reward;
 *  - a span whose parent never arrived, or that sits in a parent cycle, hangs under the attempt's root
 *    (the runner's `agentlightning.rollout` span) or, without one, is a root itself;
 *  - a span's agent is its own `agl.agent.name` / `gen_ai.agent.name`, else its nearest ancestor's;
 *  - an LLM call was sampled greedily when its request (gen_ai.request.*, as the gateway recorded it) had a temperature
 *    of at most NEAR_GREEDY_TEMPERATURE or top-k 1: the samples of a task are then one answer (sampledGreedily);
 *  - an attempt's LLM calls are numbered 1, 2, ... in the order they started (ties by sequence id), whatever
 *    role made them or whether they were trained: "call #3" is the same call in every view (llmCallNumbers);
 *  - a rollout's feedback (what a prompt optimization reflects on) is, for an attempt that failed (its root span ended
 *    in error), the last error recorded: an exception span's type and message, or a span's error status message;
 *    otherwise the final reward's `agl.reward.feedback`, else the latest feedback of another reward, else the last
 *    error recorded (rolloutFeedback); its score is its final reward when it succeeded, else 0 (rolloutScore);
 *  - the prompts an attempt read are its `agentlightning.prompt` spans, one reading per prompt name and text (name,
 *    version, sha) in the order first read (promptVersions);
 *  - an episode's answer is what the agent gave as its result, never an LLM reply (episodeAnswer): what the agent
 *    function returned when not a number (`agl.rollout.result` on the root span), else the last object it emitted
 *    with `agl.object.kind` `final` or `<name>.final`, else the last object the agent function itself emitted (not
 *    inside a sub-agent's operation, not an expected output); else it recorded none. The output it was scored
 *    against is the last object emitted with kind `expected` or `<name>.expected` (expectedOutput).
 */
import { isHumanLabel } from './human-label.js';
import { PROMPT_SOURCES, type PromptSource } from './prompt-template.js';
import { AGL, AGL_V0_REWARD_PREFIX, GENAI, SPAN } from './spans.js';
import type { AttributeValue, RolloutStatus, Span } from './store.js';

type SpanLike = Pick<Span, 'name' | 'attributes'>;

export type SpanKindName = 'agent' | 'llm' | 'tool' | 'reward' | 'object' | 'message' | 'exception' | 'prompt' | 'judge' | 'operation';

/** Deepest ancestor chain followed (a guard: repaired parents have no cycles). */
const MAX_TREE_DEPTH = 1000;

export function isLlmCallSpan(span: SpanLike): boolean {
  if (span.name === SPAN.llmCall) return true;
  const op = span.attributes[GENAI.operationName];
  return op === 'chat' || op === 'text_completion';
}

export function isToolSpan(span: SpanLike): boolean {
  return span.name === SPAN.tool || span.attributes[GENAI.operationName] === 'execute_tool';
}

export function isRewardSpan(span: SpanLike): boolean {
  return span.name === SPAN.reward && !isLlmCallSpan(span);
}

export function spanKind(span: SpanLike): SpanKindName {
  if (isLlmCallSpan(span)) return 'llm';
  if (isRewardSpan(span)) return 'reward';
  if (isToolSpan(span)) return 'tool';
  if (span.name === SPAN.object) return 'object';
  if (span.name === SPAN.message) return 'message';
  if (span.name === SPAN.exception) return 'exception';
  if (span.name === SPAN.prompt) return 'prompt';
  if (span.name === SPAN.judge) return 'judge';
  if (span.name === SPAN.agentRun) return 'agent';
  return 'operation';
}

const finite = (v: AttributeValue | undefined): v is number => typeof v === 'number' && Number.isFinite(v);

/** The reward a reward span carries (ours, else agent-lightning v0's shape), or null for any other span. */
export function rewardOfSpan(span: SpanLike): { value: number; name: string | null } | null {
  if (!isRewardSpan(span)) return null;
  const a = span.attributes;
  const [value, name] = finite(a[AGL.rewardValue])
    ? [a[AGL.rewardValue], a[AGL.rewardName]]
    : [a[`${AGL_V0_REWARD_PREFIX}.0.value`], a[`${AGL_V0_REWARD_PREFIX}.0.name`]];
  return finite(value) ? { value, name: typeof name === 'string' ? name : null } : null;
}

/** A sampling temperature at or below this makes a small model's samples of one prompt (nearly) the same answer. */
export const NEAR_GREEDY_TEMPERATURE = 0.1;

/** Whether an LLM call span's request sampled greedily or nearly (temperature <= NEAR_GREEDY_TEMPERATURE, or top-k 1). */
export function sampledGreedily(span: SpanLike): boolean {
  const t = span.attributes[GENAI.requestTemperature];
  const k = span.attributes[GENAI.requestTopK];
  return (finite(t) && t <= NEAR_GREEDY_TEMPERATURE) || k === 1;
}

/** Whether a reward span holds the value the agent function returned (the runner marks it). */
export function isFinalRewardSpan(span: SpanLike): boolean {
  return span.attributes[AGL.rewardFinal] === true;
}

/** A reward as the readers order it: `time` is the span's end (its start while open). */
export interface RewardReading {
  value: number;
  name: string | null;
  final: boolean;
  spanId: string;
  time: number;
  sequenceId: number;
}

/** Every reward of the spans, in time order (ties by sequence id); a person's label is none (protocol/human-label.ts). */
export function rewardsInOrder(spans: Span[]): RewardReading[] {
  const out: RewardReading[] = [];
  for (const span of spans) {
    const r = isHumanLabel(span) ? null : rewardOfSpan(span);
    if (r) out.push({ ...r, final: isFinalRewardSpan(span), spanId: span.spanId, time: span.endTime ?? span.startTime, sequenceId: span.sequenceId });
  }
  return out.sort((a, b) => a.time - b.time || a.sequenceId - b.sequenceId);
}

/** The final one of rewards in time order: the last marked final, else the last; null when there are none. */
export function pickFinalReward<R extends { final: boolean }>(rewards: readonly R[]): R | null {
  for (let i = rewards.length - 1; i >= 0; i--) if (rewards[i].final) return rewards[i];
  return rewards.at(-1) ?? null;
}

/** A reward as the final-reward rule ranks them: a final-marked one beats any other, then the later in time. */
export interface RankedReward {
  value: number;
  final: boolean;
  time: number;
}
/**
 * pickFinalReward's rule kept incrementally (the stores' rollouts-list summary, as spans arrive): whether
 * `candidate` (written later, so it wins ties) replaces `current` as the final reward.
 */
export function replacesReward(candidate: RankedReward, current: RankedReward | null): boolean {
  if (current === null) return true;
  if (candidate.final !== current.final) return candidate.final;
  return candidate.time >= current.time;
}

/** An attempt's final reward (give the spans of one attempt), or null when it emitted none. */
export function finalReward(spans: Span[]): number | null {
  return pickFinalReward(rewardsInOrder(spans))?.value ?? null;
}

/** The text a span says went wrong: an exception span's `type: message`, else its error status message; null for none. */
function errorText(span: Span): string | null {
  const type = span.attributes[AGL.exceptionType];
  const message = span.attributes[AGL.exceptionMessage];
  if (span.name === SPAN.exception && typeof message === 'string' && message !== '') return typeof type === 'string' && type ? `${type}: ${message}` : message;
  return span.status.code === 'error' && span.status.message ? span.status.message : null;
}

/**
 * What the rollout's grader or failure said, in words (give the spans of one attempt). An attempt that failed (its
 * root span ended in error: the agent threw, or the runner recorded its timeout or crash) says its error: the last
 * error the spans recorded. Otherwise the final reward's feedback, else the feedback of the latest reward that has
 * one, else the last error recorded; null when none says anything (a caller may then give the attempt's error).
 */
export function rolloutFeedback(spans: Span[]): string | null {
  const bySpan = new Map(spans.map((s) => [s.spanId, s]));
  const feedbackOf = (spanId: string): string | null => {
    const f = bySpan.get(spanId)?.attributes[AGL.rewardFeedback];
    return typeof f === 'string' && f.trim() !== '' ? f : null;
  };
  const lastOf = (texts: (string | null)[]): string | null => texts.filter((t) => t !== null).at(-1) ?? null;
  const lastError = () =>
    lastOf([...spans].sort((a, b) => (a.endTime ?? a.startTime) - (b.endTime ?? b.startTime) || a.sequenceId - b.sequenceId).map(errorText));
  if (rootSpan(spans)?.status.code === 'error') return lastError();
  const rewards = rewardsInOrder(spans);
  const final = pickFinalReward(rewards);
  return (final ? feedbackOf(final.spanId) : null) ?? lastOf(rewards.map((r) => feedbackOf(r.spanId))) ?? lastError();
}

/**
 * A rollout's score where a prompt optimization reads one: its final reward when it succeeded (0 when it emitted
 * none); 0 when it failed, timed out or was cancelled, whatever it emitted before (never left out of an average).
 */
export function rolloutScore(status: RolloutStatus, finalReward: number | null): number {
  return status === 'succeeded' ? (finalReward ?? 0) : 0;
}

// ---- the prompts an attempt read ------------------------------------------------------------------------

/** One text of a prompt an attempt read (`llm.prompt`), as its prompt spans recorded it (spans.ts AGL.prompt*). */
export interface PromptReading {
  name: string;
  source: PromptSource;
  /** The candidate id, the promoted candidate's id (or `promoted`), or `seed`. */
  version: string;
  /** The first 12 hex digits of the sha256 of the text, before its vars were filled in. */
  sha: string;
  /** The text, unfilled; null when the span did not record it. */
  template: string | null;
  /** The seed's file (absolute, on the runner's machine), when the seed is a file. */
  file: string | null;
  /** How many times the attempt read this text, and the span of the first read. */
  reads: number;
  spanId: string;
}

const PROMPT_SOURCE_SET: ReadonlySet<string> = new Set(PROMPT_SOURCES);

/**
 * The prompt versions an attempt used (give the spans of one attempt): one reading per prompt name and text (name,
 * version, sha), in the order they were first read (start time, ties by sequence id). Spans missing the name, the
 * version or a known source are not readings.
 */
export function promptVersions(spans: Span[]): PromptReading[] {
  const out = new Map<string, PromptReading>();
  const text = (v: AttributeValue | undefined): string | null => (typeof v === 'string' && v !== '' ? v : null);
  for (const s of spans.filter((x) => x.name === SPAN.prompt).sort(byStart)) {
    const a = s.attributes;
    const [name, version, source, sha] = [text(a[AGL.promptName]), text(a[AGL.promptVersion]), text(a[AGL.promptSource]), text(a[AGL.promptSha]) ?? ''];
    if (name === null || version === null || source === null || !PROMPT_SOURCE_SET.has(source)) continue;
    const key = JSON.stringify([name, version, sha]);
    const seen = out.get(key);
    if (seen) seen.reads++;
    else {
      const template = typeof a[AGL.promptTemplate] === 'string' ? (a[AGL.promptTemplate] as string) : null;
      out.set(key, { name, source: source as PromptSource, version, sha, template, file: text(a[AGL.promptFile]), reads: 1, spanId: s.spanId });
    }
  }
  return [...out.values()];
}

/** Token ids / log-probs are stored as a JSON array attribute, or a JSON string of one. */
export function numberArrayAttr(value: AttributeValue | undefined): number[] | null {
  let v: unknown = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) return null;
  return v as number[];
}

/** The agent name a span carries itself (ours, else the GenAI attribute), or null. */
export function ownAgentName(span: SpanLike): string | null {
  for (const key of [AGL.agentName, GENAI.agentName]) {
    const v = span.attributes[key];
    if (typeof v === 'string' && v.length > 0) return v;
  }
  return null;
}

/**
 * Parent of each span after repair: a missing parent (span lost or never sent), a span naming itself, or
 * a cycle makes the span a child of the attempt's root (the runner's agentRun span when present), else
 * a root itself. Give the spans of one attempt.
 */
export function repairedParents(spans: Span[]): Map<string, string | null> {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const root = spans.find((s) => s.name === SPAN.agentRun && (s.parentSpanId === null || !byId.has(s.parentSpanId)));
  const fallback = (s: Span): string | null => (root && root.spanId !== s.spanId ? root.spanId : null);
  const parent = new Map<string, string | null>();
  for (const s of spans) {
    let p = s.parentSpanId;
    if (p !== null && !byId.has(p)) p = fallback(s);
    if (p === s.spanId) p = null;
    parent.set(s.spanId, p);
  }
  // Break cycles: walk up from each span; a revisit means a loop, cut it at the span we started from.
  for (const s of spans) {
    const seen = new Set<string>([s.spanId]);
    let cur = parent.get(s.spanId) ?? null;
    let depth = 0;
    while (cur !== null && depth++ < MAX_TREE_DEPTH) {
      if (seen.has(cur)) {
        parent.set(s.spanId, fallback(s));
        break;
      }
      seen.add(cur);
      cur = parent.get(cur) ?? null;
    }
  }
  return parent;
}

/** The (sub-)agent of each span that has one: its own name, else its nearest ancestor's (repaired parents). */
export function agentNames(spans: Span[], parents: Map<string, string | null> = repairedParents(spans)): Map<string, string> {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const out = new Map<string, string>();
  for (const span of spans) {
    let cur: Span | undefined = span;
    for (let depth = 0; cur && depth < MAX_TREE_DEPTH; depth++) {
      const name = ownAgentName(cur);
      if (name) {
        out.set(span.spanId, name);
        break;
      }
      const p: string | null = parents.get(cur.spanId) ?? null;
      cur = p === null ? undefined : byId.get(p);
    }
  }
  return out;
}

// ---- the numbering of LLM calls ---------------------------------------------------------------------------

/** Start order, ties by the store's sequence id (clocks can tie, sequence ids cannot). */
function byStart(a: Span, b: Span): number {
  return a.startTime - b.startTime || a.sequenceId - b.sequenceId;
}

/**
 * Each LLM call's number in its attempt (give the spans of one attempt): 1, 2, ... in the order the calls started,
 * counting every call whatever its role and whether it was trained. Every view says "call #n" from this.
 */
export function llmCallNumbers(spans: Span[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of spans.filter(isLlmCallSpan).sort(byStart)) out.set(s.spanId, out.size + 1);
  return out;
}

// ---- the episode's answer -----------------------------------------------------------------------------------

/** An episode's answer (episodeAnswer) or the output it was scored against (expectedOutput). */
export interface EpisodeAnswer {
  /** `returned`: the agent function's return value; `emitted`: an object it emitted; `none`: it recorded no answer. */
  source: 'returned' | 'emitted' | 'none';
  /** The value (parsed JSON; a string that is not JSON stays a string); null for none. */
  value: unknown;
  /** The value as canonical JSON (object keys sorted): two answers are the same when their keys are. '' for none. */
  key: string;
  /** The emitted object's `agl.object.kind`. */
  kind: string | null;
  /** The span it was read from. */
  spanId: string | null;
}

const NO_ANSWER: EpisodeAnswer = { source: 'none', value: null, key: '', kind: null, spanId: null };

function parseJsonText(v: AttributeValue | undefined): unknown {
  if (typeof v !== 'string') return v ?? null;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

/** JSON with every object's keys sorted, so equal values give equal text. */
export function canonicalJson(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sort(value)) ?? 'null';
}

const kindOf = (span: SpanLike): string | null => {
  const k = span.attributes[AGL.objectKind];
  return typeof k === 'string' && k.length > 0 ? k : null;
};
const isKind = (kind: string | null, what: 'final' | 'expected'): boolean => kind === what || (kind?.endsWith(`.${what}`) ?? false);

/** Emitted objects in the order they were written (end time, ties by sequence id). */
function objectsInOrder(spans: Span[]): Span[] {
  return spans.filter((s) => spanKind(s) === 'object').sort((a, b) => (a.endTime ?? a.startTime) - (b.endTime ?? b.startTime) || a.sequenceId - b.sequenceId);
}

function fromObject(span: Span | undefined): EpisodeAnswer {
  if (!span) return NO_ANSWER;
  const value = parseJsonText(span.attributes[AGL.objectJson]);
  return { source: 'emitted', value, key: canonicalJson(value), kind: kindOf(span), spanId: span.spanId };
}

/** The attempt's root span: the runner's `agentlightning.rollout` span. */
function rootSpan(spans: Span[]): Span | undefined {
  return spans.find((s) => s.name === SPAN.agentRun);
}

/**
 * The episode's answer (give the spans of one attempt), by the rule in this file's header: the returned value, else
 * the last object emitted as `final` / `<name>.final`, else the last object the agent function itself emitted;
 * `source: 'none'` when it recorded none (it returned only a reward and emitted nothing): never an LLM reply.
 */
export function episodeAnswer(spans: Span[]): EpisodeAnswer {
  const root = rootSpan(spans);
  const returned = root?.attributes[AGL.rolloutResult];
  if (returned !== undefined && returned !== null) {
    const value = parseJsonText(returned);
    return { source: 'returned', value, key: canonicalJson(value), kind: null, spanId: root!.spanId };
  }
  const objects = objectsInOrder(spans);
  const final = objects.filter((s) => isKind(kindOf(s), 'final')).at(-1);
  if (final) return fromObject(final);
  const names = agentNames(spans);
  const rootName = root ? (names.get(root.spanId) ?? null) : null;
  return fromObject(objects.filter((s) => !isKind(kindOf(s), 'expected') && (names.get(s.spanId) ?? null) === rootName).at(-1));
}

/** The output the agent scored the episode against, when it emitted one (`expected` / `<name>.expected`), else null. */
export function expectedOutput(spans: Span[]): EpisodeAnswer | null {
  const span = objectsInOrder(spans)
    .filter((s) => isKind(kindOf(s), 'expected'))
    .at(-1);
  return span ? fromObject(span) : null;
}

/** Keys of a task input that hold its expected output (shown beside the samples, apart from the question). */
export const EXPECTED_TASK_KEYS = /^(answer|expected(_answer|_output)?|gold|ground_truth|target|label|solution|reference)$/i;

/** The task's fields that hold its expected output, in the task's order. */
export function expectedTaskFields(input: unknown): { key: string; value: unknown }[] {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return [];
  return Object.entries(input)
    .filter(([k]) => EXPECTED_TASK_KEYS.test(k))
    .map(([key, value]) => ({ key, value }));
}
