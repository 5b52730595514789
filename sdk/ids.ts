/**
 * Trace and span ids shared by the SDK, the runner and the gateway. Each attempt gets a deterministic
 * trace id and root span id, so spans recorded by different processes (the agent's SDK, the gateway
 * serving its LLM calls, an OTLP exporter) join one tree without passing ids around.
 */
import { createHash, randomFillSync } from 'node:crypto';

function hexDigest(text: string, chars: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, chars);
}

/** 32 hex chars: the trace of one attempt. */
export function traceIdForAttempt(attemptId: string): string {
  return hexDigest(`agl-trace:${attemptId}`, 32);
}

/** 16 hex chars: the root span (`agentlightning.rollout`) of one attempt. */
export function rootSpanIdForAttempt(attemptId: string): string {
  return hexDigest(`agl-root:${attemptId}`, 16);
}

/** Random ids come from a buffer the OS CSPRNG refills every 512 span ids: one getrandom call, not one per id. */
const POOL = Buffer.allocUnsafe(4096);
let poolAt = POOL.length;
/** `bytes` random bytes as hex, from the pool. */
export function randomHex(bytes: number): string {
  if (poolAt + bytes > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const hex = POOL.toString('hex', poolAt, poolAt + bytes);
  poolAt += bytes;
  return hex;
}

export function newSpanId(): string {
  return randomHex(8);
}

export function newTraceId(): string {
  return randomHex(16);
}

/** Parses a W3C `traceparent` header ("00-<trace>-<span>-<flags>"); null when malformed. */
export function parseTraceparent(header: string | undefined): { traceId: string; spanId: string } | null {
  if (!header) return null;
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(header.trim());
  return m ? { traceId: m[1], spanId: m[2] } : null;
}

export function formatTraceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

/** The per-attempt OpenAI base URL on the gateway: `<origin>/rollout/<rid>/attempt/<aid>/v1`. */
export function attemptBaseUrl(gatewayEndpoint: string, rolloutId: string, attemptId: string): string {
  const root = gatewayEndpoint.replace(/\/+$/, '').replace(/\/v1$/, '');
  return `${root}/rollout/${encodeURIComponent(rolloutId)}/attempt/${encodeURIComponent(attemptId)}/v1`;
}
