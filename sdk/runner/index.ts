/**
 * What the runner uses inside an agent's process (daemon/runner/worker-js.ts, execute.ts): running one attempt of an
 * agent function with its rollout context, trace context on fetch, and the batching span sink. Agents never import
 * this; the daemon never imports the agent API's internals, only this (its HTTP client is client/, not part of the SDK).
 */
export { BatchingSink } from './sink.js';
export { installTraceparentFetch, recordFailedAttempt, runAttempt } from './run.js';
export type { AttemptOutcome, AttemptSpec } from './run.js';
export type { SpanSink } from '../context.js';
