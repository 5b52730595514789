/**
 * The daemon's outer edge, in front of every route (store API, hot path, gateway, OTLP, /health):
 * - the Host / Origin allow-list: a web page the user visits cannot reach the daemon through a DNS name it
 *   controls (DNS rebinding) nor call it from its own origin; 403 problem otherwise;
 * - requests node's parser refuses (header block too large: 431, malformed: 400, too slow: 408) are answered
 *   with a problem body instead of a bare status line;
 * - a last-resort guard for throws that escaped every handler: logged, and the daemon keeps serving.
 */
import type { RequestListener, Server } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { problemBody, toProblem } from './errors.js';

/** `localhost`, `*.localhost` (RFC 6761: always loopback) and the loopback addresses. */
const LOOPBACK_NAME = /^(?:localhost|[a-z0-9.-]+\.localhost|127(?:\.\d{1,3}){3}|::1|0:0:0:0:0:0:0:1)$/;

/** The host name of a Host header value or URL authority (`[::1]:80` -> `::1`), lower-cased; null when malformed. */
export function hostName(authority: string): string | null {
  const m = /^(?:\[([0-9a-f:.]+)\]|([^\s:[\]/@?#]+))(?::(\d{1,5}))?$/i.exec(authority.trim());
  if (!m) return null;
  return (m[1] ?? m[2]!).toLowerCase().replace(/\.$/, '');
}

/**
 * Which Host and Origin values a daemon answers. Host: loopback names, the address it is bound to, any IP
 * literal (a browser that connects to an address sends that address: rebinding needs a name), and the names
 * the user allowed (`agl serve --allowed-host`; a leading dot allows subdomains). Origin (sent by browsers):
 * loopback names, the bound host, the allowed names, or the very host the request was sent to.
 */
export class HostAllowList {
  private readonly names = new Set<string>();
  private readonly suffixes: string[] = [];

  constructor(boundHost: string, allowed: readonly string[] = []) {
    for (const raw of [boundHost, ...allowed]) {
      const name = raw
        .trim()
        .toLowerCase()
        .replace(/^\[|\]$/g, '');
      if (!name) continue;
      if (name.startsWith('.')) this.suffixes.push(name);
      else this.names.add(name);
    }
  }

  private named(name: string): boolean {
    return LOOPBACK_NAME.test(name) || this.names.has(name) || this.suffixes.some((s) => name.endsWith(s) || name === s.slice(1));
  }

  /** null when the request may be answered, else why not (for the 403 problem). */
  check(host: string | undefined, origin: string | undefined): { path: string; message: string } | null {
    const name = host === undefined ? null : hostName(host);
    if (name === null) return { path: 'headers.host', message: host === undefined ? 'missing' : `'${host}' is not a host name` };
    if (!isIP(name) && !this.named(name)) return { path: 'headers.host', message: `'${name}' is not an allowed host name` };
    if (origin === undefined) return null;
    let url: URL | null = null;
    try {
      url = new URL(origin);
    } catch {
      /* 'null' and other opaque origins */
    }
    const originName = url && /^https?:$/.test(url.protocol) ? hostName(url.host) : null;
    if (originName !== null && (this.named(originName) || url!.host.toLowerCase() === host!.trim().toLowerCase())) return null;
    return { path: 'headers.origin', message: `requests from the web origin '${origin}' are not allowed` };
  }
}

function sendJsonProblem(res: Parameters<RequestListener>[1], status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/problem+json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * The server's request listener: the allow-list first, then `inner` (hot path and express) under a guard that
 * answers anything thrown synchronously with a problem.
 */
export function edgeListener(allow: HostAllowList, inner: RequestListener, log: (m: string) => void): RequestListener {
  return (req, res) => {
    const refused = allow.check(req.headers.host, req.headers.origin);
    if (refused) {
      req.resume();
      const detail =
        refused.path === 'headers.host'
          ? `Host ${refused.message}: call the daemon by a loopback name (127.0.0.1, localhost) or start it with --allowed-host <name>`
          : `Origin: ${refused.message}; the daemon answers pages only from loopback or allowed hosts (agl serve --allowed-host)`;
      sendJsonProblem(res, 403, problemBody(403, 'forbidden-host', detail, [refused], req.url));
      return;
    }
    try {
      inner(req, res);
    } catch (err) {
      log(`${req.method} ${req.url} threw: ${(err as Error)?.stack ?? err}`);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const problem = toProblem(err, req.url);
      sendJsonProblem(res, problem.status, problem);
    }
  };
}

/** Errors node's HTTP parser raises before a request exists, as the status to answer them with. */
function clientErrorStatus(code: string | undefined): number {
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  return 400;
}

/** Answers the requests node's parser refuses with a problem body (node's default is a bare status line). */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = clientErrorStatus(err.code);
    const detail =
      status === 431
        ? 'request line and headers exceed the server limit (16 KB): send a shorter URL and fewer or smaller headers'
        : status === 408
          ? 'the request was not received in time'
          : `malformed HTTP request (${err.code ?? err.message})`;
    const body = JSON.stringify(problemBody(status, status === 431 ? 'headers-too-large' : status === 408 ? 'timeout' : 'malformed-request', detail));
    const reason = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

let guarded = false;

/**
 * The last resort, for the daemon process only (`agl serve`, `agl train`): a throw or rejection that escaped
 * every handler is logged with its stack and the process keeps serving, rather than every editor and runner
 * losing the daemon to one request. Handlers answer their own errors (errors.ts settle / problemHandler); this
 * catches what a bug lets past them.
 */
export function installLastResortGuard(log: (m: string) => void): void {
  if (guarded) return;
  guarded = true;
  process.on('uncaughtException', (err) => log(`uncaught exception (kept serving): ${err?.stack ?? err}`));
  process.on('unhandledRejection', (reason) => log(`unhandled rejection (kept serving): ${(reason as Error)?.stack ?? reason}`));
}
