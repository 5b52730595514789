/** What the `agl train` CLI tests share: running `agl` as a child process, a tiny saved policy, toy tasks. */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPolicy } from '../../daemon/model/policy.js';

/** Starts `agl <args>` (daemon/cli.ts through tsx) with its own data dir (and `env` over this one's); output is collected. */
export function startAgl(
  args: string[],
  dataDir: string,
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcess; exited: Promise<number | null>; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', join('daemon', 'cli.ts'), ...args], {
    env: { ...process.env, AGL_DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  return { child, exited, output: () => out };
}

/** Runs `agl <args>` to the end: exit code and everything it printed. */
export async function runAgl(args: string[], dataDir: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  const p = startAgl(args, dataDir, env);
  const code = await p.exited;
  return { code, out: p.output() };
}

/** Saves a tiny built-in GPT (32 wide, 1 layer, context 32, cpu) into `dir`/tiny and returns that folder. */
export async function saveTinyPolicy(dir: string, seed = 3): Promise<string> {
  const model = join(dir, 'tiny');
  const policy = await createPolicy({ size: { dModel: 32, nLayers: 1, nHeads: 2 }, contextLength: 32, seed, backend: 'cpu' });
  await policy.save(model);
  policy.dispose();
  return model;
}

/** Writes `n` toy tasks ({id, prompt} plus `extra`) as JSONL and returns the file. */
export function writeToyTasks(file: string, n: number, prefix = 'p', extra: Record<string, unknown> = {}): string {
  writeFileSync(file, Array.from({ length: n }, (_, i) => JSON.stringify({ id: `${prefix}${i}`, prompt: `${prefix}${i}:`, ...extra })).join('\n'));
  return file;
}
