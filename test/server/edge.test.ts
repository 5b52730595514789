/**
 * The daemon's edge (daemon/server/edge.ts) on its own: which Host and Origin values the allow-list answers,
 * and the last-resort guard keeping a process alive (and saying why) after a throw or rejection escaped
 * every handler.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { HostAllowList, hostName } from '../../daemon/server/edge.js';

describe('daemon edge', () => {
  it('reads host names from Host values, IPv6 brackets and ports included', () => {
    assert.equal(hostName('127.0.0.1:4747'), '127.0.0.1');
    assert.equal(hostName('[::1]:80'), '::1');
    assert.equal(hostName('LocalHost.'), 'localhost');
    assert.equal(hostName('a b'), null);
    assert.equal(hostName('evil.example:99999999'), null);
  });

  it('answers loopback, IP addresses, the bound host and allowed names; refuses the rest', () => {
    const allow = new HostAllowList('gpu-box', ['agl.test', '.lab.test']);
    for (const host of [
      'localhost:1',
      '127.0.0.1',
      '127.8.9.10:2',
      '[::1]:3',
      'x.localhost',
      '192.168.1.5:4747',
      '[fe80::1]',
      'gpu-box:4747',
      'agl.test',
      'a.b.lab.test',
    ]) {
      assert.equal(allow.check(host, undefined), null, host);
    }
    for (const host of ['evil.example', 'localhost.evil.example', 'agl.test.evil', 'xlab.test', '']) {
      assert.equal(allow.check(host, undefined)?.path, 'headers.host', host);
    }
    assert.equal(allow.check(undefined, undefined)?.message, 'missing');
    assert.equal(allow.check('127.0.0.1:5', 'http://localhost:3000'), null);
    assert.equal(allow.check('127.0.0.1:5', 'http://127.0.0.1:5'), null, 'same origin');
    assert.equal(allow.check('10.0.0.2:5', 'http://10.0.0.2:5'), null, 'same origin by address');
    for (const origin of ['https://evil.example', 'http://10.0.0.9', 'null', 'file://', 'vscode-webview://abc']) {
      assert.equal(allow.check('127.0.0.1:5', origin)?.path, 'headers.origin', origin);
    }
  });

  it('the last-resort guard logs an escaped throw and rejection, and the process keeps running', () => {
    const script = `
      const edge = await import('./daemon/server/edge.ts');
      const { installLastResortGuard } = edge.installLastResortGuard ? edge : edge.default;
      installLastResortGuard((m) => console.log('LOG ' + m.split('\\n')[0]));
      setTimeout(() => { throw new Error('boom'); }, 5);
      Promise.reject(new Error('nope'));
      setTimeout(() => console.log('ALIVE'), 100);`;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /LOG unhandled rejection \(kept serving\): Error: nope/);
    assert.match(run.stdout, /LOG uncaught exception \(kept serving\): Error: boom/);
    assert.match(run.stdout, /ALIVE/);
  });
});
