/**
 * Runs a bundled `agl` subcommand (train, rollout, ...) as a child process in the workspace folder,
 * pointed at the same data dir (hence the same daemon) as the extension, with its output streamed line
 * by line to the output channel and to the caller.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolveDataDir } from '../client/daemon-state.js';
import { aglEntry, nodeCommand, readSettings, workspaceRoot } from './config.js';
import type { Ctx } from './ctx.js';

export interface AglRun {
  child: ChildProcess;
  /** Resolves when the process ends, with its exit code (null when killed) and all its output lines. */
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string[]; stderr: string[] }>;
}

export function runAgl(ctx: Ctx, args: string[], onLine?: (line: string, stream: 'stdout' | 'stderr') => void): AglRun {
  const settings = readSettings();
  const node = nodeCommand(settings);
  const argv = [aglEntry(ctx.extensionPath), ...args];
  ctx.log(`$ agl ${args.map((a) => (/[\s"'{}]/.test(a) ? JSON.stringify(a) : a)).join(' ')}`);
  const env: NodeJS.ProcessEnv = { ...process.env, ...node.env, AGL_DATA_DIR: resolveDataDir(settings.dataDir || undefined) };
  // Commands that talk to the daemon over HTTP (agl rollout, agl runner) use the very daemon this window uses.
  if (ctx.daemon) {
    env.AGL_URL = ctx.daemon.endpoint.url;
    env.AGL_TOKEN = ctx.daemon.endpoint.token;
  }
  // Progress bars are for terminals; ask for plain lines.
  env.NO_COLOR = '1';
  env.AGL_PROGRESS = 'lines';
  const child = spawn(node.command, argv, { cwd: workspaceRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const pump = (stream: 'stdout' | 'stderr', sink: string[]) => {
    let partial = '';
    child[stream]!.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split(/\r?\n|\r/);
      partial = parts.pop() ?? '';
      for (const line of parts) emit(line);
    });
    child[stream]!.on('end', () => {
      if (partial) emit(partial);
      partial = '';
    });
    function emit(line: string) {
      sink.push(line);
      ctx.log(line);
      onLine?.(line, stream);
    }
  };
  pump('stdout', stdout);
  pump('stderr', stderr);
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string[]; stderr: string[] }>((resolve) => {
    child.once('error', (err) => {
      stderr.push(`could not run ${node.command}: ${err.message}`);
      resolve({ code: null, signal: null, stdout, stderr });
    });
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

/** The last meaningful error line of a failed run, for a notification. */
export function lastError(lines: string[]): string {
  const meaningful = lines.filter((l) => l.trim() && !/^\s+at /.test(l));
  return meaningful[meaningful.length - 1]?.trim() ?? 'no output';
}
