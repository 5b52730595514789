/**
 * How a panel reaches the daemon: an AglClient, or a function giving the current one (the daemon may restart
 * on another port; undefined while it is down), and request handlers that look the client up per request.
 */
import type { AglClient } from '../../client/client.js';
import type { RequestHandlers } from './data.js';

/** An AglClient, or a function giving the current one (the daemon may restart on another port). */
export type ClientSource = AglClient | (() => Promise<AglClient | undefined> | AglClient | undefined);

export async function resolveClient(source: ClientSource): Promise<AglClient> {
  const client = typeof source === 'function' ? await source() : source;
  if (!client) throw new Error('the Agent Lightning daemon is not running: start it with "Agent Lightning: Start Daemon"');
  return client;
}

/**
 * Handlers for a webview protocol's requests that look the client up on every request, so a restarted
 * daemon is picked up.
 */
export function lazyHandlers(
  source: () => ClientSource,
  build: (c: AglClient) => RequestHandlers,
  protocol: Record<string, { kind: string; method: string }>,
): RequestHandlers {
  const methods = Object.values(protocol)
    .filter((t) => t.kind === 'request')
    .map((t) => t.method);
  return new Map(methods.map((m) => [m, async (params: unknown) => build(await resolveClient(source())).get(m)!(params)]));
}
