/**
 * Fills a real daemon (through the typed client) with what a calc-agent training run leaves behind:
 * rollouts with an agent span, LLM calls (chat messages, tokens, latency, code location), a calculator
 * tool call and a reward; a training run with its metrics; and one step's GRPO transitions (credit,
 * advantage) for two tasks of four samples each. Values follow the span conventions (protocol/spans.ts).
 */
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { SpanInput, Transition } from '../../protocol/store.js';
import type { AglClient } from '../../client/client.js';

export const AGENT = 'samples/calc/agent.ts#calcAgent';
export const CODE_FILE = 'samples/calc/agent.ts';
export const RUN_ID = 'run-calc-demo';
export const GROUP_STEP = 7;

export interface Trajectory {
  question: string;
  expected: string;
  toolExpr: string;
  toolResult: string;
  answer: string;
  reward: number;
  /** Answer at once: one LLM call, no tool. */
  direct?: boolean;
  /** The calculator fails with this message (and the attempt fails with it). */
  toolError?: string;
}

/** Each task's four sampled answers; the last task is one no sample gets right (a zero-variance group). */
const TASKS = [
  {
    id: 'task-12x7',
    question: 'What is 12*7+3?',
    right: '87',
    answers: ['87', '84', '90', '87'],
    tool: [
      ['12*7+3', '87'],
      ['12*7', '84'],
    ],
  },
  {
    id: 'task-sq',
    question: 'What is the square of 15 minus 25?',
    right: '200',
    answers: ['200', '225', '200', '215'],
    tool: [
      ['15**2-25', '200'],
      ['15**2', '225'],
    ],
  },
  {
    id: 'task-pow',
    question: 'What is 2 to the 10th, minus 1?',
    right: '1023',
    answers: ['1024', '1024', '1000', '1024'],
    tool: [
      ['2**10', '1024'],
      ['2**10', '1024'],
    ],
  },
];

export async function recordRollout(
  client: AglClient,
  t: Trajectory,
  metadata: Record<string, unknown>,
  startAt: number,
): Promise<{ rolloutId: string; attemptId: string; llmSpanIds: string[] }> {
  const { rollout, attempt } = await client.startRollout(
    { input: { question: t.question, answer: t.expected }, mode: 'train', agent: AGENT, metadata },
    'worker-1',
  );
  const ids = { rolloutId: rollout.id, attemptId: attempt.id };
  const traceId = `trace${rollout.id.replace(/[^a-z0-9]/gi, '')}`.padEnd(32, '0').slice(0, 32);
  const root = `root${rollout.id}`.slice(0, 16);
  const call1 = `llm1${rollout.id}`.slice(0, 16);
  const tool = `tool${rollout.id}`.slice(0, 16);
  const call2 = `llm2${rollout.id}`.slice(0, 16);
  const system = { role: 'system', content: 'You are a calculator agent. Use the calculator tool, then answer with the number only.' };
  const user = { role: 'user', content: t.question };
  const toolCall = {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'calculator', arguments: JSON.stringify({ expression: t.toolExpr }) } }],
  };
  const llm = (spanId: string, start: number, end: number, input: unknown[], output: unknown[], inTok: number, outTok: number, line: number): SpanInput => ({
    ...ids,
    traceId,
    spanId,
    parentSpanId: root,
    name: SPAN.llmCall,
    kind: 'client',
    startTime: start,
    endTime: end,
    status: { code: 'ok' },
    attributes: {
      [GENAI.operationName]: 'chat',
      [GENAI.system]: 'agl',
      [GENAI.requestModel]: 'qwen3-0.6b',
      [GENAI.responseModel]: 'qwen3-0.6b',
      [GENAI.inputMessages]: JSON.stringify(input),
      [GENAI.outputMessages]: JSON.stringify(output),
      [GENAI.usageInputTokens]: inTok,
      [GENAI.usageOutputTokens]: outTok,
      [GENAI.responseFinishReasons]: ['stop'],
      [AGL.latencyMs]: end - start,
      [AGL.localPolicy]: true,
      [AGL.agentName]: 'calc',
      [AGL.codeFilepath]: CODE_FILE,
      [AGL.codeLineno]: line,
      [AGL.promptTokenIds]: JSON.stringify(Array.from({ length: inTok }, (_, i) => 100 + i)),
      [AGL.completionTokenIds]: JSON.stringify(Array.from({ length: outTok }, (_, i) => 200 + i)),
      [AGL.completionLogprobs]: JSON.stringify(Array.from({ length: outTok }, () => -0.25)),
    },
    events: [],
    resource: {},
  });
  const s = startAt;
  const spans: SpanInput[] = [
    {
      ...ids,
      traceId,
      spanId: root,
      parentSpanId: null,
      name: SPAN.agentRun,
      kind: 'internal',
      startTime: s,
      endTime: s + 1450,
      status: { code: 'ok' },
      // What the agent function returned: the episode's answer (the group view shows and merges by it).
      attributes: { [AGL.agentName]: 'calc', 'agl.task': JSON.stringify({ question: t.question }), [AGL.rolloutResult]: JSON.stringify(t.answer) },
      events: [],
      resource: { 'service.name': 'calc-agent' },
    },
    llm(call1, s + 20, s + 640, [system, user], [toolCall], 58, 21, 31),
    {
      ...ids,
      traceId,
      spanId: tool,
      parentSpanId: root,
      name: SPAN.tool,
      kind: 'internal',
      startTime: s + 660,
      endTime: s + 690,
      status: t.toolError ? { code: 'error', message: t.toolError } : { code: 'ok' },
      attributes: {
        [GENAI.operationName]: 'execute_tool',
        [GENAI.toolName]: 'calculator',
        'agl.operation.name': 'calculator',
        [AGL.toolSucceeded]: !t.toolError,
      },
      events: [],
      resource: {},
    },
    llm(
      call2,
      s + 700,
      s + 1380,
      [system, user, toolCall, { role: 'tool', tool_call_id: 'call_1', content: t.toolResult }],
      [{ role: 'assistant', content: t.answer }],
      86,
      4,
      38,
    ),
    {
      ...ids,
      traceId,
      spanId: `rew${rollout.id}`.slice(0, 16),
      parentSpanId: root,
      name: SPAN.reward,
      kind: 'internal',
      startTime: s + 1400,
      endTime: s + 1400,
      status: { code: 'unset' },
      attributes: { [AGL.rewardValue]: t.reward, [AGL.rewardName]: 'exact_match', [AGL.rewardFinal]: true },
      events: [],
      resource: {},
    },
  ];
  if (t.direct) {
    // One call that answers at once: no tool call, no tool span, no second call.
    spans.splice(1, 3, llm(call1, s + 20, s + 640, [system, user], [{ role: 'assistant', content: t.answer }], 58, 4, 31));
  }
  await client.addSpans(spans);
  await client.finishAttempt(attempt.id, t.toolError ? { status: 'failed', error: { message: t.toolError } } : { status: 'succeeded' });
  return { ...ids, llmSpanIds: t.direct ? [call1] : [call1, call2] };
}

export interface SeededData {
  rolloutIds: string[];
  groupRolloutIds: Record<string, string[]>;
  runId: string;
  failedRolloutId: string;
}

export async function seedCalcTraining(client: AglClient): Promise<SeededData> {
  const resources = await client.addResources({ resources: { main_llm: { type: 'llm', endpoint: 'http://127.0.0.1:4747/v1', model: 'qwen3-0.6b' } } });
  const run = await client.createTrainingRun({
    id: RUN_ID,
    agent: AGENT,
    totalSteps: 20,
    config: { model: { name: 'qwen3-0.6b' }, training: { learningRate: 1e-5, batchSize: 2, groupSize: 4, grpo: { variant: 'grpo' } } },
  });
  const base = Date.now() - 60_000;
  const transitions: Transition[] = [];
  const groupRolloutIds: Record<string, string[]> = {};
  const rolloutIds: string[] = [];
  for (const [ti, task] of TASKS.entries()) {
    const answers = task.answers;
    const rewards: number[] = answers.map((a) => (a === task.right ? 1 : 0));
    const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length) || 1;
    groupRolloutIds[task.id] = [];
    for (const [k, answer] of answers.entries()) {
      const [expr, toolResult] = task.tool[k === 1 ? 1 : 0];
      const rec = await recordRollout(
        client,
        { question: task.question, expected: task.right, toolExpr: expr, toolResult, answer, reward: rewards[k] },
        { runId: run.id, step: GROUP_STEP, taskId: task.id, sample: k },
        base + (ti * 4 + k) * 2000,
      );
      rolloutIds.push(rec.rolloutId);
      groupRolloutIds[task.id].push(rec.rolloutId);
      rec.llmSpanIds.forEach((spanId, index) =>
        transitions.push({
          runId: run.id,
          step: GROUP_STEP,
          rolloutId: rec.rolloutId,
          attemptId: rec.attemptId,
          spanId,
          groupId: task.id,
          index,
          agentName: 'calc',
          reward: rewards[k],
          credit: rewards[k],
          advantage: (rewards[k] - mean) / std,
          promptTokens: index === 0 ? 58 : 86,
          completionTokens: index === 0 ? 21 : 4,
        }),
      );
    }
  }
  await client.addTransitions(transitions);
  // A failed validation rollout with an exception, to show errors.
  const failed = await client.startRollout({ input: { question: 'Divide 1 by 0' }, mode: 'val', agent: AGENT, resourcesId: resources.id }, 'worker-1');
  await client.addSpans([
    {
      rolloutId: failed.rollout.id,
      attemptId: failed.attempt.id,
      name: SPAN.exception,
      startTime: base,
      endTime: base,
      attributes: { [AGL.exceptionType]: 'ZeroDivisionError', [AGL.exceptionMessage]: 'division by zero' },
      status: { code: 'error', message: 'division by zero' },
    },
  ]);
  await client.finishAttempt(failed.attempt.id, { status: 'failed', error: { message: 'ZeroDivisionError: division by zero' } });

  const points: { step: number; name: string; value: number }[] = [];
  for (let step = 0; step < 12; step++) {
    const progress = step / 11;
    points.push(
      { step, name: 'reward/mean', value: 0.22 + 0.5 * progress + 0.05 * Math.sin(step * 1.7) },
      { step, name: 'grpo/kl', value: 0.002 * step + 0.0005 * Math.cos(step) },
      { step, name: 'grpo/clip_ratio', value: 0.04 + 0.03 * Math.sin(step) ** 2 },
      { step, name: 'grpo/frac_reward_zero_std', value: Math.max(0, 0.6 - 0.4 * progress + 0.05 * Math.sin(step * 2.1)) },
      { step, name: 'grpo/loss', value: 0.3 - 0.2 * progress },
      { step, name: 'grpo/grad_norm', value: 1.2 - 0.5 * progress },
      { step, name: 'response/length_mean', value: 40 - 12 * progress },
      { step, name: 'perf/step_s', value: 9 + Math.sin(step) },
    );
    if (step % 4 === 0) points.push({ step, name: 'val/reward', value: 0.2 + 0.45 * progress });
  }
  await client.addMetrics(points.map((p) => ({ ...p, runId: run.id })));
  await client.updateTrainingRun(run.id, { step: 12 });
  return { rolloutIds, groupRolloutIds, runId: run.id, failedRolloutId: failed.rollout.id };
}

/**
 * A finished two-policy sql run's metrics as the trainer writes them (daemon/algorithm/step-metrics.ts stepMetrics and
 * policyMetrics): writer and rewriter each with their own policy, the checker served untrained. Step 1 teaches nothing
 * (every group zero-variance: no update, so no policy loss or gradient norm is recorded, and the run's are 0); at step 2
 * the rewriter has no call to train on (its updates count stays, its loss, gradient norm and reward are not recorded);
 * at step 3 three groups in four are zero-variance.
 */
export async function seedTwoPolicyRun(client: AglClient, runId: string): Promise<void> {
  await client.createTrainingRun({
    id: runId,
    agent: 'samples/sql/agent.ts#sqlAgent',
    totalSteps: 5,
    config: {
      model: { name: 'samples/sql/warmup', valTemperature: 0 },
      training: { agentMatch: '^(writer|rewriter)$', learningRate: 1e-4, batchSize: 3, groupSize: 4 },
      policies: { writer: {}, rewriter: {} },
    },
  });
  const zero = [0.25, 1, 0.5, 0.75, 0.25];
  const trained = [120, 0, 80, 40, 100];
  const updates = { writer: [1, 1, 2, 3, 4], rewriter: [1, 1, 1, 2, 3] };
  const transitions = { writer: [12, 12, 12, 12, 12], rewriter: [4, 4, 0, 4, 4] };
  const policy = (name: 'writer' | 'rewriter', step: number, base: number) => {
    const updated = updates[name][step]! > (updates[name][step - 1] ?? 0);
    const calls = transitions[name][step]!;
    return [
      ...(updated
        ? [
            { step, name: `policy/${name}/loss`, value: base - 0.005 * step },
            { step, name: `policy/${name}/grad_norm`, value: 10 * base + 0.1 * step },
          ]
        : []),
      ...(calls ? [{ step, name: `policy/${name}/reward`, value: 5 * base + 0.05 * step }] : []),
      { step, name: `policy/${name}/updates`, value: updates[name][step]! },
      { step, name: `policy/${name}/transitions`, value: calls },
    ];
  };
  await client.addMetrics(
    zero
      .flatMap((z, step) => [
        { step, name: 'reward/mean', value: 0.2 + 0.1 * step },
        { step, name: 'grpo/frac_reward_zero_std', value: z },
        { step, name: 'grpo/trained_tokens', value: trained[step]! },
        { step, name: 'grpo/loss', value: trained[step] ? 0.05 - 0.01 * step : 0 },
        { step, name: 'grpo/grad_norm', value: trained[step] ? 2 - 0.1 * step : 0 },
        ...policy('writer', step, 0.04),
        ...policy('rewriter', step, 0.08),
        { step, name: 'role/writer/calls', value: 12 },
        { step, name: 'role/checker/calls', value: 12 + transitions.rewriter[step]! }, // it checks the writer's and the rewriter's queries
        ...(transitions.rewriter[step] ? [{ step, name: 'role/rewriter/calls', value: transitions.rewriter[step]! }] : []), // a role with no call: no metric
      ])
      .map((p) => ({ ...p, runId })),
  );
  await client.updateTrainingRun(runId, { status: 'succeeded', step: 5, summary: { stopReason: 'completed', elapsedMs: 60_000 } });
}

/**
 * Three recorded calc rollouts of one run, for Add to dataset: `wrong` (answered 84 to 12*7+3, a tool call then a second
 * call: its final call's prompt holds the tool's result), `right` (200, one call) and `silent` (returned only its
 * reward: no answer recorded), each with a task id.
 */
export async function seedDatasetRollouts(client: AglClient, runId: string): Promise<{ wrong: string; right: string; silent: string }> {
  const t0 = Date.now() - 60_000;
  const base = { toolExpr: '12*7', toolResult: '84', reward: 0 };
  const wrong = await recordRollout(client, { ...base, question: 'What is 12*7+3?', expected: '87', answer: '84' }, { runId, taskId: 't-12x7' }, t0);
  const right = await recordRollout(
    client,
    { ...base, question: 'What is 15**2-25?', expected: '200', answer: '200', reward: 1, direct: true },
    { runId, taskId: 't-sq' },
    t0 + 2000,
  );
  const { rollout, attempt } = await client.startRollout({ input: { question: 'What is 1+1?' }, mode: 'train', metadata: { runId, taskId: 't-one' } }, 'w');
  await client.addSpan({
    rolloutId: rollout.id,
    attemptId: attempt.id,
    name: SPAN.reward,
    startTime: t0 + 4000,
    attributes: { [AGL.rewardValue]: 1, [AGL.rewardFinal]: true },
  });
  await client.finishAttempt(attempt.id, { status: 'succeeded' });
  return { wrong: wrong.rolloutId, right: right.rolloutId, silent: rollout.id };
}
