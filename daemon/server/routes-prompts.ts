/**
 * Store API handlers for a prompt optimization's records (routes declared in protocol/routes.ts, their schemas in
 * protocol/api-prompts.ts; the rules are the store's, daemon/store/prompt-records.ts):
 *   addPromptCandidate   listPromptCandidates (?runId=)   getPromptCandidate   decidePromptCandidate
 *   addOptimizerCall     listOptimizerCalls (?runId=)
 *   promotePrompt        listPromotedPrompts (?agent=)    clearPromotedPrompt  listPromptPromotions (?agent=&name=)
 * A write naming a run, a parent or a candidate that does not exist is a 404 naming the field; one that contradicts
 * what is stored (another candidate under a stored id, a second decision, another call at a stored seq) is the
 * store's 409, which says what differs.
 */
import type { ServerContext } from './server-context.js';
import { HttpProblem, notFound } from './errors.js';
import { json, type RouteHandlers } from './route.js';

/** 404 naming the request's field that names something missing. */
const missing = (field: string, what: string) => new HttpProblem(404, 'not-found', `${field}: ${what} not found`, [{ path: field, message: 'not found' }]);

export function promptRoutes(ctx: ServerContext) {
  const { store } = ctx;
  const runMustExist = async (runId: string) => {
    if (!(await store.getTrainingRun(runId))) throw missing('runId', `run '${runId}'`);
  };

  return {
    addPromptCandidate: {
      async handle({ body }) {
        await runMustExist(body.runId);
        for (const [i, parent] of body.parents.entries()) {
          if ((await store.getPromptCandidate(parent))?.runId !== body.runId)
            throw missing(`parents[${i}]`, `prompt candidate '${parent}' of run '${body.runId}'`);
        }
        return json(201, await store.addPromptCandidate(body));
      },
    },
    listPromptCandidates: { handle: async ({ query }) => json(200, { items: await store.listPromptCandidates(query.runId) }) },
    getPromptCandidate: {
      async handle({ params }) {
        const candidate = await store.getPromptCandidate(params.id);
        if (!candidate) throw notFound('prompt candidate', params.id);
        return json(200, candidate);
      },
    },
    decidePromptCandidate: { handle: async ({ params, body }) => json(200, await store.decidePromptCandidate(params.id, body)) },

    addOptimizerCall: {
      async handle({ body }) {
        await runMustExist(body.runId);
        return json(201, await store.addOptimizerCall(body));
      },
    },
    listOptimizerCalls: { handle: async ({ query }) => json(200, { items: await store.listOptimizerCalls(query.runId) }) },

    promotePrompt: {
      async handle({ body }) {
        if (body.candidateId !== null && !(await store.getPromptCandidate(body.candidateId)))
          throw missing('candidateId', `prompt candidate '${body.candidateId}'`);
        return json(201, await store.promotePrompt(body));
      },
    },
    listPromotedPrompts: { handle: async ({ query }) => json(200, { items: await store.listPromotedPrompts(query.agent) }) },
    clearPromotedPrompt: { handle: async ({ body }) => json(200, { cleared: await store.clearPromotedPrompt(body) }) },
    listPromptPromotions: { handle: async ({ query }) => json(200, { items: await store.listPromptPromotions(query.agent, query.name) }) },
  } satisfies Partial<RouteHandlers>;
}
