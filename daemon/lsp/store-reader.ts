/**
 * The store reader the language server uses: the daemon's HTTP store API (`/v1/agl/*`) at the endpoint
 * the extension passed, with its bearer token. Only the three reads the CodeLens stats need.
 */
import { API_PREFIX } from '../../protocol/api.js';
import type { DaemonEndpoint } from '../../protocol/lsp.js';
import type { Rollout, Span, Statistics } from '../../protocol/store.js';
import type { StoreReader } from './stats.js';

export function httpStoreReader(endpoint: DaemonEndpoint, timeoutMs = 5000): StoreReader {
  const base = endpoint.url.replace(/\/+$/, '') + API_PREFIX;
  async function get<T>(path: string, query: Record<string, string | number | string[] | undefined>): Promise<T> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, Array.isArray(v) ? v.join(',') : String(v));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (endpoint.token) headers.authorization = `Bearer ${endpoint.token}`;
    const res = await fetch(`${base}${path}${qs.size ? `?${qs}` : ''}`, { headers, signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) {
      const body = await res.text().catch(() => '');
      throw new Error(`daemon answered ${res.status} for GET ${path}: ${body.slice(0, 300)}`);
    }
    return (await res.json()) as T;
  }
  return {
    queryRollouts: (q) => get<{ items: Rollout[]; nextCursor: string | null }>('/rollouts', q),
    querySpans: async (q) => (await get<{ items: Span[] }>('/spans', q)).items,
    statistics: () => get<Statistics>('/statistics', {}),
  };
}
