/**
 * Store API routes for resources, workers, known agents and statistics (mounted under /v1/agl):
 *   POST /resources   GET /resources?limit=   GET /resources/latest   GET /resources/:id
 *   GET  /workers     GET /workers/:id        POST /workers/:id/heartbeat
 *   GET  /agents (agents seen in enqueued rollouts)   GET /statistics
 */
import { Router } from 'express';
import { AddResourcesRequest, ResourcesListQuery, WorkerHeartbeatRequest } from '../../protocol/api.js';
import { HttpProblem, notFound, parseOr400 } from './errors.js';
import type { ServerContext } from './app.js';
import { DEFAULT_KEY_ENVS } from './gateway-upstream.js';

function isHttpUrl(text: string): boolean {
  try { return /^https?:$/.test(new URL(text).protocol); } catch { return false; }
}

export function resourcesRouter(ctx: ServerContext): Router {
  const r = Router();
  const { store } = ctx;

  const keyEnvs = new Set(ctx.allowedKeyEnvs ?? DEFAULT_KEY_ENVS);
  r.post('/resources', async (req, res) => {
    const input = parseOr400(AddResourcesRequest, req.body);
    // The gateway refuses such a resource at call time too; saying so now names the field and the fix.
    for (const [name, resource] of Object.entries(input.resources)) {
      if (resource.type !== 'llm') continue;
      const url = resource.upstreamUrl;
      if ((resource.backend === 'upstream' && !url) || (url !== undefined && !isHttpUrl(url))) {
        const message = url ? `'${url}' is not an http(s) URL` : "is required when backend is 'upstream'";
        throw new HttpProblem(400, 'validation', `invalid body: resources.${name}.upstreamUrl: ${message}`, [{ path: `resources.${name}.upstreamUrl`, message }]);
      }
      if (resource.apiKeyEnv && !keyEnvs.has(resource.apiKeyEnv)) {
        throw new HttpProblem(403, 'key-env-not-allowed',
          `resources.${name}.apiKeyEnv: '${resource.apiKeyEnv}' is not a variable this daemon may send as an API key; start it with --upstream-key-env ${resource.apiKeyEnv} (allowed now: ${[...keyEnvs].join(', ') || 'none'})`,
          [{ path: `resources.${name}.apiKeyEnv`, message: `'${resource.apiKeyEnv}' is not allowed` }]);
      }
    }
    res.status(201).json(await store.addResources(input));
  });
  r.get('/resources', async (req, res) => {
    const { limit } = parseOr400(ResourcesListQuery, req.query, 'query');
    res.json({ items: await store.listResources(limit) });
  });
  r.get('/resources/latest', async (_req, res) => {
    const latest = await store.getLatestResources();
    if (!latest) throw new HttpProblem(404, 'not-found', 'no resources published yet: POST /v1/agl/resources first');
    res.json(latest);
  });
  r.get('/resources/:id', async (req, res) => {
    const found = await store.getResources(req.params.id);
    if (!found) throw notFound('resources', req.params.id);
    res.json(found);
  });

  r.get('/workers', async (_req, res) => {
    res.json({ items: await store.listWorkers() });
  });
  r.get('/workers/:id', async (req, res) => {
    const worker = await store.getWorker(req.params.id);
    if (!worker) throw notFound('worker', req.params.id);
    res.json(worker);
  });
  r.post('/workers/:id/heartbeat', async (req, res) => {
    // An empty body is a plain heartbeat.
    const patch = req.body === undefined ? {} : parseOr400(WorkerHeartbeatRequest, req.body);
    res.json(await store.heartbeatWorker(req.params.id, patch));
  });

  r.get('/agents', (_req, res) => {
    res.json({ items: ctx.knownAgents?.() ?? [] });
  });

  r.get('/statistics', async (_req, res) => {
    res.json(await store.statistics());
  });

  return r;
}
