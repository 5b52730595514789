/**
 * Store API handlers for runs (training, optimization, evaluation), their metrics and the transitions the algorithm used
 * (routes declared in protocol/routes.ts):
 *   createTrainingRun   listTrainingRuns (?agent=&kind=)   getTrainingRun   updateTrainingRun (patch)
 *   addMetrics          listMetrics (?afterStep=)
 *   addTransitions      listTransitions (?runId=&rolloutId=&step=&limit=)
 */
import type { ServerContext } from './server-context.js';
import { HttpProblem, notFound } from './errors.js';
import { json, type RouteHandlers } from './route.js';

export function trainingRoutes(ctx: ServerContext) {
  const { store } = ctx;
  const mustExist = async (id: string) => {
    const run = await store.getTrainingRun(id);
    if (!run) throw notFound('training run', id);
    return run;
  };

  /** Transitions name a run, a rollout and one of its attempts: each distinct one must exist (404 naming the first that does not). */
  const mustAllExist = async (transitions: { runId: string; rolloutId: string; attemptId: string }[]) => {
    const at = (i: number, field: string) => [{ path: `transitions[${i}].${field}`, message: 'not found' }];
    const seen = new Set<string>();
    for (const [i, t] of transitions.entries()) {
      if (!seen.has(`r:${t.runId}`)) {
        seen.add(`r:${t.runId}`);
        if (!(await store.getTrainingRun(t.runId))) throw new HttpProblem(404, 'not-found', `training run '${t.runId}' not found`, at(i, 'runId'));
      }
      if (seen.has(`a:${t.rolloutId}/${t.attemptId}`)) continue;
      seen.add(`a:${t.rolloutId}/${t.attemptId}`);
      const attempt = await store.getAttempt(t.attemptId);
      if (attempt?.rolloutId === t.rolloutId) continue;
      if (!(await store.getRollout(t.rolloutId))) throw new HttpProblem(404, 'not-found', `rollout '${t.rolloutId}' not found`, at(i, 'rolloutId'));
      throw new HttpProblem(404, 'not-found', `attempt '${t.attemptId}' of rollout '${t.rolloutId}' not found`, at(i, 'attemptId'));
    }
  };

  return {
    createTrainingRun: { handle: async ({ body }) => json(201, await store.createTrainingRun(body)) },
    listTrainingRuns: { handle: async ({ query: { agent, kind } }) => json(200, { items: await store.listTrainingRuns(agent, kind) }) },
    getTrainingRun: { handle: async ({ params }) => json(200, await mustExist(params.id)) },
    updateTrainingRun: {
      async handle({ body: patch, params }) {
        await mustExist(params.id);
        return json(200, await store.updateTrainingRun(params.id, patch));
      },
    },

    addMetrics: {
      async handle({ body: { points }, params }) {
        await mustExist(params.id);
        await store.addMetrics(points.map((p) => ({ ...p, runId: params.id })));
        return json(201, { count: points.length });
      },
    },
    listMetrics: {
      async handle({ query: { afterStep }, params }) {
        await mustExist(params.id);
        return json(200, { items: await store.queryMetrics(params.id, afterStep) });
      },
    },

    addTransitions: {
      async handle({ body: { transitions } }) {
        await mustAllExist(transitions);
        await store.addTransitions(transitions);
        return json(201, { count: transitions.length });
      },
    },
    listTransitions: { handle: async ({ query }) => json(200, { items: await store.queryTransitions(query) }) },
  } satisfies Partial<RouteHandlers>;
}
