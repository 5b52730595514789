/**
 * roleFetch(): the role of each LLM call, for agent code run outside a rollout (see its doc below).
 */
import { HEADERS } from '../protocol/spans.js';
import { currentAgentName } from './context.js';

/**
 * A fetch for an OpenAI client that names each call's role (header x-agl-agent, from the innermost
 * `operation(..., { agentName })`), outside rollouts too: what a daemon serving one policy per role needs to pick the
 * policy (`agl serve --model <checkpoint of a run with policies:>`). Inside a rollout the runner names the role already.
 *   new OpenAI({ baseURL, apiKey, fetch: roleFetch() })
 *   new ChatOpenAI({ model, apiKey, configuration: { baseURL, fetch: roleFetch() } })
 */
export function roleFetch(inner?: typeof fetch): typeof fetch {
  return function fetchWithRole(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) {
    const send = inner ?? globalThis.fetch;
    const role = currentAgentName();
    if (!role) return send(input, init);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has(HEADERS.agent)) headers.set(HEADERS.agent, role);
    return send(input, { ...init, headers });
  } as typeof fetch;
}
