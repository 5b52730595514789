/**
 * The ids `agl rollout`, `agl train` and `agl runner --agent` record are the stable ones (protocol/agent-id.ts):
 * the agent file's path from the project root (here the repository's), whatever the working directory and
 * however the path was typed (from a sub-folder, with ./, absolute); and a runner started in a sub-folder
 * finds the file such an id names. Real processes against a real daemon / store.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { saveTinyPolicy, writeToyTasks } from '../algorithm/cli-helpers.js';
import { runCli, startDaemonProcess, tempDataDir, type DaemonProcess } from '../helpers/daemon-process.js';

const ROOT = process.cwd();
const FIXTURES = join(ROOT, 'test', 'runner', 'fixtures');
const THROWING = 'test/runner/fixtures/agents.ts#throwingAgent';

describe('stable agent ids recorded by the CLI', () => {
  let daemon: DaemonProcess;
  before(async () => {
    daemon = await startDaemonProcess();
  });
  after(async () => {
    await daemon?.stop();
  });

  it('agl rollout records the same id from the repository root, a sub-folder, with ./ and with an absolute path', async () => {
    const runs: Array<[string, string]> = [
      [THROWING, ROOT],
      ['agents.ts#throwingAgent', FIXTURES],
      ['./fixtures/agents.ts#throwingAgent', join(ROOT, 'test', 'runner')],
      [`${join(FIXTURES, 'agents.ts')}#throwingAgent`, join(ROOT, 'samples')],
    ];
    for (const [spec, cwd] of runs) {
      const res = await runCli(['rollout', spec, '--json', '--data-dir', daemon.dataDir], {}, cwd);
      assert.equal(res.code, 1, res.stderr); // the agent throws on purpose: the rollout ran, and failed
      const out = JSON.parse(res.stdout) as { rollout: { agent: string; status: string } };
      assert.equal(out.rollout.agent, THROWING, `${spec} from ${cwd}`);
      assert.equal(out.rollout.status, 'failed');
    }
  });

  it('agl runner --agent, started in a sub-folder, claims rollouts of the stable id and finds their file', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'daemon', 'cli.ts'), 'runner', '--workers', '1', '--agent', 'agents.ts#throwingAgent', '--data-dir', daemon.dataDir],
      { cwd: FIXTURES, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const [queued] = await daemon.client.enqueueRollouts([{ input: { question: 'q' }, agent: THROWING }]);
      let done: { status: string; id: string }[] = [];
      for (let i = 0; i < 30 && done.length === 0; i++) done = await daemon.client.waitForRollouts([queued!.id], 2000);
      assert.equal(done[0]?.status, 'failed', stderr);
      const attempts = await daemon.client.getAttempts(queued!.id);
      assert.match(attempts[0]?.error?.message ?? '', /the agent broke on purpose/, 'the runner ran the agent (it found the file from the project root)');
      assert.match(stderr, new RegExp(`\\(agent ${THROWING.replace(/[.#/]/g, '\\$&')}\\)`));
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it("agl train, started in the agent's folder, records the run and its rollouts under the stable id", { timeout: 300_000 }, async () => {
    const dir = tempDataDir('train-ids');
    const model = await saveTinyPolicy(dir);
    const tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 2);
    const config = join(dir, 'train.yaml');
    writeFileSync(
      config,
      'model:\n  maxTokens: 4\ntraining:\n  batchSize: 1\n  groupSize: 2\n  maxSteps: 1\n  valEvery: 0\n  valSize: 1\nruntime:\n  workers: 1\n  backend: cpu\n',
    );
    const dataDir = join(dir, 'data');
    const res = await runCli(
      [
        'train',
        'toy-agent.ts#toyAgent',
        '--train',
        tasks,
        '--val',
        tasks,
        '--model',
        model,
        '--config',
        config,
        '--checkpoint-dir',
        join(dir, 'ckpt'),
        '--quiet',
        '--data-dir',
        dataDir,
      ],
      {},
      join(ROOT, 'test', 'algorithm', 'fixtures'),
    );
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
    const store = new SqliteStore(resolve(dataDir, 'store.sqlite'));
    try {
      const runs = await store.listTrainingRuns();
      assert.deepEqual(
        runs.map((r) => r.agent),
        ['test/algorithm/fixtures/toy-agent.ts#toyAgent'],
      );
      const rollouts = (await store.queryRollouts({ limit: 100 })).items;
      assert.ok(rollouts.length >= 2, `rollouts: ${rollouts.length}`);
      assert.deepEqual([...new Set(rollouts.map((r) => r.agent))], ['test/algorithm/fixtures/toy-agent.ts#toyAgent']);
    } finally {
      await store.close();
    }
  });

  it('agl train of an agent outside any project, named by its absolute path from another folder, runs that file', { timeout: 300_000 }, async () => {
    // A user's own agent in a folder of its own (no package.json above it), started from elsewhere: its stable id has
    // no folder (`agent.ts#capitalAgent`); the workers must still run the file the user named, not <cwd>/agent.ts.
    const dir = mkdtempSync(join(tmpdir(), 'agl-outside-'));
    try {
      mkdirSync(join(dir, 'mine'));
      mkdirSync(join(dir, 'elsewhere'));
      writeFileSync(
        join(dir, 'mine', 'agent.ts'),
        `import { rollout } from ${JSON.stringify(pathToFileURL(join(ROOT, 'sdk', 'index.ts')).href)};\n` +
          'export const capitalAgent = rollout(async (task: { prompt: string }, llm) => {\n' +
          "  const res = await fetch(`${llm.baseUrl}/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${llm.apiKey}` },\n" +
          '    body: JSON.stringify({ model: llm.model, prompt: task.prompt, max_tokens: 4, ...llm.openaiParams }) });\n' +
          '  const text = ((await res.json()) as { choices?: { text?: string }[] }).choices?.[0]?.text ?? "";\n' +
          '  return /[a-z]/.test(text) ? 1 : 0;\n' +
          '});\n',
      );
      // A decoy where the folder-less id would lead from the working directory.
      writeFileSync(join(dir, 'elsewhere', 'agent.ts'), 'export const capitalAgent = () => { throw new Error("the wrong agent.ts ran"); };\n');
      const model = await saveTinyPolicy(dir);
      const tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 2);
      const config = join(dir, 'train.yaml');
      writeFileSync(
        config,
        'model:\n  maxTokens: 4\ntraining:\n  batchSize: 1\n  groupSize: 2\n  maxSteps: 1\n  valEvery: 0\n  valSize: 1\nruntime:\n  workers: 1\n  backend: cpu\n',
      );
      const dataDir = join(dir, 'data');
      const agent = `${join(dir, 'mine', 'agent.ts')}#capitalAgent`;
      const res = spawnSync(
        process.execPath,
        [
          join(ROOT, 'bin', 'agl.mjs'),
          'train',
          agent,
          '--train',
          tasks,
          '--val',
          tasks,
          '--model',
          model,
          '--config',
          config,
          '--quiet',
          '--data-dir',
          dataDir,
        ],
        { cwd: join(dir, 'elsewhere'), encoding: 'utf8', timeout: 240_000 },
      );
      assert.equal(res.status, 0, `${res.stdout}\n${res.stderr}`);
      const store = new SqliteStore(resolve(dataDir, 'store.sqlite'));
      try {
        const [run] = await store.listTrainingRuns();
        assert.equal(run!.agent, 'agent.ts#capitalAgent', 'the stable id: the file from its own folder');
        const rollouts = (await store.queryRollouts({ limit: 100 })).items;
        assert.ok(rollouts.length >= 2, `rollouts: ${rollouts.length}`);
        assert.deepEqual(
          rollouts.filter((r) => r.status !== 'succeeded').map((r) => r.id),
          [],
          'every rollout ran the named file (the decoy throws)',
        );
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
