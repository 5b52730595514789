/**
 * `agl train --engine torch` end to end through the real CLI, gateway, runner workers and store:
 *   - calc from its shipped warm-up on 2 data-parallel ranks (torchrun + DDP, gloo) learns: held-out accuracy
 *     rises in a few steps, and the checkpoint it writes opens in the TF.js engine too;
 *   - kill -9 of the engine in the middle of the run (in bfloat16): agl train stops with an error that names what
 *     happened and how to continue, the store keeps every rollout it had, and --resume finishes the run from the
 *     checkpoint;
 *   - two machines (2 single-process nodes on 127.0.0.1, torchrun's static rendezvous) train one FSDP-sharded model;
 *   - a cluster that cannot work (no rendezvous, a node rank past the count, FSDP on one rank, a built-in model on
 *     several machines), or a GPU that is not there, is refused with the reason.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPolicy } from '../../daemon/model/policy.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { runAgl, startAgl } from '../algorithm/cli-helpers.js';
import { torchPython } from '../helpers/torch.js';
import { freePort } from '../helpers/net.js';

const AGENT = 'samples/calc/agent.ts#calcAgent';
const DATA = ['--train', 'samples/calc/data/train.jsonl', '--val', 'samples/calc/data/val.jsonl', '--model', 'samples/calc/warmup'];

const SMALL = { batch: 4, group: 4, workers: 2 };

/**
 * samples/calc/train.yaml's settings with a fixed number of steps; `small`: 4 tasks x 4 rollouts a step on 2 runner
 * workers instead of 12 x 8 on 8, for the tests of what happens around the training (a kill, a cluster) rather than of
 * how much it learns (8 worker processes cost more to start than 16 rollouts take).
 */
function config(dir: string, steps: number, valSize: number, small = false): string {
  const file = join(dir, 'train.yaml');
  let yaml = readFileSync('samples/calc/train.yaml', 'utf8')
    .replace(/maxMinutes: \d+/, `maxMinutes: 0\n  maxSteps: ${steps}`)
    .replace(/valEvery: \d+/, 'valEvery: 0')
    .replace(/valSize: \d+/, `valSize: ${valSize}`);
  if (small)
    yaml = yaml
      .replace(/batchSize: \d+/, `batchSize: ${SMALL.batch}`)
      .replace(/groupSize: \d+/, `groupSize: ${SMALL.group}`)
      .replace(/workers: \d+/, `workers: ${SMALL.workers}`);
  writeFileSync(file, yaml);
  return file;
}

async function runsOf(data: string) {
  const store = new SqliteStore(join(data, 'store.sqlite'));
  try {
    const runs = await store.listTrainingRuns();
    const rollouts = (await store.queryRollouts({ limit: 10_000 })).items;
    return { runs, rollouts };
  } finally {
    await store.close();
  }
}

test('calc on 2 data-parallel ranks learns, and its checkpoint opens in both engines', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-train-torch-'));
  try {
    const data = join(dir, 'data'),
      ckpt = join(dir, 'ckpt');
    const { code, out } = await runAgl(
      [
        'train',
        AGENT,
        ...DATA,
        '--config',
        config(dir, 4, 100),
        '--engine',
        'torch',
        '--procs',
        '2',
        '--python',
        torchPython(),
        '--checkpoint-dir',
        ckpt,
        '--quiet',
      ],
      data,
    );
    assert.equal(code, 0, out);
    assert.match(out, /warmup on torch · cpu · float32 · 2 ranks \(gloo\)/);
    const m = /held-out reward (\d\.\d+) -> (\d\.\d+)/.exec(out);
    assert.ok(m, out);
    const [before, after] = [Number(m[1]), Number(m[2])];
    console.log(`calc, torch engine on 2 ranks, 4 steps: held-out ${before} -> ${after}`);
    assert.ok(after >= before + 0.05, `held-out accuracy rose: ${before} -> ${after}`);
    const { runs } = await runsOf(data);
    assert.equal(runs[0].status, 'succeeded');
    assert.equal((runs[0].config as { engine: { kind: string; procs: number } }).engine.kind, 'torch');
    const tf = await loadPolicy(join(ckpt, 'policy-4'));
    assert.equal(tf.parameterCount, 843520, "the torch engine's checkpoint opens in the TF.js engine");
    tf.dispose();
    assert.ok(
      readdirSync(join(data, 'logs')).some((f) => f.startsWith('engine-')),
      "the engine's output went to its log file",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('kill -9 of the torch engine mid-run in bfloat16: a named error, nothing lost, --resume finishes the run', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-train-torch-kill-'));
  try {
    const data = join(dir, 'data'),
      ckpt = join(dir, 'ckpt');
    const bf16 = ['--engine', 'torch', '--dtype', 'bfloat16', '--python', torchPython()];
    const args = ['train', AGENT, ...DATA, '--config', config(dir, 3, 2, true), ...bf16, '--checkpoint-dir', ckpt, '--quiet'];
    const first = startAgl(args, data);
    // Wait for the first checkpoint, then kill the engine (the Python child of agl train) while it works.
    const deadline = Date.now() + 300_000;
    while (!existsSync(join(ckpt, 'state.json'))) {
      assert.ok(Date.now() < deadline, `no checkpoint yet:\n${first.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const kids = readFileSync(`/proc/${first.child.pid}/task/${first.child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
    const engine = kids.find((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('agl_torch');
      } catch {
        return false;
      }
    });
    assert.ok(engine, `agl train runs the engine as a child: ${kids}`);
    process.kill(engine, 'SIGKILL');
    const code = await first.exited;
    const out = first.output();
    assert.equal(code, 1, out);
    assert.match(out, new RegExp(`the torch engine \\(pid ${engine}\\) was killed by SIGKILL`));
    assert.match(out, /Nothing acknowledged is lost: the store holds every rollout, and the last checkpoint is step \d+/);
    const runId = /--resume (run-\w+)/.exec(out)?.[1];
    assert.ok(runId, out);
    const killed = await runsOf(data);
    assert.equal(killed.runs[0].status, 'failed');
    const savedStep = JSON.parse(readFileSync(join(ckpt, 'state.json'), 'utf8')).trainer.step as number;
    assert.ok(savedStep >= 1 && savedStep < 3);

    const second = await runAgl(['train', AGENT, ...DATA, ...bf16, '--resume', runId, '--quiet'], data);
    assert.equal(second.code, 0, second.out);
    assert.match(second.out, new RegExp(`resumed at step ${savedStep}`));
    const done = await runsOf(data);
    assert.equal(done.runs[0].status, 'succeeded');
    assert.equal(done.runs[0].step, 3);
    const ids = new Set(done.rollouts.map((r) => r.id));
    assert.ok(killed.rollouts.length >= SMALL.batch * SMALL.group, `the steps before the kill rolled out (${killed.rollouts.length})`);
    for (const r of killed.rollouts) assert.ok(ids.has(r.id), `rollout ${r.id} from before the kill is still in the store`);
    assert.ok(done.rollouts.length > killed.rollouts.length, 'the resumed run added its own rollouts');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("more ranks than GPUs, or no GPU at all: agl train prints the engine's own sentence", { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-train-torch-cuda-'));
  try {
    // This machine has no GPU: rank 0 says so before any collective, and agl train prints that sentence.
    const args = [
      'train',
      AGENT,
      ...DATA,
      '--config',
      config(dir, 1, 2),
      '--engine',
      'torch',
      '--device',
      'cuda',
      '--procs',
      '2',
      '--python',
      torchPython(),
      '--quiet',
    ];
    const { code, out } = await runAgl(args, join(dir, 'data'));
    assert.notEqual(code, 0, out);
    assert.match(out, /--device cuda: no CUDA device is visible to torch 2\.13\.0/, out);
    assert.match(out, /use --device cpu, or install a CUDA build of torch/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('two machines as 2 single-process nodes on 127.0.0.1: FSDP across them trains, and node 1 ends with the run', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-train-nodes-'));
  try {
    const ckpt = join(dir, 'ckpt');
    const rdzv = `127.0.0.1:${await freePort()}`;
    const args = ['train', AGENT, ...DATA, '--config', config(dir, 2, 2, true), '--engine', 'torch', '--python', torchPython(), '--quiet'];
    const cluster = ['--nodes', '2', '--rdzv', rdzv, '--shard', 'fsdp'];
    const node1 = startAgl([...args, ...cluster, '--node-rank', '1'], join(dir, 'data1'));
    const node0 = await runAgl([...args, ...cluster, '--node-rank', '0', '--checkpoint-dir', ckpt], join(dir, 'data0'));
    const code1 = await node1.exited;
    assert.equal(node0.code, 0, node0.out);
    assert.equal(code1, 0, node1.output());
    assert.match(node0.out, /warmup on torch · cpu · float32 · 2 ranks \(gloo, fsdp, 2 nodes\)/);
    assert.match(node0.out, /step 2\/2/);
    assert.match(node1.output(), new RegExp(`node 1 of 2: this machine's 1 rank of samples/calc/warmup join node 0 at ${rdzv.replace('.', '\\.')}`));
    assert.match(node1.output(), /node 1: its ranks exited with code 0/);
    const tf = await loadPolicy(join(ckpt, 'policy-2'));
    assert.equal(tf.parameterCount, 843520, "the sharded run's checkpoint opens in the TF.js engine");
    tf.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a cluster that cannot work is refused before it starts', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-train-nodes-bad-'));
  try {
    const args = ['train', AGENT, ...DATA, '--config', config(dir, 1, 2), '--engine', 'torch', '--python', torchPython(), '--quiet'];
    const cases: [string[], RegExp][] = [
      [['--nodes', '2', '--node-rank', '1'], /engine\.nodes: several machines meet at a rendezvous: set engine\.rdzv/],
      [['--nodes', '2', '--node-rank', '2', '--rdzv', '127.0.0.1:1'], /engine\.nodeRank 2 is not below engine\.nodes 2/],
      [['--shard', 'fsdp'], /engine\.shard: shards over several ranks: set engine\.procs \(or engine\.nodes\) above 1/],
      [['--nodes', '2', '--rdzv', '127.0.0.1:1', '--model', 'builtin:0.8m'], /several machines train a model folder/],
    ];
    for (const [flags, message] of cases) {
      const { code, out } = await runAgl([...args, ...flags], join(dir, 'data'));
      assert.equal(code, 2, out);
      assert.match(out, message);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
