/**
 * The daemon's event stream, GET /v1/agl/events (protocol/events.ts, daemon/server/events.ts), against a real daemon
 * app on 127.0.0.1 and a real SQLite file, read by the SDK's subscription (client/events.ts): the token is required
 * (401 problem+json), the Host allow-list applies, `hello` comes first, every commit is told as a `store` event
 * whoever wrote it (through the API, or another process on the same file as `agl train` does), `health` beats on its
 * heartbeat; a client that stops reading is dropped (the daemon keeps nothing for it) and one whose daemon restarts
 * reconnects and is greeted again; closing the server ends the streams. Every wait is for a condition.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Problem } from '../../protocol/api.js';
import type { DaemonEvent, StoreChange } from '../../protocol/events.js';
import { closeGracefully, createApp, listen } from '../../daemon/server/app.js';
import { createServerContext, type ServerContext } from '../../daemon/server/server-context.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { AglClient } from '../../client/client.js';
import { DaemonEventStream } from '../../client/events.js';

const TOKEN = 'events-token-0123456789abcdef';

interface Daemon {
  url: string;
  port: number;
  store: SqliteStore;
  client: AglClient;
  ctx: ServerContext;
  server: Server;
  stop(): Promise<void>;
}

async function startDaemon(file: string, events: ServerContext['events'] = {}, port = 0): Promise<Daemon> {
  const store = new SqliteStore(file);
  const ctx = createServerContext({ store, token: TOKEN, dataDir: join(file, '..'), log: () => {}, events });
  const server = await listen(createApp(ctx), ctx, '127.0.0.1', port);
  const client = new AglClient({ url: ctx.url, token: TOKEN });
  return {
    url: ctx.url,
    port: Number(new URL(ctx.url).port),
    store,
    client,
    ctx,
    server,
    async stop() {
      await client.close();
      await closeGracefully(server, 60_000); // a stream left open would hold this for a minute: the test would time out
      await store.close();
    },
  };
}

/** A subscription that records what it gets, with a wait for an event that satisfies a predicate. */
class Subscriber {
  readonly events: DaemonEvent[] = [];
  readonly drops: string[] = [];
  private readonly wake = new Set<() => void>();
  readonly stream: DaemonEventStream;
  constructor(url: string, token = TOKEN) {
    this.stream = new DaemonEventStream({
      url,
      token,
      retryMs: { min: 50, max: 200 },
      onEvent: (e) => {
        this.events.push(e);
        this.notify();
      },
      onDrop: ({ reason }) => {
        this.drops.push(reason);
        this.notify();
      },
    });
  }
  private notify(): void {
    for (const w of [...this.wake]) w();
  }
  /** Resolves with the first value `find` gives over what was received, waiting for more until it gives one. */
  async until<T>(find: (s: Subscriber) => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find(this);
      if (found !== undefined && found !== false) return found;
      const left = deadline - Date.now();
      assert.ok(left > 0, `${what}: not seen in ${JSON.stringify(this.events).slice(-2000)} (drops: ${this.drops.join('; ')})`);
      await new Promise<void>((resolve) => {
        const w = () => {
          clearTimeout(timer);
          this.wake.delete(w);
          resolve();
        };
        const timer = setTimeout(w, left);
        this.wake.add(w);
      });
    }
  }
  changes(): StoreChange[] {
    return this.events.flatMap((e) => (e.type === 'store' ? [e.change] : []));
  }
  close(): void {
    this.stream.close();
  }
}

async function metric(d: Daemon, name: string): Promise<number> {
  const line = (await d.client.metrics()).split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

describe('event stream (GET /v1/agl/events)', () => {
  let dir: string;
  let d: Daemon;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agl-events-'));
    d = await startDaemon(join(dir, 'store.sqlite'), { heartbeatMs: 200 });
  });
  after(async () => {
    await d?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('needs the token (401 problem+json) and a local Host, like every store route', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong-token' }] as Record<string, string>[]) {
      const res = await fetch(`${d.url}/v1/agl/events`, { headers });
      assert.equal(res.status, 401);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="agl"');
      assert.equal(((await res.json()) as Problem).errors?.[0]?.path, 'headers.authorization');
    }
    // A page on another origin that rebinds its name to 127.0.0.1 sends its own Host (fetch cannot: node:http can).
    const rebound = await new Promise<number>((resolve, reject) => {
      const req = request(`${d.url}/v1/agl/events`, { headers: { authorization: `Bearer ${TOKEN}`, host: 'attacker.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(rebound, 403);
    assert.equal(new URL(d.url).hostname, '127.0.0.1');
    const refused = new Subscriber(d.url, 'wrong-token');
    await refused.until((s) => s.drops.length > 0, 'the refusal');
    assert.match(refused.drops[0]!, /401/);
    assert.deepEqual(refused.events, []);
    refused.close();
  });

  it('greets with hello, then tells each commit: rollouts with their status, spans, run progress, metrics; health beats', async () => {
    const sub = new Subscriber(d.url);
    try {
      const hello = await sub.until((s) => s.events[0], 'hello');
      assert.equal(hello.type, 'hello');
      assert.ok(hello.type === 'hello' && hello.health.pid === process.pid && hello.heartbeatMs === 200);
      const { rollout, attempt } = await d.client.startRollout({ input: { q: 1 }, agent: 'events.ts#agent' }, 'w1');
      const started = await sub.until(
        (s) =>
          s
            .changes()
            .flatMap((c) => c.rollouts)
            .find((r) => r.id === rollout.id),
        'the started rollout',
      );
      assert.deepEqual(started, { id: rollout.id, agent: 'events.ts#agent', status: 'preparing', attemptId: attempt.id, attempts: 1 });
      await d.client.addSpans([{ rolloutId: rollout.id, attemptId: attempt.id, name: 'llm', startTime: Date.now() }]);
      await sub.until((s) => s.changes().some((c) => c.spans.includes(rollout.id)), 'its spans');
      await d.client.finishAttempt(attempt.id, { status: 'succeeded' });
      await sub.until(
        (s) =>
          s
            .changes()
            .flatMap((c) => c.rollouts)
            .find((r) => r.id === rollout.id && r.status === 'succeeded'),
        'it ended',
      );
      const run = await d.client.createTrainingRun({ agent: 'events.ts#agent', totalSteps: 4 });
      await d.client.addMetrics([{ runId: run.id, step: 1, name: 'reward_mean', value: 0.25 }]);
      await d.client.updateTrainingRun(run.id, { step: 1 });
      await sub.until(
        (s) =>
          s
            .changes()
            .flatMap((c) => c.metrics)
            .find((m) => m.runId === run.id && m.step === 1),
        'the metric',
      );
      await sub.until(
        (s) =>
          s
            .changes()
            .flatMap((c) => c.runs)
            .find((r) => r.id === run.id && r.step === 1 && r.totalSteps === 4),
        'the run at step 1',
      );
      const beats = (s: Subscriber) => s.events.filter((e) => e.type === 'health').length;
      await sub.until((s) => beats(s) >= 2, 'two heartbeats');
    } finally {
      sub.close();
    }
  });

  it('tells what another process wrote to the same store file (as agl train does)', async () => {
    const sub = new Subscriber(d.url);
    const other = new SqliteStore(join(dir, 'store.sqlite'));
    try {
      await sub.until((s) => s.events.some((e) => e.type === 'hello'), 'hello');
      const run = await other.createTrainingRun({ agent: 'train.ts#agent', config: {}, totalSteps: 2 });
      await other.addMetrics([{ runId: run.id, step: 0, name: 'val_reward', value: 0.5 }]);
      const r = await other.enqueueRollout({ input: 'from agl train', agent: 'train.ts#agent' });
      await sub.until(
        (s) =>
          s
            .changes()
            .flatMap((c) => c.runs)
            .find((p) => p.id === run.id),
        'the run',
      );
      await sub.until(
        (s) =>
          s
            .changes()
            .flatMap((c) => c.metrics)
            .find((m) => m.runId === run.id),
        'its metric',
      );
      await sub.until(
        (s) =>
          s
            .changes()
            .flatMap((c) => c.rollouts)
            .find((x) => x.id === r.id && x.status === 'queuing'),
        'the rollout',
      );
    } finally {
      sub.close();
      await other.close();
    }
  });
});

describe('event stream: the subscription (client/events.ts)', () => {
  it('hands on only events the protocol declares, whatever a server sends', async () => {
    const { createServer } = await import('node:http');
    const health = { status: 'ok', version: '0', pid: 1, store: 'sqlite', startedAt: 0, uptimeSeconds: 0 };
    const sent = [
      `event: hello\ndata: ${JSON.stringify({ type: 'hello', health, heartbeatMs: 1000 })}\n\n`,
      `event: store\ndata: ${JSON.stringify({ type: 'store', change: { rollouts: [{ id: 'r1', status: 'exploded' }] } })}\n\n`,
      'event: store\ndata: {not json\n\n',
      `event: gossip\ndata: ${JSON.stringify({ type: 'gossip' })}\n\n`,
      `: a comment\nevent: store\ndata: ${JSON.stringify({ type: 'store', change: { spans: ['r2'] } })}\n\n`,
    ];
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sent.join(''));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const logged: string[] = [];
    const events: DaemonEvent[] = [];
    const stream = new DaemonEventStream({
      url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      token: TOKEN,
      onEvent: (e) => events.push(e),
      log: (m) => logged.push(m),
    });
    try {
      for (const deadline = Date.now() + 10_000; events.length < 2; await new Promise((r) => setTimeout(r, 20)))
        assert.ok(Date.now() < deadline, JSON.stringify(events));
      assert.deepEqual(
        events.map((e) => e.type),
        ['hello', 'store'],
      );
      assert.deepEqual(events[1]!.type === 'store' && events[1]!.change.spans, ['r2']);
      assert.equal(logged.length, 3, `three events refused: ${logged.join(' | ')}`);
    } finally {
      stream.close();
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('event stream: slow consumers and restarts', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'agl-events-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('drops a client that stops reading once it has maxBufferedBytes unsent, keeping nothing for it', async () => {
    const d = await startDaemon(join(dir, 'slow.sqlite'), { maxBufferedBytes: 64 * 1024, heartbeatMs: 200 });
    const socket: Socket = connect(d.port, '127.0.0.1');
    let received = '';
    let ended = '';
    try {
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (received += c));
      socket.on('error', (e) => (ended = e.message));
      socket.on('close', () => (ended ||= 'closed'));
      socket.write(`GET /v1/agl/events HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      const fast = new Subscriber(d.url);
      await fast.until(() => received.includes('event: hello'), 'the slow client greeted');
      await fast.until((s) => s.events.some((e) => e.type === 'hello'), 'the fast client greeted');
      socket.pause(); // from now on this client reads nothing: the kernel's buffers fill, then the daemon's
      const agent = 'a'.repeat(4000); // a long agent name makes each event big (200 rollouts listed x 4 KB)
      const deadline = Date.now() + 120_000;
      let batches = 0;
      while ((await metric(d, 'agl_event_subscribers_dropped_total')) === 0) {
        assert.ok(Date.now() < deadline, `not dropped after ${batches} batches`);
        const made = await d.client.enqueueRollouts(Array.from({ length: 200 }, (_, i) => ({ input: i, agent })));
        batches++;
        // The fast client keeps up with every batch meanwhile.
        await fast.until((s) => s.changes().some((c) => c.rollouts.some((r) => r.id === made[199]!.id) || c.truncated), `batch ${batches}`);
      }
      assert.equal(await metric(d, 'agl_event_subscribers'), 1, 'the fast client is still subscribed');
      assert.deepEqual(fast.drops, []);
      socket.resume();
      await fast.until(() => ended !== '', 'the slow client sees its connection reset');
      fast.close();
    } finally {
      socket.destroy();
      await d.stop();
    }
  });

  it('reconnects by itself when the daemon restarts, and is greeted again (then re-reads what it shows)', async () => {
    const file = join(dir, 'restart.sqlite');
    let d = await startDaemon(file, { heartbeatMs: 200 });
    const port = d.port;
    const sub = new Subscriber(d.url);
    try {
      await sub.until((s) => s.events.some((e) => e.type === 'hello'), 'hello');
      await d.stop();
      await sub.until((s) => s.drops.length > 0, 'the stream dropped');
      // Written while no daemon runs: nobody can be told, so the client re-reads on the next hello.
      const offline = new SqliteStore(file);
      const missed = await offline.enqueueRollout({ input: 'while the daemon was down' });
      await offline.close();
      d = await startDaemon(file, { heartbeatMs: 200 }, port);
      const hellos = (s: Subscriber) => s.events.filter((e) => e.type === 'hello').length;
      await sub.until((s) => hellos(s) === 2, 'a second hello from the restarted daemon');
      assert.equal((await d.client.getRollout(missed.id))?.id, missed.id, 're-reading on hello finds what was written meanwhile');
      const after = await d.client.enqueueRollout({ input: 'after the restart' });
      await sub.until(
        (s) =>
          s
            .changes()
            .flatMap((c) => c.rollouts)
            .find((r) => r.id === after.id),
        'a change after the restart',
      );
    } finally {
      sub.close();
      await d.stop();
    }
  });
});
