/**
 * The gateway's routing step: which attempt a call is recorded into (checked before anything is forwarded: a call
 * naming an attempt that is unknown, another rollout's or ended is refused) and which published LLM resource, role
 * and policy serve it. The rollouts and resources calls name are cached briefly: they are read on every call.
 */
import type { Request } from 'express';
import { HEADERS } from '../../protocol/spans.js';
import { LlmResource, type Resources, type Rollout } from '../../protocol/store.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { pickLlmResource, ResourcesCache } from '../store/resources-cache.js';
import { type CallRequest, GatewayError, type OpenAiBody } from './gateway-backend.js';
import { routeByRole } from './gateway-roles.js';
import type { CallContext } from './gateway-spans.js';
import type { ServedPolicies } from './served-policies.js';

export interface GatewayContext {
  store: Pick<LightningStore, 'addSpans' | 'getRollout' | 'getAttempt' | 'getResources' | 'getLatestResources'>;
  /** The policies the daemon serves itself (local backend, routing by role, versions); absent = none. */
  policies?: ServedPolicies;
  /**
   * The daemon's bearer token: required on the bare /v1/* routes. The per-attempt routes need none: the
   * rollout and attempt ids in the URL (random, known only to the runner and the agent) are the capability.
   */
  token?: string;
  /** Environment variables an upstream resource's `apiKeyEnv` may name (default: OPENAI_API_KEY only). */
  allowedKeyEnvs?: readonly string[];
}

/** A call routed: what its backend serves, and where its span goes (null: the call names no rollout, nothing is recorded). */
export interface RoutedCall {
  request: CallRequest;
  record: CallContext | null;
}

/** The attempt a call names, checked to be recordable (or none named). */
interface CallAttempt {
  rolloutId: string | null;
  attemptId: string | null;
  rollout: Rollout | null;
}

/** Attempt statuses no call can be recorded into any more (`unresponsive` is revived by its next span). */
const ENDED_ATTEMPT = new Set(['succeeded', 'failed', 'timeout']);
const NO_ATTEMPT: CallAttempt = { rolloutId: null, attemptId: null, rollout: null };

const LATEST_TTL_MS = 250;
const ROLLOUT_TTL_MS = 5_000;

/** The rollouts calls name, cached briefly (a call's rollout is read on every call of its attempt). */
class RolloutCache {
  private readonly rollouts = new Map<string, { at: number; rollout: Rollout }>();

  constructor(private readonly store: GatewayContext['store']) {}

  async get(id: string): Promise<Rollout | null> {
    const hit = this.rollouts.get(id);
    if (hit && Date.now() - hit.at < ROLLOUT_TTL_MS) return hit.rollout;
    const rollout = await this.store.getRollout(id);
    if (rollout) {
      if (this.rollouts.size > 10_000) this.rollouts.clear();
      this.rollouts.set(id, { at: Date.now(), rollout });
    }
    return rollout;
  }
}

function attemptNotFound(rolloutId: string | null, attemptId: string): GatewayError {
  const where = rolloutId ? ` of rollout '${rolloutId}'` : '';
  return new GatewayError(
    404,
    `attempt '${attemptId}'${where} not found: use the base URL the runner gave this attempt; the call was not forwarded`,
    'attempt_not_found',
    'attemptId',
  );
}

export class CallRouter {
  private readonly rollouts: RolloutCache;
  private readonly resourcesCache: ResourcesCache;

  constructor(private readonly ctx: GatewayContext) {
    this.rollouts = new RolloutCache(ctx.store);
    this.resourcesCache = new ResourcesCache(ctx.store, LATEST_TTL_MS);
  }

  /** The attempt a call is for (path or x-agl-* headers), checked to be recordable: else refused before any forwarding. */
  async attemptOf(req: Request): Promise<CallAttempt> {
    const rolloutId = (req.params.rolloutId as string | undefined) ?? req.get(HEADERS.rolloutId) ?? null;
    const attemptId = (req.params.attemptId as string | undefined) ?? req.get(HEADERS.attemptId) ?? null;
    if (!rolloutId && !attemptId) return NO_ATTEMPT;
    if (!attemptId)
      throw new GatewayError(
        400,
        `rollout '${rolloutId}' given without an attempt id (header ${HEADERS.attemptId}); the call was not forwarded`,
        'attempt_missing',
      );
    const attempt = await this.ctx.store.getAttempt(attemptId);
    if (!attempt || (rolloutId && attempt.rolloutId !== rolloutId)) {
      if (rolloutId && !(await this.rollouts.get(rolloutId)))
        throw new GatewayError(
          404,
          `rollout '${rolloutId}' not found: use the base URL the runner gave this attempt; the call was not forwarded`,
          'rollout_not_found',
          'rolloutId',
        );
      throw attemptNotFound(rolloutId, attemptId);
    }
    if (ENDED_ATTEMPT.has(attempt.status)) {
      throw new GatewayError(
        409,
        `attempt '${attemptId}' already ended (status '${attempt.status}'): its calls can no longer be recorded, so the call was not forwarded`,
        'attempt_ended',
        'attemptId',
      );
    }
    return { rolloutId: attempt.rolloutId, attemptId, rollout: await this.rollouts.get(attempt.rolloutId) };
  }

  /** The resources a call sees: its rollout's own version, else the latest published. */
  resourcesFor(rollout: Rollout | null): Promise<Resources | null> {
    return this.resourcesCache.forRollout(rollout);
  }

  /** Routes a call that started at `startTime`: its attempt, its resource, and the model that serves its role. */
  async route(kind: CallRequest['kind'], body: OpenAiBody, req: Request, startTime: number): Promise<RoutedCall> {
    const attempt = await this.attemptOf(req);
    const resources = await this.resourcesFor(attempt.rollout);
    const picked = pickLlmResource(resources, body.model) ?? LlmResource.parse({ type: 'llm', endpoint: '', model: body.model ?? 'default', backend: 'local' });
    // One policy per role: the call's role decides which model serves it (gateway-roles.ts); a daemon serving
    // policies per role gives its routing to local resources that bring none.
    const served = picked.backend === 'local' && !picked.roleModels ? this.ctx.policies?.routing() : null;
    const routed = served ? { ...picked, ...served } : picked;
    const { resource, role } = routeByRole(routed, req.get(HEADERS.agent));
    const request: CallRequest = { kind, body, resource };
    if (!attempt.rolloutId || !attempt.attemptId) return { request, record: null };
    const record: CallContext = {
      rolloutId: attempt.rolloutId,
      attemptId: attempt.attemptId,
      traceparent: req.get('traceparent'),
      resourcesId: resources?.id ?? null,
      resourcesVersion: resources?.version ?? null,
      startTime,
      streamed: body.stream === true,
      role,
      policy: resource.roleModels ? { name: resource.model, version: this.ctx.policies?.version(resource.model) ?? null } : null,
      updates: resource.backend === 'local' ? (this.ctx.policies?.version(resource.model) ?? null) : null,
    };
    return { request, record };
  }
}
