/**
 * The adapter: an attempt's spans -> an ordered trajectory of transitions, one per LLM call.
 * It rebuilds the span tree (repairing broken parentage: a parent that never arrived, or a cycle),
 * takes each LLM-call span's prompt/completion token ids and log-probs, names the agent that made
 * the call (its own attribute or the nearest ancestor's), filters agents by a name pattern (selective
 * optimization), and records the rewards and tool outcomes seen after each call, for credit assignment.
 */
import type { Span } from '../../protocol/store.js';
import { isHumanLabel } from '../../protocol/human-label.js';
import { AGL, GENAI } from '../../protocol/spans.js';
import {
  agentNames,
  isFinalRewardSpan,
  isLlmCallSpan,
  isToolSpan,
  numberArrayAttr,
  repairedParents,
  rewardOfSpan,
  sampledGreedily,
} from '../../protocol/span-reading.js';

/** A reward emitted during the trajectory, attached to the LLM call that preceded it. `final`: the
 *  span holds the value the agent function returned (protocol/span-reading.ts). */
export interface RewardSeen {
  value: number;
  name: string | null;
  final: boolean;
  spanId: string;
  time: number;
}
/** A tool execution seen after an LLM call (input to automatic intermediate rewards). */
export interface ToolOutcome {
  toolName: string;
  succeeded: boolean;
  spanId: string;
  time: number;
}

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
  /** Every reward of the attempt in time order; the final one is picked by credit.ts `finalReward`. */
  rewards: RewardSeen[];
  /** LLM calls dropped: no token ids (e.g. an upstream that returned none) or filtered out by agent; with the call's agent name. */
  skipped: { spanId: string; reason: 'no-token-ids' | 'agent-filtered'; agentName: string | null }[];
  /** The attempt's LLM calls (kept or skipped) sampled greedily or nearly (protocol/span-reading.ts sampledGreedily). */
  greedyCalls: number;
}

export interface AdapterOptions {
  /** Keep only calls whose agent name matches (selective optimization). A RegExp or a pattern string. */
  agentMatch?: RegExp | string | null;
  /** A person's label (protocol/human-label.ts) is the final reward where a rollout has one (train.yaml training.useHumanLabels); else it is left out. */
  useHumanLabels?: boolean;
}

function toRegExp(p: RegExp | string): RegExp {
  return typeof p === 'string' ? new RegExp(p) : p;
}

/** Time order, ties broken by the store's per-rollout sequence id (clocks can tie, sequence ids cannot). */
function byTime(a: Span, b: Span): number {
  return a.startTime - b.startTime || a.sequenceId - b.sequenceId;
}

/** Turns the spans of ONE attempt into its trajectory. Spans of other attempts must be filtered out first. */
export function spansToTrajectory(spans: Span[], opts: AdapterOptions = {}): Trajectory {
  const sorted = [...spans].sort(byTime);
  const rolloutId = sorted[0]?.rolloutId ?? '';
  const attemptId = sorted[0]?.attemptId ?? '';
  const agents = agentNames(sorted, repairedParents(sorted));
  const match = opts.agentMatch ? toRegExp(opts.agentMatch) : null;

  const rewards: RewardSeen[] = [];
  const skipped: Trajectory['skipped'] = [];
  // Every LLM call (kept or not) delimits which rewards/tools "follow" it.
  const calls: { span: Span; step: TrajectoryStep | null }[] = [];
  const events: { time: number; seq: number; apply: (owner: TrajectoryStep | null) => void }[] = [];

  let greedyCalls = 0;
  for (const span of sorted) {
    if (isLlmCallSpan(span)) {
      if (sampledGreedily(span)) greedyCalls++;
      const promptIds = numberArrayAttr(span.attributes[AGL.promptTokenIds]);
      const completionIds = numberArrayAttr(span.attributes[AGL.completionTokenIds]);
      const agentName = agents.get(span.spanId) ?? null;
      let step: TrajectoryStep | null = null;
      if (!promptIds || !completionIds || completionIds.length === 0) {
        skipped.push({ spanId: span.spanId, reason: 'no-token-ids', agentName });
      } else if (match && !(agentName !== null && match.test(agentName))) {
        skipped.push({ spanId: span.spanId, reason: 'agent-filtered', agentName });
      } else {
        const lp = numberArrayAttr(span.attributes[AGL.completionLogprobs]);
        step = {
          rolloutId: span.rolloutId,
          attemptId: span.attemptId,
          spanId: span.spanId,
          index: 0,
          agentName,
          promptIds,
          completionIds,
          logprobs: lp && lp.length === completionIds.length ? lp : null,
          rewards: [],
          tools: [],
          startTime: span.startTime,
        };
      }
      calls.push({ span, step });
      continue;
    }
    const human = isHumanLabel(span);
    const reward = human && !opts.useHumanLabels ? null : rewardOfSpan(span);
    if (reward) {
      const r: RewardSeen = { ...reward, final: human || isFinalRewardSpan(span), spanId: span.spanId, time: span.endTime ?? span.startTime };
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
  // The readers' one order (protocol/span-reading.ts rewardsInOrder): time, ties by sequence id.
  const sequenceOf = new Map(sorted.map((s) => [s.spanId, s.sequenceId]));
  rewards.sort((a, b) => a.time - b.time || sequenceOf.get(a.spanId)! - sequenceOf.get(b.spanId)!);

  // Attach each reward / tool outcome to the last LLM call that started before it (the first call if none did).
  // A call of a filtered-out agent still owns what follows it: that reward is not the kept agent's doing.
  for (const ev of events.sort((a, b) => a.time - b.time || a.seq - b.seq)) {
    let owner: { step: TrajectoryStep | null } | undefined;
    for (const c of calls) {
      if (c.span.startTime <= ev.time) owner = c;
      else break;
    }
    ev.apply((owner ?? calls[0])?.step ?? null);
  }
  const steps = calls.map((c) => c.step).filter((s): s is TrajectoryStep => s !== null);
  steps.forEach((s, i) => {
    s.index = i;
  });
  return { rolloutId, attemptId, steps, rewards, skipped, greedyCalls };
}
