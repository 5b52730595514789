/**
 * Whether a training run can learn, and if not, why: read from the metrics the trainer writes (metrics.ts), in one
 * place for everything that says so, in the same words: `agl train` (daemon/algorithm/trainer.ts prints it after the
 * first steps and with the result), the editor's progress notification and final message (extension/train-command.ts)
 * and the dashboard's banner and notes on steps (webview/dashboard/). Pure: no DOM, no node.
 *
 * GRPO learns from differences between the rollouts of one task (a group): when every rollout of a group scores the
 * same, every advantage in it is 0. A run whose first steps teach nothing does not move the policy however long it
 * runs: say so early, with the cause the evidence names and the first thing to try. The causes, in the order the
 * evidence decides them (the first that holds in every one of the first steps is the run's):
 *  1. no LLM call recorded through the gateway (the agent calls its model elsewhere, or none);
 *  2. greedy or near-greedy sampling (temperature <= NEAR_GREEDY_TEMPERATURE, or top-k 1): a task's samples are one answer;
 *  3. every rollout failed;
 *  4. every rollout scored the same non-zero value (a reward that does not tell answers apart, or tasks too easy);
 *  5. every rollout scored 0;
 *  6. each task's rollouts scored alike (a pass/fail reward and samples too alike).
 * With one policy per role, a step's notes also name a policy that did not update: its roles made no call in the
 * step (they run only on some paths of the agent), or none of its calls had an advantage. With an LLM judge, a step's
 * notes say how many groups it could not score (left out of the update, never scored 0) and why, and when its
 * weight (judge.retest: how far its scores reproduce between separate calls) scaled the update or left its groups out, and when its reward
 * diverged from the trusted one (daemon/algorithm/judge-divergence.ts).
 */
import {
  JUDGE_FAILURES,
  METRICS,
  RELIABILITY_SAID_BELOW,
  parseJudgeFailureMetric,
  parsePolicyMetric,
  parseRoleMetric,
  policyMetric,
  type JudgeFailure,
} from './metrics.js';
import { runRoles, type RolesConfig } from './call-roles.js';
import { NEAR_GREEDY_TEMPERATURE } from './span-reading.js';

export { NEAR_GREEDY_TEMPERATURE };

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

/** What one training step measured, as far as its metrics say (null: a run recorded before the metric existed). */
export interface StepFacts {
  step: number;
  rewardMean: number | null;
  rewardStd: number | null;
  /** Share of the step's groups whose rollouts all scored the same. */
  zeroStd: number | null;
  rollouts: number | null;
  failed: number | null;
  /** LLM calls the gateway recorded in the step's rollouts, and how many of them were sampled greedily. */
  llmCalls: number | null;
  greedyCalls: number | null;
  transitions: number | null;
  /** Tokens the update trained on. */
  trainedTokens: number | null;
  loss: number | null;
  gradNorm: number | null;
  /** Per policy (one policy per role): its updates so far and the calls it trained on this step. */
  policies: Map<string, { updates: number | null; transitions: number | null }>;
  /** Per role: its LLM calls in the step's rollouts. */
  roleCalls: Map<string, number>;
  /** With an LLM judge: the groups it scored, those it could not, and those by why. */
  judgeGroups: number | null;
  judgeFailed: number | null;
  judgeFailures: Map<JudgeFailure, number>;
  /** With judge.retest: the judge's weight in the update, the reliability and bound behind it, its pairs, the groups left out. */
  judgeWeight: number | null;
  judgeReliability: number | null;
  judgeReliabilityLow: number | null;
  judgeInformativeness: number | null;
  judgePairs: number | null;
  judgeNoise: number | null;
  judgeSignal: number | null;
  judgeUnreliable: number | null;
  /** The judge's divergence monitor: the step's trusted reward, and 1 where the judge's reward diverged from it. */
  judgeTrusted: number | null;
  judgeDivergence: number | null;
}

const FIELDS: Partial<Record<string, keyof StepFacts>> = {
  [METRICS.rewardMean]: 'rewardMean',
  [METRICS.rewardStd]: 'rewardStd',
  [METRICS.fracRewardZeroStd]: 'zeroStd',
  [METRICS.rolloutCount]: 'rollouts',
  [METRICS.rolloutFailed]: 'failed',
  [METRICS.llmCalls]: 'llmCalls',
  [METRICS.greedyCalls]: 'greedyCalls',
  [METRICS.rolloutTransitions]: 'transitions',
  [METRICS.trainedTokens]: 'trainedTokens',
  [METRICS.loss]: 'loss',
  [METRICS.gradNorm]: 'gradNorm',
  [METRICS.judgeGroups]: 'judgeGroups',
  [METRICS.judgeFailedGroups]: 'judgeFailed',
  [METRICS.judgeWeight]: 'judgeWeight',
  [METRICS.judgeReliability]: 'judgeReliability',
  [METRICS.judgeReliabilityLow]: 'judgeReliabilityLow',
  [METRICS.judgeInformativeness]: 'judgeInformativeness',
  [METRICS.judgeRetestPairs]: 'judgePairs',
  [METRICS.judgeNoise]: 'judgeNoise',
  [METRICS.judgeSignal]: 'judgeSignal',
  [METRICS.judgeUnreliableGroups]: 'judgeUnreliable',
  [METRICS.judgeTrustedReward]: 'judgeTrusted',
  [METRICS.judgeDivergence]: 'judgeDivergence',
};

/**
 * The facts of every training step (a step with a training reward, or one whose every group the judge could not
 * score: it has none), in step order.
 */
export function stepFacts(points: Iterable<PointLike>): StepFacts[] {
  const steps = new Map<number, StepFacts>();
  const at = (step: number): StepFacts => {
    let f = steps.get(step);
    if (!f) {
      f = { step, policies: new Map(), roleCalls: new Map(), judgeFailures: new Map() } as unknown as StepFacts;
      for (const field of Object.values(FIELDS)) (f as unknown as Record<string, null>)[field!] = null;
      steps.set(step, f);
    }
    return f;
  };
  for (const p of points) {
    const field = FIELDS[p.name];
    if (field) {
      (at(p.step) as unknown as Record<string, number>)[field] = p.value;
      continue;
    }
    const failure = parseJudgeFailureMetric(p.name);
    if (failure) at(p.step).judgeFailures.set(failure, p.value);
    const role = parseRoleMetric(p.name);
    if (role?.metric === 'calls') at(p.step).roleCalls.set(role.role, p.value);
    const pm = parsePolicyMetric(p.name);
    if (!pm || (pm.metric !== 'updates' && pm.metric !== 'transitions')) continue;
    const f = at(p.step);
    const own = f.policies.get(pm.policy) ?? { updates: null, transitions: null };
    own[pm.metric] = p.value;
    f.policies.set(pm.policy, own);
  }
  return [...steps.values()].filter((f) => f.rewardMean !== null || (f.judgeFailed ?? 0) > 0).sort((a, b) => a.step - b.step);
}

/** Did the step's update change any weights? (Runs recorded before grpo/trained_tokens: no loss and no gradient.) */
export function stepUpdated(f: StepFacts): boolean {
  if (f.trainedTokens !== null) return f.trainedTokens > 0;
  return !(f.loss === 0 && f.gradNorm === 0);
}

/** Whether any step of the run changed the policy; null before the first step is in. */
export function policyChanged(points: Iterable<PointLike>): boolean | null {
  const facts = stepFacts(points);
  return facts.length ? facts.some(stepUpdated) : null;
}

/** What the run's record says that the diagnosis reads (runContext builds it from a TrainingRun). */
export interface RunContext {
  /** The training temperature the run published (config model.temperature). */
  temperature?: number | null;
  /** The agent as the reader can run it (`agl rollout <agent>`): the CLI's as typed, else the run's agent id. */
  agent?: string;
  /** With one policy per role: each trained policy's roles. */
  policyRoles?: Record<string, string[]>;
}

/** The context of a recorded run: its config's temperature and policies (the plain recorded shape: no zod here). */
export function runContext(run: { id: string; agent: string; config: unknown }): RunContext {
  const config = (run.config ?? {}) as RolesConfig & { model?: { temperature?: number } };
  const policyRoles: Record<string, string[]> = {};
  for (const [role, policy] of Object.entries(runRoles(run.id, config).policies)) policyRoles[policy] = [...(policyRoles[policy] ?? []), role];
  const t = config.model?.temperature;
  return { agent: run.agent, temperature: typeof t === 'number' ? t : null, policyRoles };
}

export type DiagnosisKind = 'no-llm-call' | 'greedy-sampling' | 'all-failed' | 'same-reward' | 'all-zero' | 'zero-variance';

export interface LearningDiagnosis {
  kind: DiagnosisKind;
  /** The cause in a few words (the editor's progress line). */
  title: string;
  /** The first steps looked at (all of them showed it). */
  steps: number;
  /** What happened, in one sentence. */
  message: string;
  /** The likely cause. */
  cause: string;
  /** What to do next, the first thing to try first. */
  advice: string[];
}

const allZeroVariance = (f: StepFacts) => f.zeroStd !== null && f.zeroStd >= 1 - 1e-9;
/** Every rollout of the step failed (runs recorded before rollout/count: some failed and none left a call). */
const allFailed = (f: StepFacts) => (f.rollouts !== null ? f.rollouts > 0 && f.failed === f.rollouts : (f.failed ?? 0) > 0 && f.transitions === 0);
const noLlmCall = (f: StepFacts) => f.llmCalls === 0 && !allFailed(f);
const mostlyGreedy = (f: StepFacts) => f.greedyCalls !== null && !!f.llmCalls && f.greedyCalls / f.llmCalls >= 0.5;
const sameReward = (f: StepFacts) => allZeroVariance(f) && f.rewardStd !== null && f.rewardStd < 1e-9;

/** The predicates of the causes, in the order the evidence decides them. */
const CAUSES: [DiagnosisKind, (f: StepFacts) => boolean][] = [
  ['no-llm-call', noLlmCall],
  ['greedy-sampling', (f) => allZeroVariance(f) && mostlyGreedy(f)],
  ['all-failed', allFailed],
  ['same-reward', (f) => sameReward(f) && f.rewardMean !== 0],
  ['all-zero', (f) => allZeroVariance(f) && (f.rewardStd === null || f.rewardStd < 1e-9) && f.rewardMean === 0],
  ['zero-variance', allZeroVariance],
];

/** Why a step taught nothing: the first cause that holds for it, or null. */
export function stepCause(f: StepFacts): DiagnosisKind | null {
  return CAUSES.find(([, holds]) => holds(f))?.[0] ?? null;
}

const PARTIAL_CREDIT = 'give the reward partial credit (e.g. 0.5 for a well-formed answer, 1 for the right one), so that the rollouts of a task differ';
const fmt = (x: number) => String(Math.round(x * 1000) / 1000);

/** The cause, its few words and what to try, of a kind, from the steps that showed it. */
function explain(kind: DiagnosisKind, first: StepFacts[], ctx: RunContext): Omit<LearningDiagnosis, 'kind' | 'steps' | 'message'> {
  const agent = ctx.agent ?? '<agent>';
  const oneTask = `agl rollout ${agent} --task '<one task as JSON>'`;
  switch (kind) {
    case 'no-llm-call':
      return {
        title: 'no LLM call recorded through the gateway',
        cause:
          'the agent does not call its model through Agent Lightning: its client is not pointed at the LLM resource it is given (llm.baseUrl), or it answers without a model',
        advice: [
          "point the agent's OpenAI client at the resource it is given: new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey }) and model: llm.model (Python: llm.base_url, llm.api_key, llm.model)",
          `run one task and look at its calls: ${oneTask} lists every LLM call the gateway recorded`,
        ],
      };
    case 'greedy-sampling': {
      const configured = typeof ctx.temperature === 'number';
      const byConfig = configured && ctx.temperature! <= NEAR_GREEDY_TEMPERATURE;
      return {
        title: 'greedy sampling (temperature 0 / top-k 1)',
        cause: byConfig
          ? `greedy sampling: the run's model.temperature is ${ctx.temperature}, so every sample of a task is the same answer and GRPO has nothing to compare`
          : `greedy sampling: the agent's LLM calls set temperature 0 (or top_k 1)${configured ? `, over the run's model.temperature ${ctx.temperature}` : ''}, so every sample of a task is the same answer and GRPO has nothing to compare`,
        advice: [
          byConfig || !configured
            ? "sample while training: model.temperature: 1 in the run's train.yaml (validation stays greedy: model.valTemperature)"
            : "let the run set the sampling: drop temperature / top_k from the agent's own LLM calls (pass ...llm.openaiParams), so they sample at model.temperature",
          'then, if the groups still have no spread, a larger training.groupSize or ' + PARTIAL_CREDIT.replace('give the reward', 'a reward with'),
        ],
      };
    }
    case 'all-failed':
      return {
        title: 'every rollout failed',
        cause: 'the agent fails on every task (an exception, a timeout, or a model it cannot reach)',
        advice: [
          "open a failed rollout in the trajectory viewer to see the agent's error",
          `run one task by itself: ${oneTask}`,
          'fix the agent, then continue from the last checkpoint with agl train --resume <run id>',
        ],
      };
    case 'same-reward': {
      const values = [...new Set(first.map((f) => fmt(f.rewardMean!)))];
      return {
        title: `every rollout scored ${values.join(' / ')}`,
        cause: `every rollout scored ${values.join(', then ')}: the reward does not tell answers apart (it is the same whatever the answer), or the model already solves every task`,
        advice: [
          `check that the reward depends on the answer: run one task (${oneTask}) and see what a wrong answer scores`,
          'train on harder tasks (or hold out the ones it already solves)',
          PARTIAL_CREDIT,
        ],
      };
    }
    case 'all-zero':
      return {
        title: 'every rollout scored 0',
        cause: 'every rollout scored 0: the model never solves a task, so there is nothing for GRPO to prefer',
        advice: [
          'warm the model up first with supervised fine-tuning on worked examples (agl sft --data demos.jsonl --out <dir>), then train from it (--model <dir>)',
          'start from a stronger model (--model <a Hugging Face model folder>)',
          PARTIAL_CREDIT,
        ],
      };
    case 'zero-variance':
      return {
        title: "each task's rollouts scored alike",
        cause: 'the rollouts of each task all scored the same (a pass/fail reward and a model that answers a task the same way every time)',
        advice: [PARTIAL_CREDIT, 'sample more varied rollouts: a higher model.temperature or a larger training.groupSize'],
      };
  }
}

/** What happened in the first `n` steps, in one sentence. */
function happened(kind: DiagnosisKind, n: number, first: StepFacts[]): string {
  const steps = `the first ${n} step${n === 1 ? '' : 's'}`;
  const noChange = 'so every advantage is 0 and the policy does not change';
  switch (kind) {
    case 'no-llm-call': {
      const rollouts = first.reduce((a, f) => a + (f.rollouts ?? 0), 0);
      return `Training cannot learn: no LLM call was recorded through the gateway in ${steps}${rollouts ? ` (${rollouts} rollouts ran)` : ''}, so there is nothing to train on.`;
    }
    case 'greedy-sampling': {
      const calls = first.reduce((a, f) => a + (f.llmCalls ?? 0), 0);
      const greedy = first.reduce((a, f) => a + (f.greedyCalls ?? 0), 0);
      const share = greedy === calls ? 'every LLM call was' : `${Math.round((100 * greedy) / calls)}% of the LLM calls were`;
      return `Training cannot learn: in ${steps} ${share} sampled greedily: every GRPO group had zero variance, ${noChange}.`;
    }
    case 'all-failed':
      return `Training cannot learn: every rollout of ${steps} failed, so there is nothing to train on.`;
    case 'same-reward':
    case 'all-zero':
      return `Training cannot learn: in ${steps} every rollout scored ${[...new Set(first.map((f) => fmt(f.rewardMean!)))].join(' / ')}: every GRPO group had zero variance, ${noChange}.`;
    case 'zero-variance':
      return `Training cannot learn: in ${steps} every GRPO group had zero variance (all rollouts of a task scored the same), ${noChange}.`;
  }
}

/**
 * Why the run cannot learn, once its first `checkSteps` training steps are in: the first cause (in the order of
 * evidence) that holds in every one of them. Null while fewer steps are in, or when any of them could teach.
 */
export function diagnoseLearning(points: Iterable<PointLike>, ctx: RunContext = {}, checkSteps = LEARNING_CHECK_STEPS): LearningDiagnosis | null {
  const first = stepFacts(points).slice(0, checkSteps);
  if (first.length < checkSteps) return null;
  const kind = CAUSES.find(([, holds]) => first.every(holds))?.[0];
  if (!kind) return null;
  return { kind, steps: first.length, message: happened(kind, first.length, first), ...explain(kind, first, ctx) };
}

/** The diagnosis as lines for a terminal or a log: what, why, what to do. */
export function describeDiagnosis(d: LearningDiagnosis): string[] {
  return [d.message, `Likely cause: ${d.cause}.`, 'What to try:', ...d.advice.map((a) => `  - ${a}`)];
}

/** The diagnosis in one paragraph, the first thing to try at its end (the editor's notifications). */
export function diagnosisSentence(d: LearningDiagnosis): string {
  return `${d.message} Likely cause: ${d.cause}. Try first: ${d.advice[0]}.`;
}

/** A note on one step of a run, for the dashboard. */
export interface StepNote {
  step: number;
  kind: 'no-update' | 'zero-variance' | 'policy-no-update' | 'judge-left-out' | 'judge-unreliable' | 'judge-divergence';
  /** The policy a `policy-no-update` note is about. */
  policy?: string;
  text: string;
  /** The first thing to try about it. */
  tryFirst: string;
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** What to try first about the groups a judge could not score, by the reason most of them had. */
function judgeAdvice(f: StepFacts): string {
  const [main] = [...f.judgeFailures].sort((a, b) => b[1] - a[1])[0] ?? ['error'];
  switch (main) {
    case 'malformed':
    case 'partial':
      return "a judge model that answers in the JSON asked for (judge.temperature 0, a larger model), or fewer trajectories per call (judge.mode: single, or a smaller training.groupSize); the judge's spans in the viewer hold its answers";
    case 'timeout':
      return 'give each judge call longer (judge.timeoutSeconds) or make fewer at once (judge.concurrency)';
    case 'error':
      return "check the judge's endpoint (judge.url) and its rate limits: more tries (judge.retries), a longer judge.backoffSeconds, or fewer calls at once (judge.concurrency)";
  }
}

/** The groups a judge could not score in a step, and why: "3 of 16 groups: 2 answers missing a trajectory, 1 timeout". */
function judgeLeftOut(f: StepFacts): string {
  const failed = f.judgeFailed ?? 0;
  const why = [...f.judgeFailures]
    .sort((a, b) => b[1] - a[1])
    .map(([kind, n]) => `${n} ${JUDGE_FAILURES[kind][n === 1 ? 0 : 1]}`)
    .join(', ');
  const of = f.judgeGroups !== null ? ` of ${failed + f.judgeGroups}` : '';
  return `the judge could not score ${failed}${of} group${failed + (f.judgeGroups ?? 0) === 1 ? '' : 's'}${why ? ` (${why})` : ''}: left out of the update${f.judgeGroups === 0 ? ', so nothing was left to train on' : ''}`;
}

const JUDGE_NOISE_ADVICE =
  'a judge that agrees with itself: judge.temperature 0, a larger judge model, a rubric with a concrete scale (what scores 1, 0.5, 0); agl judge check RUN reports its self-agreement and weight';

const JUDGE_DIVERGENCE_ADVICE =
  "read the rollouts the judge scored highest in the viewer for what it rewards (length, a style), then say what it must not reward in the rubric; agl judge check RUN --labels checks it against people's labels; --stop-on-divergence stops a run here";

/** The judge's divergence monitor's finding at a step (daemon/algorithm/judge-divergence.ts; agl train's line has the window's numbers). */
function judgeDivergenceNote(f: StepFacts): string {
  const fmt = (x: number | null) => (x === null ? '-' : x.toFixed(3));
  return `the judge's reward rose while the trusted reward (people's labels, else the agent's own) or the held-out reward fell over training.divergenceWindow steps: now the judge's ${fmt(f.rewardMean)}, the trusted ${fmt(f.judgeTrusted)}; the policy may be learning the judge's biases, not the task`;
}

/** What the judge's weight did to a step's update, when it bit: scaled its groups' advantages, or left them out. */
function judgeUnreliableNote(f: StepFacts): string | null {
  const w = f.judgeWeight;
  if (w === null || w >= RELIABILITY_SAID_BELOW) return null;
  const fmt = (x: number | null) => (x === null ? '?' : x.toFixed(2));
  const pairs = `${f.judgePairs ?? 0} pair${f.judgePairs === 1 ? '' : 's'} this step and the last steps'`;
  const why =
    f.judgeReliability === null
      ? `no trajectories whose scores spread were scored by two separate calls yet (${pairs})`
      : `its scores of the same trajectories in separate calls correlate ${fmt(f.judgeReliability)} within groups (at least ${fmt(f.judgeReliabilityLow)} at 95%; ` +
        `informativeness ${fmt(f.judgeInformativeness)}; ${pairs})`;
  const out = f.judgeUnreliable ?? 0;
  if (out > 0) return `judge weight 0: ${why}, so its ${out} group${out === 1 ? ' was' : 's were'} left out of the update`;
  return `judge weight ${fmt(w)}: ${why}, so the judged groups' advantages were multiplied by ${fmt(w)}`;
}

/** Why a step did not update, in a few words, and what to try first (the run-level words of its cause). */
function noUpdateNote(f: StepFacts, ctx: RunContext): { why: string; tryFirst: string } {
  if ((f.judgeFailed ?? 0) > 0 && f.judgeGroups === 0) return { why: 'the judge could not score any group', tryFirst: judgeAdvice(f) };
  if ((f.judgeUnreliable ?? 0) > 0) return { why: 'the judge was not shown to be informative (its note says how)', tryFirst: JUDGE_NOISE_ADVICE };
  const kind = stepCause(f);
  if (kind) {
    const e = explain(kind, [f], ctx);
    return { why: kind === 'all-failed' ? `every rollout failed (${f.failed})` : e.title, tryFirst: e.advice[0]! };
  }
  return f.transitions === 0
    ? {
        why: 'no LLM call of a trained role to train on',
        tryFirst: "check the run's roles (training.agentMatch, policies:) against the roles the agent's calls name",
      }
    : { why: 'no call had a nonzero advantage', tryFirst: PARTIAL_CREDIT };
}

/** Why a policy did not update in a step (with one policy per role): its roles made no call, or none had an advantage. */
function policyNoUpdate(
  policy: string,
  own: { transitions: number | null },
  f: StepFacts,
  all: StepFacts[],
  ctx: RunContext,
): { why: string; tryFirst: string } {
  const roles = ctx.policyRoles?.[policy] ?? [];
  const calls = roles.reduce((a, r) => a + (f.roleCalls.get(r) ?? 0), 0);
  if (own.transitions === 0 && roles.length && calls === 0) {
    const named = roles.map((r) => `role ${r}`).join(', ');
    const others = all.filter((g) => roles.some((r) => (g.roleCalls.get(r) ?? 0) > 0)).map((g) => g.step);
    const listed = others.length > 6 ? `${others.slice(0, 6).join(', ')}, …` : others.join(', ');
    const where = others.length
      ? `it called in step${others.length === 1 ? '' : 's'} ${listed}: the agent takes it only on some paths, e.g. when another role's answer is rejected`
      : 'nor in any step so far: the agent takes it only on some paths, or never';
    return {
      why: `${named} made no LLM call in this step (${where})`,
      tryFirst: `nothing is wrong when the agent calls it only when needed: its policy trains in the steps where it runs; to train it more often, put more tasks in a step (training.batchSize) or let it share a policy with a role that runs every time (policies: ${roles[0]}: { shared: <that role> })`,
    };
  }
  if (own.transitions === 0)
    return {
      why: 'none of its calls to train on in this step',
      tryFirst: "check that its roles' calls record token ids (a failed call records none: see the trajectory viewer)",
    };
  return {
    why: `none of its ${own.transitions === null ? '' : `${own.transitions} `}calls had a nonzero advantage (its groups scored alike)`,
    tryFirst: `more varied samples (a higher model.temperature, a larger training.groupSize) or ${PARTIAL_CREDIT.replace('give the reward', 'a reward with')}`,
  };
}

/** Whether a role policy stood still in a step: its updates count did not move (null before: unknown, not said). */
const policyStood = (own: { updates: number | null }, before: number | null): boolean => own.updates !== null && before !== null && own.updates <= before;

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
 * The steps worth a note: no update at all (and why, by the causes above), most groups with zero variance, with one
 * policy per role a policy that did not update (its roles made no call in the step, or none had an advantage), and
 * with an LLM judge the groups it could not score (left out of the update).
 */
export function stepNotes(points: Iterable<PointLike>, ctx: RunContext = {}): StepNote[] {
  const facts = stepFacts(points);
  const notes: StepNote[] = [];
  for (const { f, before } of withPolicyBefore(facts)) {
    const zero = f.zeroStd ?? 0;
    const judgeFailed = (f.judgeFailed ?? 0) > 0;
    if (judgeFailed) notes.push({ step: f.step, kind: 'judge-left-out', text: judgeLeftOut(f), tryFirst: judgeAdvice(f) });
    const unreliable = judgeUnreliableNote(f);
    if (unreliable) notes.push({ step: f.step, kind: 'judge-unreliable', text: unreliable, tryFirst: JUDGE_NOISE_ADVICE });
    if (f.judgeDivergence === 1) notes.push({ step: f.step, kind: 'judge-divergence', text: judgeDivergenceNote(f), tryFirst: JUDGE_DIVERGENCE_ADVICE });
    // The judge's note says why a step whose every group it could not score did not update.
    if (judgeFailed && f.judgeGroups === 0) continue;
    if (!stepUpdated(f)) {
      const { why, tryFirst } = noUpdateNote(f, ctx);
      notes.push({ step: f.step, kind: 'no-update', text: `no update: ${why}`, tryFirst });
      continue;
    }
    if (zero > MOST_GROUPS) {
      const greedy = mostlyGreedy(f) ? " (most calls were sampled greedily: a task's samples are alike)" : '';
      notes.push({
        step: f.step,
        kind: 'zero-variance',
        text: `${pct(zero)} of the groups had zero variance${greedy}: only ${pct(1 - zero)} of the tasks taught anything`,
        tryFirst: greedy
          ? explain('greedy-sampling', [f], ctx).advice[0]!
          : `${PARTIAL_CREDIT}, or more varied samples (a higher model.temperature, a larger training.groupSize)`,
      });
    }
    for (const [policy, own] of f.policies) {
      if (!policyStood(own, before(policy))) continue;
      const { why, tryFirst } = policyNoUpdate(policy, own, f, facts, ctx);
      notes.push({ step: f.step, kind: 'policy-no-update', policy, text: `policy ${policy}: no update: ${why}`, tryFirst });
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
export function unmeasuredPoints(points: Iterable<PointLike>, ctx: RunContext = {}): Map<string, Map<number, string>> {
  const out = new Map<string, Map<number, string>>();
  const mark = (metric: string, step: number, why: string) => {
    if (!out.has(metric)) out.set(metric, new Map());
    out.get(metric)!.set(step, `no update this step: ${why}`);
  };
  const facts = stepFacts(points);
  for (const { f, before } of withPolicyBefore(facts)) {
    const stepWhy = stepUpdated(f) ? null : noUpdateNote(f, ctx).why;
    if (stepWhy) for (const m of UPDATE_METRICS) mark(m, f.step, stepWhy);
    for (const [policy, own] of f.policies) {
      const why = stepWhy ?? (policyStood(own, before(policy)) ? policyNoUpdate(policy, own, f, facts, ctx).why : null);
      if (!why) continue;
      for (const m of POLICY_UPDATE_METRICS) mark(policyMetric(policy, m), f.step, why);
      if (own.transitions === 0) mark(policyMetric(policy, 'reward'), f.step, why);
    }
  }
  return out;
}
