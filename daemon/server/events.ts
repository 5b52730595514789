/**
 * The daemon's event stream, `GET /v1/agl/events` (protocol/events.ts declares it): server-sent events telling the
 * editor what changed, so the extension, the language server and the panels subscribe instead of polling.
 * One EventHub per app: while anyone subscribes it watches the store's change feed (LightningStore.watchChanges:
 * commits of this daemon and of every other process on the same database), merges what lands within COALESCE_MS
 * into one `store` event, and sends `health` every heartbeatMs. A subscriber gets `hello` once the store is watched,
 * so a client that re-reads on `hello` misses no commit.
 * Slow consumers: the hub writes each event once to each socket and never queues events itself; a subscriber with
 * more than maxBufferedBytes still unsent (it stopped reading) is dropped at once, its socket reset, so memory stays
 * bounded whatever a client does. It reconnects and re-reads on `hello`. Closing the hub (closeGracefully) ends
 * every stream, so shutting down never waits on them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router } from 'express';
import { DEFAULT_HEARTBEAT_MS, EVENTS_PATH, mergeChanges, type DaemonEvent, type StoreChange } from '../../protocol/events.js';
import { requireToken } from './auth.js';
import { healthOf } from './routes-health.js';
import type { ServerContext } from './server-context.js';

/** Changes landing this close together go out as one event (ms): a burst of commits is one re-read for a view. */
const COALESCE_MS = 25;
/** What a subscriber may leave unread before it is dropped, by default (bytes). */
const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024;
/** How soon a dropped or disconnected client should try again (the SSE `retry` field, ms). */
const RETRY_MS = 1000;

export interface EventHubOptions {
  /** How often `health` is sent (ms; DEFAULT_HEARTBEAT_MS). */
  heartbeatMs?: number;
  /** Unsent bytes a subscriber may have before it is dropped (DEFAULT_MAX_BUFFERED_BYTES). */
  maxBufferedBytes?: number;
}

interface Subscriber {
  res: ServerResponse;
  /** Sent `hello` (events before it are not sent: the client re-reads on `hello` anyway). */
  greeted: boolean;
}

const frame = (event: DaemonEvent): string => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

export class EventHub {
  private readonly subscribers = new Set<Subscriber>();
  private readonly heartbeatMs: number;
  private readonly maxBufferedBytes: number;
  /** The store is watched (resolves once it is); null while nobody subscribes. */
  private watching: Promise<void> | null = null;
  private unwatch: (() => void) | null = null;
  /** Bumped when watching stops: a watch still starting then is undone. */
  private generation = 0;
  private pending: StoreChange | null = null;
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  /** Counters for /metrics. */
  private sent = 0;
  private dropped = 0;

  constructor(
    private readonly ctx: ServerContext,
    options: EventHubOptions = {},
  ) {
    this.heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  }

  /** Streams events to `res` until the client goes away, is dropped, or the hub closes. */
  async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    req.socket.setNoDelay(true);
    if (this.closed) return void res.end();
    const sub: Subscriber = { res, greeted: false };
    this.subscribers.add(sub);
    res.on('close', () => this.remove(sub));
    try {
      await this.watch();
    } catch (e) {
      this.ctx.log(`events: cannot watch the store: ${(e as Error).message}`);
    }
    if (!this.subscribers.has(sub)) return;
    sub.greeted = true;
    this.write(sub, `retry: ${RETRY_MS}\n\n` + frame({ type: 'hello', health: healthOf(this.ctx), heartbeatMs: this.heartbeatMs }));
  }

  /** Ends every stream and stops watching (the server is closing). */
  close(): void {
    this.closed = true;
    for (const sub of [...this.subscribers]) sub.res.end();
    this.subscribers.clear();
    this.stopWatching();
  }

  /** Prometheus lines (app.ts adds them to /metrics). */
  metrics(): string {
    return [
      '# HELP agl_event_subscribers Clients subscribed to the event stream.',
      '# TYPE agl_event_subscribers gauge',
      `agl_event_subscribers ${this.subscribers.size}`,
      '# HELP agl_events_sent_total Events written to subscribers.',
      '# TYPE agl_events_sent_total counter',
      `agl_events_sent_total ${this.sent}`,
      '# HELP agl_event_subscribers_dropped_total Subscribers dropped for not reading what they were sent.',
      '# TYPE agl_event_subscribers_dropped_total counter',
      `agl_event_subscribers_dropped_total ${this.dropped}`,
    ].join('\n');
  }

  private watch(): Promise<void> {
    if (this.watching) return this.watching;
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.broadcast({ type: 'health', health: healthOf(this.ctx) }), this.heartbeatMs);
      this.heartbeat.unref();
    }
    const generation = ++this.generation;
    this.watching = (async () => {
      try {
        const unwatch = (await this.ctx.store.watchChanges?.((c) => this.changed(c))) ?? null;
        // Everyone left (or the hub closed) while the store was being watched: stop at once.
        if (generation !== this.generation) unwatch?.();
        else this.unwatch = unwatch;
      } catch (e) {
        if (generation === this.generation) this.watching = null; // the next subscriber tries again
        throw e;
      }
    })();
    return this.watching;
  }

  private stopWatching(): void {
    this.generation++;
    this.watching = null;
    this.unwatch?.();
    this.unwatch = null;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.heartbeat = this.flushTimer = null;
    this.pending = null;
  }

  private remove(sub: Subscriber): void {
    if (this.subscribers.delete(sub) && this.subscribers.size === 0) this.stopWatching();
  }

  private changed(change: StoreChange): void {
    this.pending = this.pending ? mergeChanges(this.pending, change) : change;
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = null;
      const change = this.pending;
      this.pending = null;
      if (change) this.broadcast({ type: 'store', change });
    }, COALESCE_MS);
  }

  private broadcast(event: DaemonEvent): void {
    if (this.closed) return;
    const text = frame(event);
    for (const sub of [...this.subscribers]) if (sub.greeted) this.write(sub, text);
  }

  /** Writes, unless the subscriber left more than maxBufferedBytes unread: then it is dropped (it reconnects). */
  private write(sub: Subscriber, text: string): void {
    if (sub.res.writableLength > this.maxBufferedBytes) {
      this.dropped++;
      this.ctx.log(`events: dropped a subscriber that stopped reading (${sub.res.writableLength} bytes unsent)`);
      sub.res.socket?.resetAndDestroy();
      sub.res.destroy();
      this.remove(sub);
      return;
    }
    sub.res.write(text);
    this.sent++;
  }
}

/** GET /v1/agl/events behind the token (mounted at API_PREFIX by app.ts). */
export function eventsRouter(ctx: ServerContext, hub: EventHub): Router {
  const r = Router();
  r.get(EVENTS_PATH, requireToken(ctx.token), (req, res) => void hub.serve(req, res));
  return r;
}
