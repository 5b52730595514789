/**
 * Which Python runs the torch engine, found the same from every data dir: `agl engine install torch` makes one venv
 * per user in the user's cache (XDG_CACHE_HOME here), and `agl engine status`, `agl train --engine torch` and any
 * daemon find it whatever their --data-dir; a venv an older agl made beside a data dir is still found (by that
 * data dir, and by every data dir when it sits in the default one).
 *
 * No second multi-GB venv is installed: each venv here is the folder layout of one (bin/python, .agl-ready) whose
 * python hands over to the test venv's Python (the one npm test makes), so the resolution, the install command's
 * "already there" path, the engine's doctor and a real training step all run for real.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requirementsHash } from '../../daemon/model/torch-env.js';
import { runAgl } from '../algorithm/cli-helpers.js';
import { torchPython } from '../helpers/torch.js';

/** A venv's layout at `venv` whose python runs the test venv's Python (ready: marked with these pins). */
function fakeVenv(venv: string): string {
  mkdirSync(join(venv, 'bin'), { recursive: true });
  const python = join(venv, 'bin', 'python');
  writeFileSync(python, `#!/bin/sh\nexec '${torchPython()}' "$@"\n`);
  chmodSync(python, 0o755);
  writeFileSync(join(venv, '.agl-ready'), `${requirementsHash()}\n`);
  return python;
}

/** A user of our own: HOME and the cache in `dir`, no AGL_PYTHON (what a new terminal or the editor's daemon has). */
function userEnv(dir: string): NodeJS.ProcessEnv {
  return { HOME: join(dir, 'home'), XDG_CACHE_HOME: join(dir, 'cache'), AGL_PYTHON: undefined };
}

interface Status {
  dataDir: string;
  python: string;
  source: string;
  scope: string;
  torch?: string;
}

async function status(dataDir: string, env: NodeJS.ProcessEnv): Promise<Status> {
  const { out } = await runAgl(['engine', 'status', '--json', '--data-dir', dataDir], dataDir, env);
  return JSON.parse(out.slice(out.indexOf('{'))) as Status;
}

test('agl engine install torch makes one venv per user in the cache; every data dir uses it', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-engine-env-'));
  try {
    const env = userEnv(dir);
    const python = fakeVenv(join(dir, 'cache', 'agent-lightning', 'torch-venv'));
    const install = await runAgl(['engine', 'install', 'torch', '--data-dir', join(dir, 'a')], join(dir, 'a'), env);
    assert.equal(install.code, 0, install.out);
    assert.match(install.out, new RegExp(`torch 2\\.13\\.0\\S*, transformers \\S+ in ${join(dir, 'cache', 'agent-lightning', 'torch-venv')}\\n`));
    assert.match(install.out, /agl train --engine torch uses it from now on, from any data dir/);
    for (const dataDir of [join(dir, 'a'), join(dir, 'b'), join(dir, 'editor-daemon')]) {
      const s = await status(dataDir, env);
      assert.equal(s.dataDir, dataDir);
      assert.equal(s.python, python, `data dir ${dataDir} runs the engine on the user's venv`);
      assert.equal(s.source, 'the venv of agl engine install');
      assert.equal(s.scope, 'every data dir');
      assert.match(s.torch ?? '', /^2\.13\.0/, 'the doctor ran through that Python');
    }
    const text = await runAgl(['engine', 'status', '--data-dir', join(dir, 'b')], join(dir, 'b'), env);
    assert.equal(text.code, 0, text.out);
    assert.match(
      text.out,
      new RegExp(`^torch engine: ${python} \\(the venv of agl engine install\\)\\n  used by data dir ${join(dir, 'b')} \\(every data dir\\)\\n`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a venv an older agl made beside a data dir is still found: by its data dir, and by all when it is the default one', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-engine-env-'));
  try {
    const env = userEnv(dir);
    const own = fakeVenv(join(dir, 'a', 'torch-venv'));
    const a = await status(join(dir, 'a'), env);
    assert.equal(a.python, own);
    assert.equal(a.scope, 'this data dir only');
    assert.match(
      a.source,
      new RegExp(`a venv an older agl engine install made in ${join(dir, 'a')}; \`agl engine install torch\` makes one for every data dir`),
    );
    const b = await status(join(dir, 'b'), env);
    assert.equal(b.python, 'python3', 'data dir b has no venv of its own and there is none per user');
    assert.equal(b.scope, 'every data dir without a venv of its own');

    const fromDefault = fakeVenv(join(dir, 'home', '.agent-lightning', 'torch-venv'));
    assert.equal((await status(join(dir, 'b'), env)).python, fromDefault, "the default data dir's older venv serves data dir b");
    assert.equal((await status(join(dir, 'a'), env)).python, own, 'data dir a keeps its own');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('agl train --data-dir X --engine torch, no --python, no AGL_PYTHON: trains on the per-user venv', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-engine-env-'));
  try {
    fakeVenv(join(dir, 'cache', 'agent-lightning', 'torch-venv'));
    const config = join(dir, 'train.yaml');
    writeFileSync(
      config,
      readFileSync('samples/calc/train.yaml', 'utf8')
        .replace(/maxMinutes: \d+/, 'maxMinutes: 0\n  maxSteps: 1')
        .replace(/batchSize: \d+/, 'batchSize: 2')
        .replace(/groupSize: \d+/, 'groupSize: 2')
        .replace(/valEvery: \d+/, 'valEvery: 0')
        .replace(/valSize: \d+/, 'valSize: 2'),
    );
    const data = join(dir, 'elsewhere');
    const args = ['train', 'samples/calc/agent.ts#calcAgent', '--model', 'samples/calc/warmup', '--config', config, '--engine', 'torch'];
    args.push('--train', 'samples/calc/data/train.jsonl', '--val', 'samples/calc/data/val.jsonl');
    const { code, out } = await runAgl([...args, '--data-dir', data, '--quiet'], data, userEnv(dir));
    assert.equal(code, 0, out);
    assert.match(out, /warmup on torch · cpu · /);
    assert.doesNotMatch(out, /No module named/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
