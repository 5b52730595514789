/**
 * The CodeLens provider: the lens titles from reward stats, and the language server end to end — the real
 * `agl lsp` process over stdio (an LSP client connection from vscode-languageserver-protocol), reading a
 * real daemon (`agl serve`) whose store holds rollouts with reward spans, refreshing the lenses when new
 * results land, and answering the custom requests (list agents, agent at a position, mark as agent).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
  CodeLensRefreshRequest,
  CodeLensRequest,
  createProtocolConnection,
  DidOpenTextDocumentNotification,
  InitializedNotification,
  InitializeRequest,
  StreamMessageReader,
  StreamMessageWriter,
  type CodeLens,
  type ProtocolConnection,
} from 'vscode-languageserver-protocol/node';
import { formatStats, lensesFor, statsTooltip } from '../../daemon/lsp/codelens.js';
import { AgentStatsSource, type StoreReader } from '../../daemon/lsp/stats.js';
import { describeHeadline, type HeadlineFacts } from '../../protocol/agent-headline.js';
import { agentAt, daemonChanged, listAgents, listPrompts, markAsAgent, promptAt, type AgentInfo } from '../../protocol/lsp.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import type { AglClient } from '../../client/client.js';
import { startDaemonProcess, tempDataDir, type DaemonProcess } from '../helpers/daemon-process.js';

const NO_FACTS: HeadlineFacts = { rollouts: 0, rolloutsCapped: false, heldOut: null, recent: null };

test("headline: the held-out score of the newest validated run, else its training runs' rollouts' mean, else any rollouts'; tooltip says which", () => {
  const held = describeHeadline({
    ...NO_FACTS,
    rollouts: 500,
    rolloutsCapped: true,
    heldOut: { runId: 'run_1', step: 85, value: 0.95, first: { step: 0, value: 0.29 } },
    recent: { mode: 'train', count: 16, mean: 1 },
  });
  assert.equal(held.value, 0.95);
  assert.equal(held.text, 'held-out reward 0.95 (from 0.29 at step 0)');
  assert.equal(
    held.tooltip,
    'Held-out reward 0.95: mean final reward on the validation tasks at step 85 of training run run_1 (0.29 on the same tasks at step 0, before training), ' +
      "the agent's newest run with a validation; 500+ rollouts ended.",
  );
  const once = describeHeadline({ ...NO_FACTS, rollouts: 3, heldOut: { runId: 'r', step: 0, value: 0.5, first: { step: 0, value: 0.5 } } });
  assert.equal(once.text, 'held-out reward 0.50');
  const train = describeHeadline({ ...NO_FACTS, rollouts: 10460, recent: { mode: 'train', count: 16, mean: 0.781 } });
  assert.equal(train.text, 'train reward 0.78');
  assert.equal(
    train.tooltip,
    "Train reward 0.78: mean final reward of the agent's 16 latest rollouts of its training runs (prompt optimizations' and evaluations' rollouts do not count; " +
      'no training run of it has a validation yet); 10,460 rollouts ended.',
  );
  const any = describeHeadline({ ...NO_FACTS, rollouts: 1, recent: { mode: 'any', count: 1, mean: 1 } });
  assert.equal(any.text, 'reward 1.00');
  assert.match(any.tooltip, /of the agent's latest rollout \(/);
  assert.equal(describeHeadline(NO_FACTS).text, 'no rollouts yet');
  assert.equal(describeHeadline({ ...NO_FACTS, rollouts: 2 }).text, 'no reward yet');
});

test('lens titles: no rollouts yet, the headline with the count, running, daemon down; the tooltip explains the number', () => {
  const stats = (facts: Partial<HeadlineFacts>, active = 0) => {
    const headline = describeHeadline({ ...NO_FACTS, ...facts });
    return {
      agent: 'a.ts#x',
      rollouts: headline.rollouts,
      rolloutsCapped: headline.rolloutsCapped,
      headline,
      active,
      optimizations: [],
      evals: [],
      promoted: [],
      reward: null,
    };
  };
  const base = stats({});
  assert.equal(formatStats(base, true), 'no rollouts yet');
  assert.equal(formatStats(stats({ rollouts: 128, recent: { mode: 'train', count: 16, mean: 0.62 } }), true), 'train reward 0.62 · 128 rollouts');
  assert.equal(formatStats(stats({ rollouts: 9, recent: { mode: 'any', count: 9, mean: 0.2 } }, 3), true), 'reward 0.20 · 9 rollouts · 3 running');
  const trained = stats({ rollouts: 500, rolloutsCapped: true, heldOut: { runId: 'run_9', step: 12, value: 1, first: { step: 0, value: 0.25 } } });
  assert.equal(formatStats(trained, true), 'held-out reward 1.00 (from 0.25 at step 0) · 500+ rollouts');
  assert.equal(formatStats(stats({ rollouts: 2 }), true), 'no reward yet · 2 rollouts');
  assert.equal(formatStats(undefined, false), 'Agent Lightning daemon not running');
  assert.equal(formatStats(undefined, false, true), 'Agent Lightning daemon starting…');
  // Which reward it trains on (#41 item 5): its newest training run's, or none when its rollouts carry none.
  const judged = { ...trained, reward: { source: { kind: 'judge' as const, model: 'gpt-4.1-mini' }, runId: 'run_9' } };
  assert.equal(formatStats(judged, true), 'held-out reward 1.00 (from 0.25 at step 0) · 500+ rollouts · reward: judge');
  assert.match(statsTooltip(judged, true), /Trains on an LLM judge's score \(gpt-4\.1-mini\).*training run run_9's judge: section\. Click to list/);
  const both = { ...trained, reward: { source: { kind: 'both' as const, model: 'j', weight: 0.5 }, runId: 'run_9' } };
  assert.equal(formatStats(both, true), 'held-out reward 1.00 (from 0.25 at step 0) · 500+ rollouts · reward: both (judge × 0.5)');
  assert.equal(
    formatStats({ ...trained, reward: { source: { kind: 'own' as const }, runId: 'run_9' } }, true)
      .split(' · ')
      .at(-1),
    'reward: its own',
  );
  const none = { ...stats({ rollouts: 2 }), reward: { source: { kind: 'none' as const }, runId: null } };
  assert.equal(formatStats(none, true), 'no reward yet · 2 rollouts · reward: none');
  assert.match(statsTooltip(none, true), /Train offers an LLM judge/);
  const agent: AgentInfo = {
    id: 'a.ts#x',
    name: 'x',
    language: 'typescript',
    uri: 'file:///w/a.ts',
    range: { start: { line: 3, character: 0 }, end: { line: 9, character: 2 } },
  };
  const lenses = lensesFor(agent, base, true);
  assert.deepEqual(
    lenses.map((l) => l.command?.title),
    ['no rollouts yet', '▶ Run', '⚡ Train', 'Trajectories'],
  );
  assert.deepEqual(
    lenses.map((l) => l.command?.command),
    ['agentLightning.openTrajectoryViewer', 'agentLightning.runRollout', 'agentLightning.train', 'agentLightning.openTrajectoryViewer'],
  );
  assert.deepEqual(lenses[1]!.command?.arguments, ['a.ts#x', 'file:///w/a.ts']);
  assert.equal(lenses[0]!.range.start.line, 3);
  assert.equal(lensesFor(agent, trained, true)[0]!.command?.tooltip, `${trained.headline.tooltip} Click to list this agent's rollouts.`);
  assert.equal(lensesFor(agent, undefined, false)[0]!.command?.command, 'agentLightning.startDaemon');
});

// ---- the language server process against a real daemon --------------------------------------------------

const AGENT_TS = `import { rollout } from 'agent-lightning-vscode/sdk';

export const calcAgent = rollout(async (task: { q: string }, llm) => 1);

export async function helper(task: unknown) {
  return 2;
}
`;
/** An agent reading two prompts: one seeded with a text, one with a file. */
const DESK_TS = `import { rollout, type LLM } from 'agent-lightning-vscode/sdk';

export const deskAgent = rollout(async (task: { q: string }, llm: LLM) => {
  const system = llm.prompt('system', 'Answer from the order record.');
  const format = llm.prompt('format', { file: 'prompts/format.md' });
  return system.length + format.length > 0 ? 1 : 0;
});
`;
const DESK = 'agents/desk.ts#deskAgent';
const AGENT_PY = `from agentlightning import rollout

@rollout
def py_agent(task, llm):
    return 1.0
`;

let daemon: DaemonProcess;
let lsp: ProtocolConnection;
let workspace: string;
let stopLsp: () => void;
const refreshes: number[] = [];

/** The training run whose rollouts addRollout adds (the lens's train reward counts a training run's rollouts only). */
let trainRunId: string;

/** A finished train rollout of `agent`'s training run with one reward span. */
async function addRollout(client: AglClient, agent: string, reward: number): Promise<void> {
  const { rollout, attempt } = await client.startRollout({ input: { q: 'x' }, agent, mode: 'train', metadata: { runId: trainRunId, step: 1 } });
  await client.addSpans([
    { rolloutId: rollout.id, attemptId: attempt.id, name: SPAN.reward, startTime: Date.now(), endTime: Date.now(), attributes: { [AGL.rewardValue]: reward } },
  ]);
  await client.finishAttempt(attempt.id, { status: 'succeeded' });
}

async function lensTitles(uri: string): Promise<string[]> {
  const lenses = (await lsp.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) as CodeLens[];
  return lenses.map((l) => l.command?.title ?? '');
}

before(async () => {
  workspace = tempDataDir('lsp-ws');
  mkdirSync(join(workspace, 'agents'), { recursive: true });
  writeFileSync(join(workspace, 'package.json'), '{"name":"lsp-ws","private":true}'); // the project root: ids are relative to it
  writeFileSync(join(workspace, 'agents', 'calc.ts'), AGENT_TS);
  writeFileSync(join(workspace, 'agents', 'agent.py'), AGENT_PY);
  writeFileSync(join(workspace, 'agents', 'desk.ts'), DESK_TS);
  mkdirSync(join(workspace, 'node_modules', 'x'), { recursive: true });
  writeFileSync(join(workspace, 'node_modules', 'x', 'index.ts'), AGENT_TS); // never scanned
  daemon = await startDaemonProcess(tempDataDir('lsp-daemon'));
  trainRunId = (await daemon.client.createTrainingRun({ agent: 'agents/calc.ts#calcAgent', config: {}, totalSteps: 2 })).id;
  for (const r of [0, 0, 1, 1]) await addRollout(daemon.client, 'agents/calc.ts#calcAgent', r); // oldest first

  const child = spawn(process.execPath, ['--import', 'tsx', join(process.cwd(), 'daemon', 'cli.ts'), 'lsp', '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
  stopLsp = () => child.kill();
  lsp = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  lsp.onRequest(CodeLensRefreshRequest.type, () => {
    refreshes.push(Date.now());
  });
  lsp.listen();
  await lsp.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: pathToFileURL(workspace).href,
    workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: 'ws' }],
    capabilities: { workspace: { codeLens: { refreshSupport: true } } },
    initializationOptions: { daemon: { url: daemon.url, token: daemon.token } },
  });
  await lsp.sendNotification(InitializedNotification.type, {});
  for (const [file, languageId, text] of [
    ['agents/calc.ts', 'typescript', AGENT_TS],
    ['agents/agent.py', 'python', AGENT_PY],
    ['agents/desk.ts', 'typescript', DESK_TS],
  ] as const) {
    await lsp.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri: pathToFileURL(join(workspace, file)).href, languageId, version: 1, text },
    });
  }
});

after(async () => {
  lsp?.dispose();
  stopLsp?.();
  await daemon?.stop();
});

test("agl lsp: lenses carry the store's reward stats; Python agents get lenses too", async () => {
  const tsUri = pathToFileURL(join(workspace, 'agents', 'calc.ts')).href;
  assert.deepEqual(await lensTitles(tsUri), ['train reward 0.50 · 4 rollouts · reward: its own', '▶ Run', '⚡ Train', 'Trajectories']);
  const pyUri = pathToFileURL(join(workspace, 'agents', 'agent.py')).href;
  assert.deepEqual(await lensTitles(pyUri), ['no rollouts yet', '▶ Run', '⚡ Train', 'Trajectories']);
});

test('agl lsp: new results make the server ask for a lens refresh, and the lens shows them', async () => {
  const tsUri = pathToFileURL(join(workspace, 'agents', 'calc.ts')).href;
  await lensTitles(tsUri);
  let seen = refreshes.length;
  for (const r of [1, 1]) await addRollout(daemon.client, 'agents/calc.ts#calcAgent', r);
  // The mean of the 6 train rollouts' rewards (0 0 1 1 1 1) is 4/6. The server may refresh on the way
  // (a rollout running); each refresh is followed by a lens request, as the editor does, until the last state.
  const expected = 'train reward 0.67 · 6 rollouts · reward: its own';
  const deadline = Date.now() + 20_000;
  let title = '';
  while (title !== expected && Date.now() < deadline) {
    while (refreshes.length === seen && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(refreshes.length > seen, `workspace/codeLens/refresh was requested (lens still '${title}')`);
    seen = refreshes.length;
    title = (await lensTitles(tsUri))[0]!;
  }
  assert.equal(title, expected);
});

test('stats: a read that started earlier but answers later does not replace a newer one', async () => {
  // The lens said "25 rollouts · 1 running" for good once: a poll's read from while the rollout ran came
  // back after the read that saw it end, and nothing in the store changed afterwards to read again.
  const agent = 'agents/late.ts#lateAgent';
  const { attempt } = await daemon.client.startRollout({ input: { q: 'x' }, agent, mode: 'train' });
  let hold: Promise<void> | null = null;
  let release = () => {};
  let heldReads = 0;
  const reader: StoreReader = {
    queryRollouts: async (q) => {
      const held = hold;
      const page = await daemon.client.queryRollouts(q);
      if (held) {
        heldReads++;
        await held;
      }
      return page;
    },
    agentHeadline: async (a) => {
      const held = hold;
      const headline = await daemon.client.agentHeadline(a);
      if (held) {
        heldReads++;
        await held;
      }
      return headline;
    },
    listTrainingRuns: (a, kind) => daemon.client.listTrainingRuns(a, kind),
    listPromotedPrompts: (a) => daemon.client.listPromotedPrompts(a),
  };
  const source = new AgentStatsSource(reader);
  hold = new Promise((r) => {
    release = r;
  });
  const early = source.fetch(agent); // reads "1 running", answers late
  while (heldReads < 2) await new Promise((r) => setTimeout(r, 10));
  hold = null;
  await daemon.client.finishAttempt(attempt.id, { status: 'succeeded' });
  const fresh = await source.fetch(agent);
  assert.equal(fresh.active, 0);
  assert.equal(fresh.rollouts, 1);
  release();
  assert.deepEqual(await early, fresh, 'the late answer returns the newest stats');
  assert.deepEqual(source.cached(agent), fresh, 'and leaves them in the cache');
});

test('agl lsp: daemon down and back: the lens says so, then shows stats again', async () => {
  const tsUri = pathToFileURL(join(workspace, 'agents', 'calc.ts')).href;
  await lsp.sendNotification(daemonChanged, { daemon: null });
  assert.equal((await lensTitles(tsUri))[0], 'Agent Lightning daemon not running');
  await lsp.sendNotification(daemonChanged, { daemon: null, starting: true });
  assert.equal((await lensTitles(tsUri))[0], 'Agent Lightning daemon starting…');
  await lsp.sendNotification(daemonChanged, { daemon: { url: daemon.url, token: daemon.token } });
  assert.match((await lensTitles(tsUri))[0]!, /^train reward 0\.67/);
});

/** Lens titles of `uri` once they show `expected` (the server asks for a refresh as the store changes, the editor re-reads). */
async function lensesBecome(uri: string, expected: string[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  let titles = await lensTitles(uri);
  while (JSON.stringify(titles) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    titles = await lensTitles(uri);
  }
  assert.deepEqual(titles, expected);
}

test("agl lsp: a lens above each llm.prompt call: Optimize, then what the agent's optimization of it reached, live; the agent's lens says it too", async () => {
  const uri = pathToFileURL(join(workspace, 'agents', 'desk.ts')).href;
  // The agent's lenses, with its results' lines between its headline and its commands.
  const agentLenses = (...lines: string[]) => ['no rollouts yet', ...lines, '▶ Run', '⚡ Train', 'Trajectories'];
  await lensesBecome(uri, [...agentLenses(), '✦ Optimize "system"', '✦ Optimize "format"']);
  const lenses = (await lsp.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) as CodeLens[];
  assert.equal(lenses[4]!.range.start.line, 3, 'on the line of the call');
  assert.deepEqual(lenses[4]!.command?.arguments?.[0]?.seed, { text: 'Answer from the order record.' });
  assert.deepEqual(lenses[5]!.command?.arguments?.[0]?.seed, { file: 'prompts/format.md' });

  // An optimization of "system" runs (what agl optimize records): its progress, then its best against the seed.
  const run = await daemon.client.createTrainingRun({ agent: DESK, kind: 'optimize', totalSteps: 120, config: { prompts: ['system'] } });
  const scores = (best: number) => ({ seed: { val: 0.31, test: null }, best: { val: best, test: null } });
  await daemon.client.updateTrainingRun(run.id, { step: 40, summary: { rollouts: 40, budget: 120, scores: scores(0.5) } });
  await lensesBecome(uri, [
    ...agentLenses('prompt system: optimizing 40/120'),
    '✦ Optimize "system" · optimizing: 40/120 rollouts · best val 0.50 (seed 0.31)',
    'Optimization',
    '✦ Optimize "format"',
  ]);
  await daemon.client.updateTrainingRun(run.id, { status: 'succeeded', step: 118, summary: { rollouts: 118, budget: 120, scores: scores(0.93) } });
  const done = ['✦ Optimize "system" · best val 0.93 (seed 0.31)', 'Optimization', '✦ Optimize "format"'];
  await lensesBecome(uri, [...agentLenses('prompt system: best val 0.93, not promoted'), ...done]);
  const all = (await lsp.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) as CodeLens[];
  assert.match(all[1]!.command!.tooltip!, /still reads its seed text of "system" \(promote: agl optimize promote run-\S+, or Apply in the view\)/);
  assert.deepEqual([all[1]!.command?.command, all[1]!.command?.arguments], ['agentLightning.openOptimizationView', [run.id]]);
  assert.deepEqual([all[6]!.command?.command, all[6]!.command?.arguments], ['agentLightning.openOptimizationView', [run.id]]);

  // Its candidate #1 promoted: the agent's lens says which.
  const lineage = { parents: [], origin: 'seed' as const, component: null, reflection: null, minibatch: null };
  const seed = await daemon.client.addPromptCandidate({ id: `pc-${run.id}-0`, runId: run.id, ordinal: 0, prompts: { system: 'Answer.' }, ...lineage });
  const best = await daemon.client.addPromptCandidate({
    ...{ id: `pc-${run.id}-1`, runId: run.id, ordinal: 1, prompts: { system: 'Answer from the order record, with its id.' } },
    ...{ parents: [seed.id], origin: 'reflection' as const, component: 'system', reflection: 'it left out the id', minibatch: ['t1'] },
  });
  await daemon.client.promotePrompt({ agent: DESK, name: 'system', text: best.prompts.system!, candidateId: best.id, by: 'test' });
  await lensesBecome(uri, [...agentLenses('prompt system: best val 0.93, promoted #1'), ...done]);
  await daemon.client.clearPromotedPrompt({ agent: DESK, name: 'system', by: 'test' });
  await lensesBecome(uri, [...agentLenses('prompt system: best val 0.93, not promoted'), ...done]);
});

test("agl lsp: an eval has its own lens line, and its rollouts are not in the agent's reward nor its count", async () => {
  const agent = 'agents/calc.ts#calcAgent';
  const uri = pathToFileURL(join(workspace, 'agents', 'calc.ts')).href;
  const before = (await lensTitles(uri))[0]!;
  const evaluation = await daemon.client.createTrainingRun({
    agent,
    kind: 'eval',
    totalSteps: 2,
    config: {
      agent,
      llm: { upstream: { model: 'gpt-4o-mini', url: 'http://127.0.0.1:9/v1', keyEnv: 'K' }, model: null },
      data: { file: '/w/calc.eval.jsonl' },
    },
  });
  // Its rollouts scored 1 (an eval's mode is test): the train reward and the count stay the agent's own.
  for (const taskId of ['t1', 't2']) {
    const { rollout, attempt } = await daemon.client.startRollout({
      input: { q: taskId },
      agent,
      mode: 'test',
      metadata: { runId: evaluation.id, taskId, sample: 0 },
    });
    await daemon.client.addSpans([
      { rolloutId: rollout.id, attemptId: attempt.id, name: SPAN.reward, startTime: Date.now(), endTime: Date.now(), attributes: { [AGL.rewardValue]: 1 } },
    ]);
    await daemon.client.finishAttempt(attempt.id, { status: 'succeeded' });
  }
  const summary = { mean: 0.94, tasks: [{ id: 't1' }, { id: 't2' }], interval: null, passAtK: 1, repeat: 1, elapsedMs: 5 };
  await daemon.client.updateTrainingRun(evaluation.id, { status: 'succeeded', step: 2, summary });
  const when = new Date(evaluation.createdAt).toLocaleDateString('en-US', { month: 'short', day: 'numeric' });
  await lensesBecome(uri, [before, `eval calc.eval 0.94 (${when})`, '▶ Run', '⚡ Train', 'Trajectories']);
  const lens = ((await lsp.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) as CodeLens[])[1]!;
  assert.match(lens.command!.tooltip!, new RegExp(`Eval run ${evaluation.id} .*mean score 0.94 of gpt-4o-mini on 2 tasks of calc.eval`));
  assert.match(
    ((await lsp.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) as CodeLens[])[0]!.command!.tooltip!,
    /and 2 rollouts of its evals and optimizations, not counted here/,
  );
});

test("agl lsp: lists the workspace's prompts with the agent reading each, and finds the one at a position", async () => {
  const { prompts } = await lsp.sendRequest(listPrompts, {});
  assert.deepEqual(
    prompts.map((p) => [p.name, p.agent]),
    [
      ['system', DESK],
      ['format', DESK],
    ],
  );
  const uri = pathToFileURL(join(workspace, 'agents', 'desk.ts')).href;
  assert.equal((await lsp.sendRequest(promptAt, { uri, position: { line: 4, character: 30 } })).prompt?.name, 'format');
  assert.equal((await lsp.sendRequest(promptAt, { uri, position: { line: 3, character: 0 } })).prompt?.name, 'system', 'anywhere on its line');
  assert.equal((await lsp.sendRequest(promptAt, { uri, position: { line: 5, character: 2 } })).prompt, null);
});

test("agl lsp: lists the workspace's agents (skipping node_modules), finds the one at a position, marks a function", async () => {
  const { agents } = await lsp.sendRequest(listAgents, {});
  assert.deepEqual(agents.map((a) => a.id).sort(), ['agents/agent.py:py_agent', 'agents/calc.ts#calcAgent', DESK]);
  const tsUri = pathToFileURL(join(workspace, 'agents', 'calc.ts')).href;
  assert.equal((await lsp.sendRequest(agentAt, { uri: tsUri, position: { line: 2, character: 10 } })).agent?.name, 'calcAgent');
  assert.equal((await lsp.sendRequest(agentAt, { uri: tsUri, position: { line: 5, character: 2 } })).agent, null);
  const marked = await lsp.sendRequest(markAsAgent, { uri: tsUri, position: { line: 5, character: 2 } });
  assert.ok('edits' in marked, JSON.stringify(marked));
  assert.equal(marked.name, 'helper');
  assert.deepEqual(
    marked.edits.map((e) => e.newText),
    ['export const helper = rollout(async function helper(task: unknown) {\n  return 2;\n});'],
  );
  const again = await lsp.sendRequest(markAsAgent, { uri: tsUri, position: { line: 2, character: 3 } });
  assert.ok('error' in again && /already an agent/.test(again.error));
});

test("agl lsp: the lens says which reward the agent trains on, from its newest training run's judge: section", async () => {
  const uri = pathToFileURL(join(workspace, 'agents', 'desk.ts')).href;
  const line = 'prompt system: best val 0.93, not promoted'; // its optimization's, from the test before
  const rest = [line, '▶ Run', '⚡ Train', 'Trajectories', '✦ Optimize "system" · best val 0.93 (seed 0.31)', 'Optimization', '✦ Optimize "format"'];
  await lensesBecome(uri, ['no rollouts yet', ...rest]);
  const judge = { url: 'http://127.0.0.1:9/v1', model: 'judge-m', rubric: 'Right answers score 1.', weight: null };
  const train = async (config: Record<string, unknown>) => {
    const run = await daemon.client.createTrainingRun({ agent: DESK, kind: 'train', totalSteps: 2, config });
    await daemon.client.updateTrainingRun(run.id, { step: 1 });
  };
  await train({ judge });
  await lensesBecome(uri, ['no rollouts yet · reward: judge', ...rest]);
  await train({ judge: { ...judge, weight: 0.5 } });
  await lensesBecome(uri, ['no rollouts yet · reward: both (judge × 0.5)', ...rest]);
  await train({ judge: null });
  await lensesBecome(uri, ['no rollouts yet · reward: its own', ...rest]);
});

test('stats: an agent whose rollouts carry no reward and which never trained: reward none', async () => {
  const agent = 'agents/quiet.ts#quietAgent';
  const { attempt } = await daemon.client.startRollout({ input: { q: 'x' }, agent, mode: 'test' });
  await daemon.client.finishAttempt(attempt.id, { status: 'succeeded' });
  const s = await new AgentStatsSource(daemon.client).fetch(agent);
  assert.deepEqual(s.reward, { source: { kind: 'none' }, runId: null });
  assert.equal(formatStats(s, true), 'no reward yet · 1 rollout · reward: none');
});
