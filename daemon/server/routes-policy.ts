/**
 * The policies a daemon serves itself (served-policies.ts), seen and swapped over HTTP (token required):
 *   GET  /v1/agl/policy          -> PolicyInfo (what is served: folder, engine, name, backend, when loaded, how often;
 *                                   `agl train`'s host: the run and its policies' updates)
 *   POST /v1/agl/policy/load     {dir} -> PolicyInfo once the folder's weights serve the next calls
 * The second is how a trainer pushes new weights into a sampling daemon after each update (agl train's
 * engine.sampler.push): the same role as vLLM's reload endpoints. A daemon serving no policy answers 404; policies a
 * run is training cannot be swapped (409). Bodies are strict, errors problem+json.
 */
import { Router } from 'express';
import { PolicyLoadRequest } from '../../protocol/api.js';
import { requireToken } from './auth.js';
import { jsonBody } from './body.js';
import { HttpProblem, parseOr400 } from './errors.js';
import type { ServerContext } from './server-context.js';

export function policyRouter(ctx: ServerContext): Router {
  const r = Router();
  const control = () => {
    if (!ctx.policies) throw new HttpProblem(404, 'not-found', 'this daemon serves no policy of its own (start it with agl serve --model)');
    return ctx.policies;
  };
  r.get('/policy', requireToken(ctx.token), (_req, res) => {
    res.json(control().describe());
  });
  r.post('/policy/load', requireToken(ctx.token), ...jsonBody(ctx.bodyLimit), async (req, res) => {
    const { dir } = parseOr400(PolicyLoadRequest, req.body);
    const served = control();
    if (!served.load)
      throw new HttpProblem(
        409,
        'conflict',
        `this daemon's policies are being trained (${served.describe().spec}): they cannot be swapped while the run goes on`,
      );
    try {
      res.json(await served.load(dir));
    } catch (e) {
      if (e instanceof HttpProblem) throw e;
      throw new HttpProblem(400, 'validation', `cannot serve ${dir}: ${(e as Error).message}`, [{ path: 'dir', message: (e as Error).message }]);
    }
  });
  return r;
}
