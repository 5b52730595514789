/**
 * Store API routes for training runs, their metrics and the transitions the algorithm used (under /v1/agl):
 *   POST /training-runs   GET /training-runs?agent=   GET /training-runs/:id   POST /training-runs/:id (patch)
 *   POST /training-runs/:id/metrics   GET /training-runs/:id/metrics?afterStep=
 *   POST /transitions     GET /transitions?runId=&rolloutId=&step=&limit=
 * Declared once for the route table (store-api.ts).
 */
import {
  AddMetricsRequest,
  AddTransitionsRequest,
  CreateTrainingRunRequest,
  MetricsQuery,
  TrainingRunListQuery,
  TransitionListQuery,
  UpdateTrainingRunRequest,
} from '../../protocol/api.js';
import type { ServerContext } from './server-context.js';
import { HttpProblem, notFound, parseOr400 } from './errors.js';
import { json, type StoreRoute } from './route.js';

export function trainingRoutes(ctx: ServerContext): StoreRoute[] {
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

  return [
    {
      method: 'POST',
      path: '/training-runs',
      handle: async ({ body }) => json(201, await store.createTrainingRun(parseOr400(CreateTrainingRunRequest, body))),
    },
    {
      method: 'GET',
      path: '/training-runs',
      async handle({ query }) {
        const { agent } = parseOr400(TrainingRunListQuery, query, 'query');
        return json(200, { items: await store.listTrainingRuns(agent) });
      },
    },
    { method: 'GET', path: '/training-runs/:id', handle: async ({ params }) => json(200, await mustExist(params.id!)) },
    {
      method: 'POST',
      path: '/training-runs/:id',
      async handle({ body, params }) {
        const patch = parseOr400(UpdateTrainingRunRequest, body);
        await mustExist(params.id!);
        return json(200, await store.updateTrainingRun(params.id!, patch));
      },
    },

    {
      method: 'POST',
      path: '/training-runs/:id/metrics',
      async handle({ body, params }) {
        const { points } = parseOr400(AddMetricsRequest, body);
        await mustExist(params.id!);
        await store.addMetrics(points.map((p) => ({ ...p, runId: params.id! })));
        return json(201, { count: points.length });
      },
    },
    {
      method: 'GET',
      path: '/training-runs/:id/metrics',
      async handle({ query, params }) {
        const { afterStep } = parseOr400(MetricsQuery, query, 'query');
        await mustExist(params.id!);
        return json(200, { items: await store.queryMetrics(params.id!, afterStep) });
      },
    },

    {
      method: 'POST',
      path: '/transitions',
      async handle({ body }) {
        const { transitions } = parseOr400(AddTransitionsRequest, body);
        await mustAllExist(transitions);
        await store.addTransitions(transitions);
        return json(201, { count: transitions.length });
      },
    },
    {
      method: 'GET',
      path: '/transitions',
      handle: async ({ query }) => json(200, { items: await store.queryTransitions(parseOr400(TransitionListQuery, query, 'query')) }),
    },
  ];
}
