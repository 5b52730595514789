/**
 * The ids every side shares, defined once: the agent's SDK, the runner, the gateway and the store. Each attempt gets a
 * deterministic trace id and root span id (SHA-256 of the attempt id), so spans recorded by different processes (the
 * agent's SDK, the gateway serving its LLM calls, an OTLP exporter, the Python runner, which hashes the same way) join
 * one tree without passing ids around. Random ids come from the platform's CSPRNG (`crypto.getRandomValues`, in
 * Node and browsers alike), so this file needs neither node nor the DOM.
 */

interface Platform {
  crypto: { getRandomValues<T extends Uint8Array>(a: T): T };
  TextEncoder: new () => { encode(s: string): Uint8Array };
}
const platform = globalThis as unknown as Platform;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
function toHex(bytes: Uint8Array, from = 0, to = bytes.length): string {
  let out = '';
  for (let i = from; i < to; i++) out += HEX[bytes[i]!];
  return out;
}

// SHA-256 (FIPS 180-4), for the deterministic ids: a few hashes per attempt, never on a hot path.
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

export function sha256(data: Uint8Array): Uint8Array {
  const bitLength = data.length * 8;
  const padded = new Uint8Array(Math.ceil((data.length + 9) / 64) * 64);
  padded.set(data);
  padded[data.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bitLength / 2 ** 32));
  view.setUint32(padded.length - 4, bitLength >>> 0);
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < padded.length; off += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(off + t * 4);
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(w[t - 15]!, 7) ^ rotr(w[t - 15]!, 18) ^ (w[t - 15]! >>> 3);
      const s1 = rotr(w[t - 2]!, 17) ^ rotr(w[t - 2]!, 19) ^ (w[t - 2]! >>> 10);
      w[t] = (w[t - 16]! + s0 + w[t - 7]! + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = h as unknown as number[];
    for (let t = 0; t < 64; t++) {
      const t1 = (hh! + (rotr(e!, 6) ^ rotr(e!, 11) ^ rotr(e!, 25)) + ((e! & f!) ^ (~e! & g!)) + K[t]! + w[t]!) >>> 0;
      const t2 = ((rotr(a!, 2) ^ rotr(a!, 13) ^ rotr(a!, 22)) + ((a! & b!) ^ (a! & c!) ^ (b! & c!))) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d! + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] = (h[0]! + a!) >>> 0;
    h[1] = (h[1]! + b!) >>> 0;
    h[2] = (h[2]! + c!) >>> 0;
    h[3] = (h[3]! + d!) >>> 0;
    h[4] = (h[4]! + e!) >>> 0;
    h[5] = (h[5]! + f!) >>> 0;
    h[6] = (h[6]! + g!) >>> 0;
    h[7] = (h[7]! + hh!) >>> 0;
  }
  const out = new Uint8Array(32);
  const ov = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) ov.setUint32(i * 4, h[i]!);
  return out;
}

function hexDigest(text: string, chars: number): string {
  return toHex(sha256(new platform.TextEncoder().encode(text))).slice(0, chars);
}

/** 32 hex chars: the trace of one attempt. */
export function traceIdForAttempt(attemptId: string): string {
  return hexDigest(`agl-trace:${attemptId}`, 32);
}

/** 16 hex chars: the root span (`agentlightning.rollout`) of one attempt. */
export function rootSpanIdForAttempt(attemptId: string): string {
  return hexDigest(`agl-root:${attemptId}`, 16);
}

/** Random ids come from a buffer the CSPRNG refills every 512 span ids: one call, not one per id. */
const POOL = new Uint8Array(4096);
let poolAt = POOL.length;
/** `bytes` random bytes as hex, from the pool. */
export function randomHex(bytes: number): string {
  if (poolAt + bytes > POOL.length) {
    platform.crypto.getRandomValues(POOL);
    poolAt = 0;
  }
  const hex = toHex(POOL, poolAt, poolAt + bytes);
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
  return m ? { traceId: m[1]!, spanId: m[2]! } : null;
}

export function formatTraceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

/** The per-attempt OpenAI base URL on the gateway: `<origin>/rollout/<rid>/attempt/<aid>/v1`. */
export function attemptBaseUrl(gatewayEndpoint: string, rolloutId: string, attemptId: string): string {
  const root = gatewayEndpoint.replace(/\/+$/, '').replace(/\/v1$/, '');
  return `${root}/rollout/${encodeURIComponent(rolloutId)}/attempt/${encodeURIComponent(attemptId)}/v1`;
}
