/**
 * One agent, one identity, one number, whichever folder the editor opened: two real `agl lsp` processes over
 * stdio, one opened on the repository's `samples/` folder and one on the repository root, against one real
 * daemon (`agl serve`) whose store holds the calc agent's rollouts and a training run, some recorded under the
 * stable id and some under the older form `calc/agent.ts#calcAgent` (what a store written from inside
 * `samples/` holds). Both see the same id, the same lens title and the same tooltip, and the number is the run's
 * held-out score.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
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
import { agentAt } from '../../protocol/lsp.js';
import { METRICS } from '../../protocol/metrics.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import type { AglClient } from '../../client/client.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemon-process.js';

const ROOT = process.cwd();
const AGENT_FILE = join(ROOT, 'samples', 'calc', 'agent.ts');
const STABLE = 'samples/calc/agent.ts#calcAgent';
const OLD_FORM = 'calc/agent.ts#calcAgent';

/** A finished train rollout of `agent` with one reward span. */
async function addRollout(client: AglClient, agent: string, reward: number): Promise<void> {
  const { rollout, attempt } = await client.startRollout({ input: { question: 'x' }, agent, mode: 'train' });
  await client.addSpans([
    { rolloutId: rollout.id, attemptId: attempt.id, name: SPAN.reward, startTime: Date.now(), endTime: Date.now(), attributes: { [AGL.rewardValue]: reward } },
  ]);
  await client.finishAttempt(attempt.id, { status: 'succeeded' });
}

interface Lsp {
  conn: ProtocolConnection;
  stop(): void;
}

/** `agl lsp` opened on `folder`, told where the daemon is, with the calc agent's file open. */
async function startLsp(folder: string, daemon: DaemonProcess): Promise<Lsp> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'daemon', 'cli.ts'), 'lsp', '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const conn = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.listen();
  const uri = pathToFileURL(folder).href;
  await conn.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: 'ws' }],
    capabilities: {},
    initializationOptions: { daemon: { url: daemon.url, token: daemon.token } },
  });
  await conn.sendNotification(InitializedNotification.type, {});
  await conn.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri: pathToFileURL(AGENT_FILE).href, languageId: 'typescript', version: 1, text: readFileSync(AGENT_FILE, 'utf8') },
  });
  return {
    conn,
    stop: () => {
      conn.dispose();
      child.kill();
    },
  };
}

/** The summary lens once its stats are read (the first answer may still say "reward …"). */
async function summaryLens(lsp: Lsp): Promise<CodeLens> {
  for (const until = Date.now() + 15_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const lenses = (await lsp.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri: pathToFileURL(AGENT_FILE).href } })) as CodeLens[];
    const summary = lenses[0]!;
    if (summary.command?.title !== 'reward …' || Date.now() > until) return summary;
  }
}

describe('agl lsp: the same agent and the same number with samples/ or the repository root open', () => {
  let daemon: DaemonProcess;
  let runId: string;
  const servers: Lsp[] = [];

  before(async () => {
    daemon = await startDaemonProcess();
    for (const r of [1, 0, 1]) await addRollout(daemon.client, STABLE, r);
    for (const r of [1, 1]) await addRollout(daemon.client, OLD_FORM, r); // a store written from inside samples/
    const run = await daemon.client.createTrainingRun({ agent: OLD_FORM, totalSteps: 167, config: {} });
    runId = run.id;
    await daemon.client.addMetrics(
      [
        { step: 0, name: METRICS.valReward, value: 0.29 },
        { step: 40, name: METRICS.valReward, value: 0.8 },
        { step: 85, name: METRICS.valReward, value: 0.95 },
        { step: 85, name: METRICS.rewardMean, value: 0.781 },
      ].map((m) => ({ runId: run.id, ...m })),
    );
  });
  after(async () => {
    for (const s of servers) s.stop();
    await daemon?.stop();
  });

  it("finds the agent under one id, and shows the same lens title and tooltip: the run's held-out score", async () => {
    const seen: Array<{ id: string | undefined; title: string | undefined; tooltip: string | undefined; args: unknown }> = [];
    for (const folder of [join(ROOT, 'samples'), ROOT]) {
      const lsp = await startLsp(folder, daemon);
      servers.push(lsp);
      const { agent } = await lsp.conn.sendRequest(agentAt, { uri: pathToFileURL(AGENT_FILE).href, position: { line: 13, character: 0 } }); // the export of calcAgent
      const lens = await summaryLens(lsp);
      seen.push({ id: agent?.id, title: lens.command?.title, tooltip: lens.command?.tooltip, args: lens.command?.arguments });
    }
    assert.equal(seen[0]!.id, STABLE);
    assert.equal(
      seen[0]!.title,
      'held-out reward 0.95 (from 0.29 at step 0) · 5 rollouts · reward: its own',
      'rollouts and the run under the older form of the id count',
    );
    assert.equal(
      seen[0]!.tooltip,
      `Held-out reward 0.95: mean final reward on the validation tasks, answered greedily (temperature 0), at step 85 of training run ${runId} (0.29 on the same tasks at step 0, before training), ` +
        `the agent's newest run with a validation; 5 rollouts ended. Trains on its own reward (the one its code emits or returns): training run ${runId} had no judge. Click to list this agent's rollouts.`,
    );
    assert.deepEqual(seen[1], seen[0], 'the repository root open: the same id, title, tooltip and Trajectories filter');
  });
});
