/**
 * What the viewer derives from spans (webview/trajectory/model.ts) and what the panels answer from a real
 * daemon (extension/panels/data.ts), checked without a browser: span trees with broken parentage, chat
 * messages in the OpenAI and GenAI shapes, the STATES table, agent source locations, groups of rollouts
 * the algorithm has not trained on yet, and clear errors for unknown ids.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import { RolloutsRefresh } from '../../extension/panels/live-updates.js';
import { DaemonEventStream } from '../../client/events.js';
import { definitionLine } from '../../extension/panels/source.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { Span } from '../../protocol/store.js';
import type { GroupPage, RolloutPage } from '../../protocol/webview-trajectory.js';
import {
  agentSource,
  buildSpanTree,
  deriveStates,
  flattenTree,
  isFilled,
  llmCall,
  toChatMessage,
  toolStepLine,
  toolSteps,
} from '../../webview/trajectory/model.js';
import { formulaText } from '../../webview/trajectory/group-view.js';
import { startDaemon, type Daemon } from './harness.js';

let seq = 0;
function span(p: Partial<Span> & { spanId: string; name: string; startTime: number }): Span {
  return {
    rolloutId: 'ro-1',
    attemptId: 'at-1',
    sequenceId: ++seq,
    traceId: 't',
    parentSpanId: null,
    kind: 'internal',
    endTime: p.startTime + 10,
    attributes: {},
    events: [],
    status: { code: 'ok' },
    resource: {},
    ...p,
  };
}

describe('trajectory model', () => {
  it('builds the span tree in start order and hangs a span whose parent never arrived under the rollout root, as the algorithm does', () => {
    const spans = [
      span({ spanId: 'c2', parentSpanId: 'root', name: SPAN.llmCall, startTime: 30 }),
      span({ spanId: 'root', name: SPAN.agentRun, startTime: 0 }),
      span({ spanId: 'c1', parentSpanId: 'root', name: SPAN.llmCall, startTime: 10 }),
      span({ spanId: 'orphan', parentSpanId: 'lost', name: SPAN.reward, startTime: 50 }),
      span({ spanId: 'loop-a', parentSpanId: 'loop-b', name: 'a', startTime: 60 }),
      span({ spanId: 'loop-b', parentSpanId: 'loop-a', name: 'b', startTime: 70 }),
    ];
    const flat = flattenTree(buildSpanTree(spans));
    assert.deepEqual(
      flat.map((n) => [n.span.spanId, n.depth]),
      [
        ['root', 0],
        ['c1', 1],
        ['c2', 1],
        ['orphan', 1],
        ['loop-a', 1],
        ['loop-b', 2],
      ],
      'a parent cycle is cut instead of hiding both spans',
    );
    assert.deepEqual(
      flattenTree(buildSpanTree(spans), new Set(['root'])).map((n) => n.span.spanId),
      ['root'],
    );
    const rootless = flattenTree(buildSpanTree(spans.filter((s) => s.spanId !== 'root')));
    assert.equal(rootless.find((n) => n.span.spanId === 'orphan')?.depth, 0, 'without a root span the orphan is a root');
  });

  it('reads chat messages in the OpenAI shape, the GenAI parts shape and as choices', () => {
    assert.deepEqual(toChatMessage({ role: 'user', parts: [{ type: 'text', content: 'hi' }] }).text, 'hi');
    assert.deepEqual(toChatMessage({ index: 0, message: { role: 'assistant', content: 'yo' }, finish_reason: 'stop' }), {
      role: 'assistant',
      text: 'yo',
      name: undefined,
      toolCalls: [],
      toolCallId: undefined,
    });
    const call = toChatMessage({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: { name: 'calc', arguments: '{"x":1}' } }] });
    assert.deepEqual(call.toolCalls, [{ id: 'c1', name: 'calc', args: '{"x":1}' }]);
    const llm = llmCall(
      span({ spanId: 's', name: SPAN.llmCall, startTime: 0, attributes: { [GENAI.inputMessages]: 'not json', [GENAI.usageInputTokens]: 5 } }),
    );
    assert.deepEqual(
      llm.prompt.map((m) => m.text),
      ['not json'],
    );
    assert.equal(llm.inputTokens, 5);
    assert.equal(llm.latencyMs, 10);
    const idsOnly = llmCall(
      span({
        spanId: 'i',
        name: SPAN.llmCall,
        startTime: 0,
        attributes: { [AGL.promptTokenIds]: '[1,2,3]', [AGL.completionTokenIds]: [7, 8], [AGL.completionLogprobs]: '[-1,-3]' },
      }),
    );
    assert.deepEqual(
      [idsOnly.inputTokens, idsOnly.outputTokens, idsOnly.promptTokenIds, idsOnly.completionTokenIds, idsOnly.meanLogprob],
      [3, 2, 3, 2, -2],
      'token counts from the recorded ids when the server gave no usage',
    );
  });

  it('derives the STATES table: tool results from tool spans, emitted objects, rewards, and what each call read', () => {
    const spans = [
      span({ spanId: 'root', name: SPAN.agentRun, startTime: 0, endTime: 100, attributes: { 'agl.task': JSON.stringify({ city: 'Lisbon' }) } }),
      span({
        spanId: 'l1',
        name: SPAN.llmCall,
        startTime: 1,
        attributes: {
          [GENAI.inputMessages]: JSON.stringify([{ role: 'user', content: 'Weather in Lisbon?' }]),
          [GENAI.outputMessages]: JSON.stringify([{ role: 'assistant', content: 'call weather' }]),
          [AGL.agentName]: 'planner',
        },
      }),
      span({ spanId: 't1', name: SPAN.tool, startTime: 20, attributes: { [GENAI.toolName]: 'weather', 'gen_ai.tool.call.result': 'sunny 24C' } }),
      span({ spanId: 'o1', name: SPAN.object, startTime: 40, attributes: { [AGL.objectJson]: '{"plan":"beach"}' } }),
      span({
        spanId: 'l2',
        name: SPAN.llmCall,
        startTime: 50,
        attributes: {
          [GENAI.inputMessages]: JSON.stringify([{ role: 'user', content: 'It is sunny 24C. Plan?' }]),
          [GENAI.outputMessages]: JSON.stringify([{ role: 'assistant', content: 'beach day' }]),
        },
      }),
      span({ spanId: 'r1', name: SPAN.reward, startTime: 90, attributes: { [AGL.rewardValue]: 0.5, [AGL.rewardName]: 'judge' } }),
    ];
    const table = deriveStates(spans, null);
    assert.deepEqual(
      table.variables.map((v) => v.label),
      ['task input', 'planner output #1', 'tool result weather', 'object 1', 'LLM output #2', 'judge'],
    );
    assert.deepEqual(
      table.steps.map((s) => s.label),
      ['planner call #1', 'weather() → sunny 24C', 'emit object', 'LLM call #2', 'reward judge'],
      'a tool step reads name(input) → output',
    );
    assert.deepEqual(table.steps[0].reads, ['task'], 'the first prompt quotes the task');
    assert.deepEqual(table.steps[3].reads, [table.variables[2].id], 'the second prompt quotes the tool result, not the task');
    assert.equal(isFilled(table, table.variables[2].id, 0), false);
    assert.equal(isFilled(table, table.variables[2].id, 1), true);
  });

  it("reads a tool step as name(input) → output: from the SDK's attributes, else from the chat around it, else the span's own attributes", () => {
    const chat = (spanId: string, startTime: number, input: unknown[], output: unknown[]) =>
      span({
        spanId,
        name: SPAN.llmCall,
        startTime,
        attributes: { [GENAI.inputMessages]: JSON.stringify(input), [GENAI.outputMessages]: JSON.stringify(output) },
      });
    const ask = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c9', type: 'function', function: { name: 'lookup', arguments: '{"city":"Lisbon"}' } }],
    };
    const spans = [
      // The SDK's operation(name, fn, { tool: true, input }): input and result on the span.
      span({
        spanId: 'sdk',
        name: SPAN.tool,
        startTime: 0,
        attributes: { [GENAI.toolName]: 'calc', [GENAI.toolCallArguments]: '12*7', [GENAI.toolCallResult]: '84', [AGL.toolSucceeded]: true },
      }),
      // A chat agent's tool span with neither: the arguments from the call before, the result from the call after.
      chat('l1', 20, [{ role: 'user', content: 'weather?' }], [ask]),
      span({ spanId: 'bare', name: SPAN.tool, startTime: 40, attributes: { [GENAI.toolName]: 'lookup' } }),
      chat(
        'l2',
        60,
        [{ role: 'user', content: 'weather?' }, ask, { role: 'tool', tool_call_id: 'c9', content: 'sunny' }],
        [{ role: 'assistant', content: 'sunny' }],
      ),
      // A failed tool with only its own attribute (e.g. calc.expression): the input from it, the error from the status.
      span({
        spanId: 'failed',
        name: SPAN.tool,
        startTime: 80,
        status: { code: 'error', message: "calc could not evaluate '1/0'" },
        attributes: { [GENAI.toolName]: 'calc', 'calc.expression': '1/0', [AGL.toolSucceeded]: false },
      }),
    ];
    const tools = toolSteps(spans);
    assert.deepEqual([...tools.keys()], ['sdk', 'bare', 'failed']);
    assert.deepEqual([...tools.values()].map(toolStepLine), ['calc(12*7) → 84', 'lookup(Lisbon) → sunny', "calc(1/0) → error: calc could not evaluate '1/0'"]);
    assert.equal(tools.get('bare')!.callId, 'c9');
    assert.equal(tools.get('failed')!.ok, false);
    // The States view: the tool step once (its result is not counted again when the next prompt quotes it).
    const table = deriveStates(spans, null);
    assert.deepEqual(
      table.steps.filter((s) => s.kind === 'tool').map((s) => s.label),
      ['calc(12*7) → 84', 'lookup(Lisbon) → sunny', "calc(1/0) → error: calc could not evaluate '1/0'"],
    );
  });

  it("writes the group's advantage formula for each scaling the run may have used, with the group's numbers", () => {
    const sample = (credit: number, advantage: number) => ({ transitions: [{ credit, advantage }] });
    const group = { groupId: 'g', input: null, advantage: null, samples: [sample(1, 0.5), sample(0, -0.5)] } as unknown as Parameters<typeof formulaText>[1];
    const adv = { calls: 2, mean: 0.5, std: 0.7071, batchStd: 0.6, variant: null, divisor: null, matchesStored: null, zeroVariance: false };
    const group_ = formulaText({ ...adv, scaleRewards: 'group' }, group);
    assert.equal(group_.short, 'A = (credit − 0.500) / (0.707 + ε)');
    const drGrpo = formulaText({ ...adv, scaleRewards: 'none', variant: 'dr_grpo', matchesStored: true }, group);
    assert.equal(drGrpo.short, 'A = credit − 0.500');
    assert.match(drGrpo.full, /variant dr_grpo/);
    assert.match(drGrpo.full, /not divided by any std \(Dr\.GRPO\)/);
    assert.match(drGrpo.full, /credit 1 → stored A \+0\.500/);
    assert.equal(formulaText({ ...adv, scaleRewards: 'batch' }, group).short, 'A = (credit − 0.500) / (0.600 + ε)');
    assert.match(formulaText({ ...adv, scaleRewards: null }, group).full, /did not record how/);
    assert.match(formulaText({ ...adv, scaleRewards: 'group', matchesStored: false }, group).full, /do NOT follow/);
    // A run that grouped by task and role (training.groupBy task-role): the numbers per role.
    const byRole = formulaText(
      {
        ...adv,
        scaleRewards: 'group',
        matchesStored: true,
        byRole: [
          { role: 'writer', calls: 2, mean: 0.5, std: 0.7071, divisor: 0.7072, matchesStored: true, zeroVariance: false },
          { role: 'rewriter', calls: 1, mean: 1, std: 0, divisor: 1e-4, matchesStored: true, zeroVariance: true },
        ],
      },
      group,
    );
    assert.equal(byRole.short, 'writer: A = (credit − 0.500) / (0.707 + ε) · rewriter: A = (credit − 1) / (0 + ε)');
    assert.match(byRole.full, /grouped by task and role \(training\.groupBy: task-role\)/);
    assert.match(byRole.full, / {2}rewriter: 1 call, mean 1, std 0: .* \(all equal: no signal\)/);
    assert.match(byRole.full, /The stored advantages follow from these numbers/);
  });

  it("finds an agent's source from its spec and the line defining it", () => {
    assert.deepEqual(agentSource('samples/calc/agent.ts#calcAgent'), { filepath: 'samples/calc/agent.ts', symbol: 'calcAgent' });
    assert.deepEqual(agentSource('samples.calc_py.agent:solve'), { filepath: 'samples/calc_py/agent.py', symbol: 'solve' });
    assert.equal(agentSource(null), null);
    const ts = "import x from 'y';\n\nexport const calcAgent = rollout(async (task, llm) => {\n});\n";
    assert.equal(definitionLine(ts, 'calcAgent'), 2);
    assert.equal(definitionLine('import os\n\n@rollout\nasync def solve(task, llm):\n  pass\n', 'solve'), 3);
    assert.equal(definitionLine('nothing here', 'solve'), 0);
  });
});

describe('panel data handlers against a real daemon', () => {
  let daemon: Daemon;
  before(async () => {
    daemon = await startDaemon();
  });
  after(async () => {
    await daemon?.close();
  });

  it('groups the samples of a task the algorithm has not trained on yet by their metadata', async () => {
    const ids: string[] = [];
    for (let k = 0; k < 3; k++) {
      const { rollout, attempt } = await daemon.client.startRollout(
        { input: { q: 'x' }, agent: 'a.ts#agent', metadata: { runId: 'r9', step: 0, taskId: 't1', sample: k } },
        'w',
      );
      await daemon.client.addSpans([{ rolloutId: rollout.id, attemptId: attempt.id, name: SPAN.reward, startTime: 1, attributes: { [AGL.rewardValue]: k } }]);
      await daemon.client.finishAttempt(attempt.id, { status: 'succeeded' });
      ids.push(rollout.id);
    }
    await daemon.client.startRollout({ input: { q: 'y' }, agent: 'a.ts#agent', metadata: { runId: 'r9', step: 0, taskId: 't2' } }, 'w');
    const handlers = trajectoryHandlers(daemon.client);
    const page = (await handlers.get('trajectory/getGroups')!({ rolloutId: ids[1] })) as GroupPage;
    assert.equal(page.groups.length, 1);
    assert.deepEqual(new Set(page.groups[0].samples.map((s) => s.rollout.id)), new Set(ids));
    assert.deepEqual(page.groups[0].samples.map((s) => s.reward).sort(), [0, 1, 2]);

    const rows = (await handlers.get('trajectory/listRollouts')!({ status: ['succeeded'] })) as RolloutPage;
    assert.equal(rows.items.length, 3);
    assert.deepEqual(rows.agents, ['a.ts#agent']);
  });

  it('tells an open viewer which rollouts the daemon says changed (RolloutsRefresh), all of them on hello', async () => {
    const told: Array<{ rolloutIds: string[]; all?: boolean }> = [];
    const refresh = new RolloutsRefresh((changed) => told.push(changed));
    const stream = new DaemonEventStream({ url: daemon.url, token: daemon.token, onEvent: (e) => refresh.onEvent(e) });
    const until = async (what: string, found: () => boolean) => {
      for (const deadline = Date.now() + 10_000; !found(); await new Promise((r) => setTimeout(r, 20))) assert.ok(Date.now() < deadline, what);
    };
    try {
      await until('hello: anything may have changed', () => told.some((t) => t.all));
      const added = await daemon.client.enqueueRollout({ input: { q: 'new' }, agent: 'a.ts#agent' });
      await until('the new rollout is told', () => told.some((t) => t.rolloutIds.includes(added.id)));
    } finally {
      stream.close();
      refresh.stop();
    }
  });

  it('answers an unknown rollout or run with an error naming it', async () => {
    const handlers = trajectoryHandlers(daemon.client);
    await assert.rejects(handlers.get('trajectory/getRollout')!({ rolloutId: 'ro-nope' }), /rollout 'ro-nope' does not exist/);
    await assert.rejects(handlers.get('trajectory/getGroups')!({ rolloutId: 'ro-nope' }), /rollout 'ro-nope' does not exist/);
  });
});
