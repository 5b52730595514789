/**
 * Store API handlers for resources, workers, known agents and statistics (routes declared in protocol/routes.ts):
 *   addResources   listResources (?limit=)   getLatestResources   getResources
 *   listWorkers    getWorker                 heartbeatWorker
 *   listAgents (agents seen in enqueued rollouts)   getStatistics
 */
import type { ServerContext } from './server-context.js';
import { HttpProblem, notFound } from './errors.js';
import { DEFAULT_KEY_ENVS } from './gateway-upstream.js';
import { json, type RouteHandlers } from './route.js';

function isHttpUrl(text: string): boolean {
  try {
    return /^https?:$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}

export function resourceRoutes(ctx: ServerContext) {
  const { store } = ctx;
  const keyEnvs = new Set(ctx.allowedKeyEnvs ?? DEFAULT_KEY_ENVS);
  return {
    addResources: {
      async handle({ body: input }) {
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
    listResources: { handle: async ({ query: { limit } }) => json(200, { items: await store.listResources(limit) }) },
    getLatestResources: {
      async handle() {
        const latest = await store.getLatestResources();
        if (!latest) throw new HttpProblem(404, 'not-found', 'no resources published yet: POST /v1/agl/resources first');
        return json(200, latest);
      },
    },
    getResources: {
      async handle({ params }) {
        const found = await store.getResources(params.id);
        if (!found) throw notFound('resources', params.id);
        return json(200, found);
      },
    },

    listWorkers: { handle: async () => json(200, { items: await store.listWorkers() }) },
    getWorker: {
      async handle({ params }) {
        const worker = await store.getWorker(params.id);
        if (!worker) throw notFound('worker', params.id);
        return json(200, worker);
      },
    },
    // No body is a plain heartbeat.
    heartbeatWorker: { handle: async ({ body, params }) => json(200, await store.heartbeatWorker(params.id, body)) },

    listAgents: { handle: () => json(200, { items: ctx.knownAgents?.() ?? [] }) },

    getStatistics: { handle: async () => json(200, await store.statistics()) },
  } satisfies Partial<RouteHandlers>;
}
