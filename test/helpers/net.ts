/** Local ports for the servers a test starts: a free one, and a scripted OpenAI-compatible server listening on one. */
import type { Server as HttpServer } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that nothing listens on at the moment of asking. */

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts a scripted OpenAI-compatible server on a free port of 127.0.0.1: its base URL (ending in /v1), and a close
 * that drops the connections the `openai` client keeps alive (a plain close would wait for them).
 */
export async function listenOpenAiServer(server: HttpServer): Promise<{ url: string; close(): Promise<void> }> {
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return { url: `http://127.0.0.1:${port}/v1`, close };
}
