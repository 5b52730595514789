/**
 * Whether a training run can learn, read from the metrics the trainer writes (metrics.ts), in one place for
 * everything that says so: `agl train` (daemon/algorithm/trainer.ts logs it after the first steps), the editor's
 * training progress notification (extension/train-command.ts) and the dashboard's notes on steps
 * (webview/dashboard/). Pure: no DOM, no node.
 *
 * GRPO learns from differences between the rollouts of one task (a group): when every rollout of a group scores the
 * same, every advantage in it is 0. A run whose first steps have only such groups, or whose every rollout fails, does
 * not move the policy at all, however long it runs: say so early, with the likely cause and what to do next.
 */
import { METRICS, parsePolicyMetric, policyMetric } from './metrics.js';

/** Training steps looked at before a run is said not to learn. */
export const LEARNING_CHECK_STEPS = 3;
/** A step where more than this share of groups had zero variance gets a note on the dashboard. */
export const MOST_GROUPS = 0.5;

/** A metric point as the store keeps it (only what is read here). */
export interface PointLike {
  step: number;
  name: string;
  value: number;
}

/** What one training step measured, as far as its metrics say. */
export interface StepFacts {
  step: number;
  rewardMean: number | null;
  /** Share of the step's groups whose rollouts all scored the same. */
  zeroStd: number | null;
  failed: number | null;
  transitions: number | null;
  /** Tokens the update trained on (null in runs recorded before the metric existed). */
  trainedTokens: number | null;
  loss: number | null;
  gradNorm: number | null;
  /** Per policy (one policy per role): its updates so far and the calls it trained on this step. */
  policies: Map<string, { updates: number | null; transitions: number | null }>;
}

/** The facts of every training step (a step with a training reward), in step order. */
export function stepFacts(points: Iterable<PointLike>): StepFacts[] {
  const steps = new Map<number, StepFacts>();
  const at = (step: number): StepFacts => {
    let f = steps.get(step);
    if (!f) {
      f = { step, rewardMean: null, zeroStd: null, failed: null, transitions: null, trainedTokens: null, loss: null, gradNorm: null, policies: new Map() };
      steps.set(step, f);
    }
    return f;
  };
  for (const p of points) {
    switch (p.name) {
      case METRICS.rewardMean:
        at(p.step).rewardMean = p.value;
        break;
      case METRICS.fracRewardZeroStd:
        at(p.step).zeroStd = p.value;
        break;
      case METRICS.rolloutFailed:
        at(p.step).failed = p.value;
        break;
      case METRICS.rolloutTransitions:
        at(p.step).transitions = p.value;
        break;
      case METRICS.trainedTokens:
        at(p.step).trainedTokens = p.value;
        break;
      case METRICS.loss:
        at(p.step).loss = p.value;
        break;
      case METRICS.gradNorm:
        at(p.step).gradNorm = p.value;
        break;
      default: {
        const pm = parsePolicyMetric(p.name);
        if (!pm || (pm.metric !== 'updates' && pm.metric !== 'transitions')) break;
        const f = at(p.step);
        const own = f.policies.get(pm.policy) ?? { updates: null, transitions: null };
        own[pm.metric] = p.value;
        f.policies.set(pm.policy, own);
      }
    }
  }
  return [...steps.values()].filter((f) => f.rewardMean !== null).sort((a, b) => a.step - b.step);
}

/** Did the step's update change any weights? (Runs recorded before grpo/trained_tokens: no loss and no gradient.) */
export function stepUpdated(f: StepFacts): boolean {
  if (f.trainedTokens !== null) return f.trainedTokens > 0;
  return !(f.loss === 0 && f.gradNorm === 0);
}

const allZeroVariance = (f: StepFacts) => f.zeroStd !== null && f.zeroStd >= 1 - 1e-9;
/** Every rollout of the step failed: some failed and none left a call to train on. */
const allFailed = (f: StepFacts) => (f.failed ?? 0) > 0 && f.transitions === 0;

export interface LearningDiagnosis {
  kind: 'zero-variance' | 'all-failed';
  /** The first steps looked at (all of them showed it). */
  steps: number;
  /** What happened, in one sentence. */
  message: string;
  /** The likely cause. */
  cause: string;
  /** What to do next, most likely first. */
  advice: string[];
}

/** The advice for a run whose groups have no reward spread, by what the rollouts scored. */
function zeroVarianceAdvice(rewards: number[]): { cause: string; advice: string[] } {
  const partial = 'give the reward partial credit (e.g. 0.5 for a well-formed answer, 1 for the right one), so that the rollouts of a task differ';
  if (rewards.every((r) => r === 0))
    return {
      cause: 'every rollout scored 0: the model never solves a task, so there is nothing for GRPO to prefer',
      advice: [
        'warm the model up first with supervised fine-tuning on worked examples (agl sft --data demos.jsonl --out <dir>), then train from it (--model <dir>)',
        'start from a stronger model (--model <a Hugging Face model folder>)',
        partial,
      ],
    };
  if (rewards.every((r) => r === 1))
    return {
      cause: 'every rollout scored 1: the tasks are too easy for this model, there is nothing left to learn',
      advice: ['train on harder tasks (or hold out the ones it already solves)', partial],
    };
  return {
    cause: 'the rollouts of each task all scored the same (a pass/fail reward and a model that answers a task the same way every time)',
    advice: [partial, 'sample more varied rollouts: a higher model.temperature or a larger training.groupSize'],
  };
}

/**
 * Why the run cannot learn, once its first LEARNING_CHECK_STEPS training steps are in: every group of each of them
 * had zero variance, or every rollout of each of them failed. Null while fewer steps are in, or when any of them
 * could teach the policy something.
 */
export function diagnoseLearning(points: Iterable<PointLike>, checkSteps = LEARNING_CHECK_STEPS): LearningDiagnosis | null {
  const first = stepFacts(points).slice(0, checkSteps);
  if (first.length < checkSteps) return null;
  const n = first.length;
  if (first.every(allFailed))
    return {
      kind: 'all-failed',
      steps: n,
      message: `Training cannot learn: every rollout of the first ${n} steps failed, so there is nothing to train on.`,
      cause: 'the agent fails on every task (an exception, a timeout, or a model it cannot reach)',
      advice: [
        "open a failed rollout in the trajectory viewer to see the agent's error",
        "run one task by itself: agl rollout <agent> --task '<one task as JSON>'",
        'fix the agent, then continue from the last checkpoint with agl train --resume <run id>',
      ],
    };
  if (first.every(allZeroVariance)) {
    const { cause, advice } = zeroVarianceAdvice(first.map((f) => f.rewardMean!));
    return {
      kind: 'zero-variance',
      steps: n,
      message: `Training cannot learn: in the first ${n} steps every GRPO group had zero variance (all rollouts of a task scored the same), so every advantage is 0 and the policy does not change.`,
      cause,
      advice,
    };
  }
  return null;
}

/** The diagnosis as lines for a terminal or a log: what, why, what to do. */
export function describeDiagnosis(d: LearningDiagnosis): string[] {
  return [d.message, `Likely cause: ${d.cause}.`, 'What to try:', ...d.advice.map((a) => `  - ${a}`)];
}

/** A note on one step of a run, for the dashboard. */
export interface StepNote {
  step: number;
  kind: 'no-update' | 'zero-variance' | 'policy-no-update';
  /** The policy a `policy-no-update` note is about. */
  policy?: string;
  text: string;
}

/** What to try when steps teach nothing, in one line (the dashboard's notes end with it). */
export const WHAT_TO_TRY =
  'What to try: a reward with partial credit, more varied samples (a higher temperature or a larger group size), or, when every rollout scores 0, a warm-up with agl sft or a stronger model.';

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** Why a step did not update the policy, as far as its metrics tell. */
function stepNoUpdateWhy(f: StepFacts): string {
  if (allFailed(f)) return `every rollout failed (${f.failed})`;
  if (allZeroVariance(f)) return 'every group had zero variance (all rollouts of each task scored the same), so every advantage was 0';
  return f.transitions === 0 ? 'no LLM call of a trained role to train on' : 'no call had a nonzero advantage';
}

/** Why a role policy did not update in a step (its updates count did not move), or null when it did or nothing says. */
function policyNoUpdateWhy(own: { updates: number | null; transitions: number | null }, before: number | null): string | null {
  if (own.updates === null || before === null || own.updates > before) return null;
  return own.transitions === 0 ? 'none of its calls to train on in this step' : 'none of its calls had a nonzero advantage';
}

/** The updates count of each policy before each step (0 before the first step; null where the step before is unknown). */
function* withPolicyBefore(facts: StepFacts[]): Generator<{ f: StepFacts; before: (policy: string) => number | null }> {
  let previous: StepFacts | null = null;
  for (const f of facts) {
    const prev: StepFacts | null = previous;
    yield { f, before: (policy) => prev?.policies.get(policy)?.updates ?? (prev ? null : 0) };
    previous = f;
  }
}

/**
 * The steps worth a note: no update at all (and why, as far as the metrics tell), most groups with zero variance, and,
 * with one policy per role, a policy that did not update (none of its calls trained on, or none with an advantage).
 */
export function stepNotes(points: Iterable<PointLike>): StepNote[] {
  const notes: StepNote[] = [];
  for (const { f, before } of withPolicyBefore(stepFacts(points))) {
    const zero = f.zeroStd ?? 0;
    if (!stepUpdated(f)) {
      notes.push({ step: f.step, kind: 'no-update', text: `no update: ${stepNoUpdateWhy(f)}` });
      continue;
    }
    if (zero > MOST_GROUPS) {
      notes.push({
        step: f.step,
        kind: 'zero-variance',
        text: `${pct(zero)} of the groups had zero variance: only ${pct(1 - zero)} of the tasks taught anything`,
      });
    }
    for (const [policy, own] of f.policies) {
      const why = policyNoUpdateWhy(own, before(policy));
      if (why) notes.push({ step: f.step, kind: 'policy-no-update', policy, text: `policy ${policy}: no update (${why})` });
    }
  }
  return notes;
}

/** What an update measures: at a step without one the trainer records 0 for them, a value never measured. */
const UPDATE_METRICS: readonly string[] = [METRICS.loss, METRICS.gradNorm, METRICS.kl, METRICS.clipRatio, METRICS.entropy, METRICS.tokensPerS];
const POLICY_UPDATE_METRICS: readonly string[] = ['loss', 'kl', 'clip_ratio', 'grad_norm'];

/**
 * The recorded values that nothing measured, and why ("no update this step: ..."), as `metric -> step -> why`: at a step
 * without an update, the update's loss, gradient norm, KL, clip ratio, entropy and throughput; with one policy per
 * role, those of a policy that did not update, and its reward (the mean credit of its calls) when it had no call. The
 * charts draw a gap there, with the reason on hover.
 */
export function unmeasuredPoints(points: Iterable<PointLike>): Map<string, Map<number, string>> {
  const out = new Map<string, Map<number, string>>();
  const mark = (metric: string, step: number, why: string) => {
    if (!out.has(metric)) out.set(metric, new Map());
    out.get(metric)!.set(step, `no update this step: ${why}`);
  };
  for (const { f, before } of withPolicyBefore(stepFacts(points))) {
    const stepWhy = stepUpdated(f) ? null : stepNoUpdateWhy(f);
    if (stepWhy) for (const m of UPDATE_METRICS) mark(m, f.step, stepWhy);
    for (const [policy, own] of f.policies) {
      const why = stepWhy ?? policyNoUpdateWhy(own, before(policy));
      if (!why) continue;
      for (const m of POLICY_UPDATE_METRICS) mark(policyMetric(policy, m), f.step, why);
      if (own.transitions === 0) mark(policyMetric(policy, 'reward'), f.step, why);
    }
  }
  return out;
}
