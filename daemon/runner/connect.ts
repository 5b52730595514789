/**
 * How `agl rollout` and `agl runner` reach the daemon: --url/--token (or AGL_URL/AGL_TOKEN) for a daemon
 * on another machine, else the local daemon of the data dir (daemon.json + token file).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TOKEN_FILE } from '../../protocol/daemon-state.js';
import { AglClient } from '../../client/client.js';
import { resolveDataDir } from '../../client/daemon-state.js';

export interface Connection {
  client: AglClient;
  url: string;
  token: string;
}

export function connect(flags: { url?: string; token?: string; 'data-dir'?: string }): Connection {
  const url = flags.url ?? process.env.AGL_URL;
  if (url) {
    const token = flags.token ?? process.env.AGL_TOKEN;
    if (!token) throw new Error("--url needs --token (or AGL_TOKEN): the daemon's token is in its data dir, file `token`");
    return { client: new AglClient({ url, token }), url: url.replace(/\/+$/, ''), token };
  }
  const dataDir = resolveDataDir(flags['data-dir']);
  const client = AglClient.fromDataDir(dataDir);
  return { client, url: client.url, token: readFileSync(join(dataDir, TOKEN_FILE), 'utf8').trim() };
}
