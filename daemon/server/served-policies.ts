/**
 * The policies a daemon serves itself: what the gateway's local backend calls, how it routes calls by role, the
 * version it records with each call, and what GET/POST /v1/agl/policy answer. One interface, implemented by `agl serve
 * --model` (one model or a training checkpoint's policy set: daemon/algorithm/served-policy-set.ts) and by `agl train`'s
 * host (the policies the run trains, live: daemon/algorithm/training-host.ts). Given to the server when its context is
 * made; nothing patches it in afterwards.
 */
import type { PolicyInfo } from '../../protocol/api.js';
import type { PolicyRouting } from '../../protocol/policy-set.js';
import type { PolicyModel } from '../model/policy-contract.js';

export interface ServedPolicies {
  /** The model serving calls for `name`: a policy by its name, every other name by the default policy; null: none (503). */
  model(name: string): PolicyModel | null | Promise<PolicyModel | null>;
  /** The routing given to local LLM resources that bring none of their own (each role to its policy); null: one serves every call. */
  routing(): PolicyRouting | null;
  /** A served policy's version (its training updates so far), recorded with each call it serves; null for the default policy. */
  version(name: string): number | null;
  /** What is served (GET /v1/agl/policy). */
  describe(): PolicyInfo;
  /** Swaps in another folder's weights (POST /v1/agl/policy/load); absent where the policies cannot be swapped (a run training them). */
  load?(dir: string): Promise<PolicyInfo>;
}

/**
 * Models served by name, as a function finds them (tests, benchmarks, embedders holding their own models): no
 * routing, no versions; `describe` names what `name` says.
 */
export function servedModels(find: (name: string) => PolicyModel | null, name = 'models'): ServedPolicies {
  return {
    model: find,
    routing: () => null,
    version: () => null,
    describe: () => ({ spec: name, engine: 'tfjs', name, backend: null, loadedAt: null, reloads: 0 }),
  };
}
