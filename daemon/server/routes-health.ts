/**
 * Liveness and observability: GET /health (no token: lets clients find out who is serving) and
 * GET /metrics (token required) in the Prometheus text format — request counts and latency histograms
 * per route (request-metrics.ts), plus store counts read at scrape time. Other routers add their own lines
 * with `ctx.metrics.addCollector(() => '...')`.
 */
import { Router } from 'express';
import type { Health } from '../../protocol/api.js';
import { requireToken } from './auth.js';
import type { ServerContext } from './server-context.js';

/** Store counts as gauges, read from store.statistics() at scrape time. */
export function storeCollector(ctx: ServerContext): () => Promise<string> {
  return async () => {
    const st = await ctx.store.statistics();
    const out = ['# HELP agl_store_rollouts Rollouts in the store, by status.', '# TYPE agl_store_rollouts gauge'];
    for (const [status, n] of Object.entries(st.rollouts)) out.push(`agl_store_rollouts{status="${status}"} ${n}`);
    out.push('# HELP agl_store_attempts Attempts in the store, by status.', '# TYPE agl_store_attempts gauge');
    for (const [status, n] of Object.entries(st.attempts)) out.push(`agl_store_attempts{status="${status}"} ${n}`);
    for (const [name, n] of [
      ['spans', st.spans],
      ['resources', st.resources],
      ['workers', st.workers],
      ['training_runs', st.trainingRuns],
    ] as const) {
      out.push(`# HELP agl_store_${name} ${name.replace('_', ' ')} in the store.`, `# TYPE agl_store_${name} gauge`, `agl_store_${name} ${n}`);
    }
    out.push(
      '# HELP agl_process_resident_memory_bytes Resident memory of the daemon.',
      '# TYPE agl_process_resident_memory_bytes gauge',
      `agl_process_resident_memory_bytes ${process.memoryUsage.rss()}`,
    );
    return out.join('\n');
  };
}

/** The daemon's /health answer (the event stream's `hello` and `health` events carry the same). */
export function healthOf(ctx: ServerContext): Health {
  return {
    status: 'ok',
    version: ctx.version,
    pid: process.pid,
    store: ctx.store.kind,
    startedAt: ctx.startedAt,
    uptimeSeconds: (Date.now() - ctx.startedAt) / 1000,
  };
}

export function healthRouter(ctx: ServerContext): Router {
  const r = Router();
  r.get('/health', (_req, res) => {
    res.json(healthOf(ctx));
  });
  r.get('/metrics', requireToken(ctx.token), async (_req, res) => {
    res.type('text/plain; version=0.0.4; charset=utf-8').send(await ctx.metrics.render());
  });
  return r;
}
