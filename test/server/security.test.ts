/**
 * The daemon's security model, checked against a real `agl serve`: the Host/Origin allow-list on every route
 * (token-free ones included; DNS rebinding), `--allowed-host` for names remote clients use, upstream API keys
 * only from variables allowed at start, and a data dir kept private (0700, files 0600, SQLite's -wal/-shm too)
 * even when it was created beforehand with looser modes.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startDaemonProcess, tempDataDir, type DaemonProcess } from '../helpers/daemon-process.js';

interface Answer {
  status: number;
  type: string;
  body: any;
}

/** A raw request with the Host / Origin headers given (fetch does not let a caller set Host). */
function send(url: string, path: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url + path, { method, headers, setHost: 'host' in headers ? undefined : false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          type: String(res.headers['content-type']),
          body: /json/.test(String(res.headers['content-type'])) ? JSON.parse(text) : text,
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

const mode = (path: string) => statSync(path).mode & 0o777;

describe('security model of agl serve', () => {
  let d: DaemonProcess;
  let dataDir: string;
  before(async () => {
    // A data dir made beforehand with the usual umask, holding a store another run left world-readable.
    dataDir = join(tempDataDir('security'), 'data');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    writeFileSync(join(dataDir, 'notes.log'), 'x', { mode: 0o644 });
    d = await startDaemonProcess(dataDir, ['--allowed-host', 'agl.test', '--allowed-host', '.lab.test', '--upstream-key-env', 'AGL_TEST_KEY']);
  });
  after(async () => {
    await d?.stop('SIGTERM');
  });

  it('answers loopback names and IP addresses, with any port, on every route', async () => {
    const port = new URL(d.url).port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', `[::1]:${port}`, `app.localhost:${port}`, `10.1.2.3:${port}`]) {
      assert.equal((await send(d.url, '/health', { host })).status, 200, host);
    }
  });

  it('refuses any other Host name with a 403 problem, /health and the gateway included', async () => {
    const claim = await d.client.startRollout({ input: null });
    for (const path of ['/health', `/rollout/${claim.rollout.id}/attempt/${claim.attempt.id}/v1/models`, '/v1/agl/statistics', '/v1/traces']) {
      const res = await send(d.url, path, { host: 'evil.example', authorization: `Bearer ${d.token}` });
      assert.equal(res.status, 403, path);
      assert.match(res.type, /^application\/problem\+json/);
      assert.deepEqual(res.body.errors, [{ path: 'headers.host', message: "'evil.example' is not an allowed host name" }]);
      assert.match(res.body.detail, /--allowed-host/);
    }
    const none = await send(d.url, '/health', {});
    assert.ok(none.status === 400 || none.status === 403, `no Host header at all: ${none.status}`);
  });

  it('answers the names given with --allowed-host (a leading dot allows subdomains)', async () => {
    for (const host of ['agl.test', 'AGL.test:4747', 'gpu1.lab.test', 'lab.test']) assert.equal((await send(d.url, '/health', { host })).status, 200, host);
    assert.equal((await send(d.url, '/health', { host: 'agl.test.evil.example' })).status, 403);
  });

  it('refuses browser requests from other web origins, keeps same-origin and loopback ones', async () => {
    const host = new URL(d.url).host;
    const evil = await send(d.url, '/health', { host, origin: 'https://evil.example' });
    assert.equal(evil.status, 403);
    assert.equal(evil.body.errors[0].path, 'headers.origin');
    assert.equal((await send(d.url, '/health', { host, origin: 'null' })).status, 403);
    assert.equal((await send(d.url, '/health', { host, origin: 'http://10.9.9.9:80' })).status, 403, 'an IP origin is another site');
    for (const origin of [`http://${host}`, 'http://localhost:3000', 'http://agl.test'])
      assert.equal((await send(d.url, '/health', { host, origin })).status, 200, origin);
  });

  it('takes upstream API keys only from variables allowed at start, and upstreams only as http(s) URLs', async () => {
    const llm = (apiKeyEnv: string) => ({
      resources: {
        llm: { type: 'llm' as const, endpoint: `${d.url}/v1`, model: 'm', backend: 'upstream' as const, upstreamUrl: 'http://127.0.0.1:9/v1', apiKeyEnv },
      },
    });
    const refused = await send(
      d.url,
      '/v1/agl/resources',
      { host: new URL(d.url).host, authorization: `Bearer ${d.token}`, 'content-type': 'application/json' },
      'POST',
      JSON.stringify(llm('HOME')),
    );
    assert.equal(refused.status, 403);
    assert.deepEqual(refused.body.errors, [{ path: 'resources.llm.apiKeyEnv', message: "'HOME' is not allowed" }]);
    assert.match(refused.body.detail, /--upstream-key-env HOME/);
    assert.equal((await d.client.addResources(llm('AGL_TEST_KEY'))).version >= 1, true, 'the variable named at start is accepted');
    // An upstream the gateway could not call is refused when published, not answered 500 at every call.
    for (const [upstreamUrl, message] of [
      [undefined, "is required when backend is 'upstream'"],
      ['not a url', "'not a url' is not an http(s) URL"],
      ['file:///etc/passwd', "'file:///etc/passwd' is not an http(s) URL"],
    ] as const) {
      const bad = { resources: { llm: { type: 'llm', endpoint: `${d.url}/v1`, model: 'm', backend: 'upstream', ...(upstreamUrl ? { upstreamUrl } : {}) } } };
      const res = await send(
        d.url,
        '/v1/agl/resources',
        { host: new URL(d.url).host, authorization: `Bearer ${d.token}`, 'content-type': 'application/json' },
        'POST',
        JSON.stringify(bad),
      );
      assert.equal(res.status, 400);
      assert.deepEqual(res.body.errors, [{ path: 'resources.llm.upstreamUrl', message }]);
    }
  });

  it('keeps the data dir 0700 and its files 0600, SQLite -wal/-shm included', async () => {
    await d.client.enqueueRollout({ input: { touch: 'the store' } });
    assert.equal(mode(dataDir), 0o700);
    // daemon.json is rewritten by rename as it changes: each new copy is made owner-only again.
    for (const name of ['store.sqlite', 'store.sqlite-wal', 'store.sqlite-shm', 'token', 'notes.log', 'daemon.json']) {
      assert.equal(mode(join(dataDir, name)), 0o600, name);
    }
  });
});
