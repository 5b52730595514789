/**
 * A subscription to a daemon's event stream (`GET /v1/agl/events`, protocol/events.ts): what the extension and the
 * language server use instead of polling. Each event is validated against the protocol's schema before it is handed
 * on. The subscription keeps itself up: a stream that drops (the daemon restarted, it dropped this client for
 * reading too slowly, the network) or goes silent for three heartbeats is opened again, after 250 ms and then up to
 * 5 s apart, and its first event is `hello` again, on which a subscriber re-reads what it shows.
 */
import http from 'node:http';
import https from 'node:https';
import { API_PREFIX } from '../protocol/api.js';
import { DaemonEvent, EVENTS_PATH } from '../protocol/events.js';

export interface EventStreamOptions {
  /** The daemon's base URL, e.g. http://127.0.0.1:4747 */
  url: string;
  token: string;
  onEvent(event: DaemonEvent): void;
  /** The stream dropped (it is opened again by itself): why, and the HTTP status when the daemon refused it. */
  onDrop?(why: { reason: string; status?: number }): void;
  /** Reconnection delays (ms). */
  retryMs?: { min: number; max: number };
  /** Silence taken for a dead stream before the first `hello` says how often `health` comes (ms). */
  silenceMs?: number;
  log?: (message: string) => void;
}

/** Unread text that never became a whole event: the stream is not what it claims to be. */
const MAX_PENDING_CHARS = 16 * 1024 * 1024;

export class DaemonEventStream {
  private request: http.ClientRequest | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private silenceTimer: ReturnType<typeof setTimeout> | null = null;
  private retryMs: number;
  private silenceMs: number;
  private closed = false;

  constructor(private readonly opts: EventStreamOptions) {
    this.retryMs = opts.retryMs?.min ?? 250;
    this.silenceMs = opts.silenceMs ?? 30_000;
    this.connect();
  }

  /** Stops for good (no reconnection). */
  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.request?.destroy();
    this.request = null;
  }

  private connect(): void {
    if (this.closed) return;
    const url = new URL(this.opts.url.replace(/\/+$/, '') + API_PREFIX + EVENTS_PATH);
    const transport = url.protocol === 'https:' ? https : http;
    const req = transport.request(url, { method: 'GET', headers: { authorization: `Bearer ${this.opts.token}`, accept: 'text/event-stream' } });
    this.request = req;
    let dropped = false;
    const drop = (reason: string, status?: number) => {
      if (dropped) return;
      dropped = true;
      req.destroy();
      if (this.request === req) this.request = null;
      if (this.silenceTimer) clearTimeout(this.silenceTimer);
      if (this.closed) return;
      this.opts.onDrop?.({ reason, ...(status !== undefined && { status }) });
      this.retryTimer = setTimeout(() => this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, this.opts.retryMs?.max ?? 5_000);
    };
    req.on('error', (e) => drop(e.message));
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        drop(`the daemon answered ${res.statusCode}`, res.statusCode);
        return;
      }
      this.listen(res, drop);
    });
    req.end();
    this.watchSilence(drop);
  }

  /** Reads events off the response until it ends. */
  private listen(res: http.IncomingMessage, drop: (reason: string) => void): void {
    res.setEncoding('utf8');
    let pending = '';
    res.on('data', (chunk: string) => {
      this.watchSilence(drop);
      pending += chunk;
      let end: number;
      while ((end = pending.indexOf('\n\n')) >= 0) {
        this.dispatch(pending.slice(0, end));
        pending = pending.slice(end + 2);
      }
      if (pending.length > MAX_PENDING_CHARS) drop('an event longer than any the daemon sends');
    });
    res.on('end', () => drop('the daemon ended the stream'));
    res.on('error', (e) => drop(e.message));
  }

  /** One event's `data:` lines (JSON; the event's type is inside it); `event:`, `retry:` and comments are for browsers. */
  private dispatch(block: string): void {
    const data: string[] = [];
    for (const line of block.split('\n')) if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    if (!data.length) return;
    let parsed;
    try {
      parsed = DaemonEvent.safeParse(JSON.parse(data.join('\n')));
    } catch (e) {
      this.opts.log?.(`event stream: not JSON: ${(e as Error).message}`);
      return;
    }
    if (!parsed.success) {
      this.opts.log?.(`event stream: an event that is not in protocol/events.ts: ${parsed.error.issues[0]?.message ?? ''}`);
      return;
    }
    const event = parsed.data;
    if (event.type === 'hello') {
      this.retryMs = this.opts.retryMs?.min ?? 250;
      this.silenceMs = event.heartbeatMs * 3;
    }
    this.opts.onEvent(event);
  }

  private watchSilence(drop: (reason: string) => void): void {
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.silenceTimer = setTimeout(() => drop(`no event for ${this.silenceMs} ms`), this.silenceMs);
    this.silenceTimer.unref();
  }
}
