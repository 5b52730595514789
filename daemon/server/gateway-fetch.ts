/**
 * A lean `fetch` for the upstream `openai` client, on node:http(s) with a keep-alive agent. Node's
 * built-in fetch (undici + web streams) cost the gateway more CPU per forwarded call than everything
 * else it does (profiled in bench:gateway); this one buffers plain JSON answers and streams only SSE.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 256 }), https: new https.Agent({ keepAlive: true, maxSockets: 256 }) };

function headerObject(h: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  if (h instanceof Headers)
    h.forEach((v, k) => {
      out[k] = v;
    });
  else if (Array.isArray(h)) for (const [k, v] of h) out[k.toLowerCase()] = v;
  else for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = String(v);
  return out;
}

export const nodeHttpFetch = ((input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input.toString() : input.url);
  const secure = url.protocol === 'https:';
  return new Promise<Response>((resolve, reject) => {
    const req = (secure ? https : http).request(
      url,
      {
        method: init.method ?? 'GET',
        headers: headerObject(init.headers),
        agent: secure ? agents.https : agents.http,
        signal: init.signal ?? undefined,
      },
      (res) => {
        const headers = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
        const init2 = { status: res.statusCode ?? 500, statusText: res.statusMessage ?? '', headers };
        if ((res.headers['content-type'] ?? '').includes('text/event-stream')) {
          resolve(new Response(Readable.toWeb(res) as unknown as ReadableStream, init2));
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const b = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
          resolve(new Response(new Uint8Array(b.buffer as ArrayBuffer, b.byteOffset, b.length), init2));
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const body = init.body;
    if (body === undefined || body === null) req.end();
    else if (typeof body === 'string' || body instanceof Uint8Array) req.end(body);
    else if (body instanceof ArrayBuffer) req.end(Buffer.from(body));
    else {
      req.destroy();
      reject(new TypeError('nodeHttpFetch: only string or binary request bodies are supported'));
    }
  });
}) as typeof fetch;
