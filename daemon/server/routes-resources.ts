/**
 * Store API routes for resources, workers, known agents and statistics (mounted under /v1/agl):
 *   POST /resources   GET /resources?limit=   GET /resources/latest   GET /resources/:id
 *   GET  /workers     GET /workers/:id        POST /workers/:id/heartbeat
 *   GET  /agents (agents seen in enqueued rollouts)   GET /statistics
 * Declared once for the route table (store-api.ts).
 */
import { AddResourcesRequest, ResourcesListQuery, WorkerHeartbeatRequest } from '../../protocol/api.js';
import type { ServerContext } from './server-context.js';
import { HttpProblem, notFound, parseOr400 } from './errors.js';
import { DEFAULT_KEY_ENVS } from './gateway-upstream.js';
import { json, type StoreRoute } from './route.js';

function isHttpUrl(text: string): boolean {
  try {
    return /^https?:$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}

export function resourceRoutes(ctx: ServerContext): StoreRoute[] {
  const { store } = ctx;
  const keyEnvs = new Set(ctx.allowedKeyEnvs ?? DEFAULT_KEY_ENVS);
  return [
    {
      method: 'POST',
      path: '/resources',
      async handle({ body }) {
        const input = parseOr400(AddResourcesRequest, body);
        // The gateway refuses such a resource at call time too; saying so now names the field and the fix.
        for (const [name, resource] of Object.entries(input.resources)) {
          if (resource.type !== 'llm') continue;
          const url = resource.upstreamUrl;
          if ((resource.backend === 'upstream' && !url) || (url !== undefined && !isHttpUrl(url))) {
            const message = url ? `'${url}' is not an http(s) URL` : "is required when backend is 'upstream'";
            throw new HttpProblem(400, 'validation', `invalid body: resources.${name}.upstreamUrl: ${message}`, [
              { path: `resources.${name}.upstreamUrl`, message },
            ]);
          }
          if (resource.apiKeyEnv && !keyEnvs.has(resource.apiKeyEnv)) {
            throw new HttpProblem(
              403,
              'key-env-not-allowed',
              `resources.${name}.apiKeyEnv: '${resource.apiKeyEnv}' is not a variable this daemon may send as an API key; start it with --upstream-key-env ${resource.apiKeyEnv} (allowed now: ${[...keyEnvs].join(', ') || 'none'})`,
              [{ path: `resources.${name}.apiKeyEnv`, message: `'${resource.apiKeyEnv}' is not allowed` }],
            );
          }
        }
        return json(201, await store.addResources(input));
      },
    },
    {
      method: 'GET',
      path: '/resources',
      async handle({ query }) {
        const { limit } = parseOr400(ResourcesListQuery, query, 'query');
        return json(200, { items: await store.listResources(limit) });
      },
    },
    {
      method: 'GET',
      path: '/resources/latest',
      async handle() {
        const latest = await store.getLatestResources();
        if (!latest) throw new HttpProblem(404, 'not-found', 'no resources published yet: POST /v1/agl/resources first');
        return json(200, latest);
      },
    },
    {
      method: 'GET',
      path: '/resources/:id',
      async handle({ params }) {
        const found = await store.getResources(params.id!);
        if (!found) throw notFound('resources', params.id!);
        return json(200, found);
      },
    },

    { method: 'GET', path: '/workers', handle: async () => json(200, { items: await store.listWorkers() }) },
    {
      method: 'GET',
      path: '/workers/:id',
      async handle({ params }) {
        const worker = await store.getWorker(params.id!);
        if (!worker) throw notFound('worker', params.id!);
        return json(200, worker);
      },
    },
    {
      method: 'POST',
      path: '/workers/:id/heartbeat',
      async handle({ body, params }) {
        // An empty body is a plain heartbeat.
        const patch = body === undefined ? {} : parseOr400(WorkerHeartbeatRequest, body);
        return json(200, await store.heartbeatWorker(params.id!, patch));
      },
    },

    { method: 'GET', path: '/agents', handle: () => json(200, { items: ctx.knownAgents?.() ?? [] }) },

    { method: 'GET', path: '/statistics', handle: async () => json(200, await store.statistics()) },
  ];
}
