/**
 * Serves a checkpoint for the samples' inspect scripts: `agl serve --model <dir>` in a child process on a
 * free port with a scratch data dir, its gateway given the checkpoint as the LLM resource, so a sample's
 * own agent code (LangGraph.js, the Agents SDK) can run against it unchanged and greedily. Nothing of the
 * user's store is touched; the scratch dir goes when stop() is called.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readDaemonState } from '../../client/daemon-state.js';
import { readToken } from '../../daemon/server/auth.js';
import { LLM } from '../../sdk/index.js';
import { SERVE_COMMAND, type ServeFlags } from '../../protocol/cli-commands.js';
import { commandLine } from '../../protocol/cli-options.js';

export interface ServedCheckpoint {
  llm: LLM;
  stop(): Promise<void>;
}

const AGL = resolve('bin', 'agl.mjs');

/** `dir`: a model folder, or a checkpoint of a policy set (each role served from its policy, a LoRA policy as base + adapter); `flags`: more `agl serve` flags. */
export async function serveCheckpoint(
  dir: string,
  samplingParams: LLM['samplingParams'] = { temperature: 0 },
  flags: ServeFlags = {},
): Promise<ServedCheckpoint> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agl-inspect-'));
  const child = spawn(process.execPath, [AGL, ...commandLine(SERVE_COMMAND, { model: resolve(dir), port: '0', 'data-dir': dataDir, ...flags })], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    let url: string | null = null;
    for (let i = 0; i < 600 && !url; i++) {
      if (child.exitCode !== null) throw new Error(`agl serve --model ${dir} exited with ${child.exitCode}: ${stderr.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
      const s = readDaemonState(dataDir);
      if (s.running && s.state?.url) {
        try {
          if ((await fetch(`${s.state.url}/health`)).ok) url = s.state.url;
        } catch {
          /* not listening yet */
        }
      }
    }
    if (!url) throw new Error(`agl serve --model ${dir} did not start within 60 s: ${stderr.slice(-2000)}`);
    const token = readToken(dataDir);
    const res = await fetch(`${url}/v1/agl/resources`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ resources: { llm: { type: 'llm', endpoint: `${url}/v1`, model: 'checkpoint', backend: 'local', samplingParams } } }),
    });
    if (!res.ok) throw new Error(`setting the LLM resource failed: ${res.status} ${await res.text()}`);
    return { llm: new LLM({ baseUrl: `${url}/v1`, model: 'checkpoint', apiKey: token, samplingParams }), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
