/**
 * One policy per role at the gateway: a call is served by its role's model. The role is the call's `x-agl-agent`
 * header (the SDK sets it from the current `operation(..., { agentName })`); the LLM resource maps roles to models
 * (`roleModels`, published by `agl train` with `policies:`). A role it does not list gets the resource's own model
 * (the default policy); a call that names no role is refused with an error naming the header, or served by the
 * default when the resource says so (`unassignedRole: 'default'`).
 */
import { HEADERS } from '../../protocol/spans.js';
import type { LlmResource } from '../../protocol/store.js';
import { GatewayError } from './gateway-backend.js';

export interface RoutedCall {
  /** The resource with `model` set to the model that serves this call. */
  resource: LlmResource;
  /** The call's role, as it came in (null when none). */
  role: string | null;
}

export function routeByRole(resource: LlmResource, role: string | undefined): RoutedCall {
  const roles = resource.roleModels;
  const named = role?.trim() || null;
  if (!roles || Object.keys(roles).length === 0) return { resource, role: named };
  if (named === null) {
    if (resource.unassignedRole === 'default') return { resource, role: null };
    throw new GatewayError(
      400,
      `this call names no agent role (header ${HEADERS.agent}), and the run serves each role from its own policy (${Object.keys(roles).join(', ')}): ` +
        `make the call inside operation(name, fn, { agentName }) of the SDK, or set unassignedCalls: default in the run's config to serve it with the default policy`,
      'role_missing',
      HEADERS.agent,
    );
  }
  const model = Object.hasOwn(roles, named) ? roles[named]! : resource.model;
  return { resource: model === resource.model ? resource : { ...resource, model }, role: named };
}
