/**
 * Store API routes for training runs, their metrics and the transitions the algorithm used (under /v1/agl):
 *   POST /training-runs   GET /training-runs?agent=   GET /training-runs/:id   POST /training-runs/:id (patch)
 *   POST /training-runs/:id/metrics   GET /training-runs/:id/metrics?afterStep=
 *   POST /transitions     GET /transitions?runId=&rolloutId=&step=&limit=
 */
import { Router } from 'express';
import {
  AddMetricsRequest, AddTransitionsRequest, CreateTrainingRunRequest, MetricsQuery, TrainingRunListQuery,
  TransitionListQuery, UpdateTrainingRunRequest,
} from '../../protocol/api.js';
import { HttpProblem, notFound, parseOr400 } from './errors.js';
import type { ServerContext } from './app.js';

export function trainingRouter(ctx: ServerContext): Router {
  const r = Router();
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
      if (!seen.has(`r:${t.runId}`)) { seen.add(`r:${t.runId}`); if (!(await store.getTrainingRun(t.runId))) throw new HttpProblem(404, 'not-found', `training run '${t.runId}' not found`, at(i, 'runId')); }
      if (seen.has(`a:${t.rolloutId}/${t.attemptId}`)) continue;
      seen.add(`a:${t.rolloutId}/${t.attemptId}`);
      const attempt = await store.getAttempt(t.attemptId);
      if (attempt?.rolloutId === t.rolloutId) continue;
      if (!(await store.getRollout(t.rolloutId))) throw new HttpProblem(404, 'not-found', `rollout '${t.rolloutId}' not found`, at(i, 'rolloutId'));
      throw new HttpProblem(404, 'not-found', `attempt '${t.attemptId}' of rollout '${t.rolloutId}' not found`, at(i, 'attemptId'));
    }
  };

  r.post('/training-runs', async (req, res) => {
    res.status(201).json(await store.createTrainingRun(parseOr400(CreateTrainingRunRequest, req.body)));
  });
  r.get('/training-runs', async (req, res) => {
    const { agent } = parseOr400(TrainingRunListQuery, req.query, 'query');
    res.json({ items: await store.listTrainingRuns(agent) });
  });
  r.get('/training-runs/:id', async (req, res) => {
    res.json(await mustExist(req.params.id));
  });
  r.post('/training-runs/:id', async (req, res) => {
    const patch = parseOr400(UpdateTrainingRunRequest, req.body);
    await mustExist(req.params.id);
    res.json(await store.updateTrainingRun(req.params.id, patch));
  });

  r.post('/training-runs/:id/metrics', async (req, res) => {
    const { points } = parseOr400(AddMetricsRequest, req.body);
    await mustExist(req.params.id);
    await store.addMetrics(points.map((p) => ({ ...p, runId: req.params.id })));
    res.status(201).json({ count: points.length });
  });
  r.get('/training-runs/:id/metrics', async (req, res) => {
    const { afterStep } = parseOr400(MetricsQuery, req.query, 'query');
    await mustExist(req.params.id);
    res.json({ items: await store.queryMetrics(req.params.id, afterStep) });
  });

  r.post('/transitions', async (req, res) => {
    const { transitions } = parseOr400(AddTransitionsRequest, req.body);
    await mustAllExist(transitions);
    await store.addTransitions(transitions);
    res.status(201).json({ count: transitions.length });
  });
  r.get('/transitions', async (req, res) => {
    res.json({ items: await store.queryTransitions(parseOr400(TransitionListQuery, req.query, 'query')) });
  });

  return r;
}
