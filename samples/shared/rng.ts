/**
 * The seeded random numbers every sample's data generator draws from (calc's problems, sql's companies and
 * databases, rag's worlds): one seed always makes the same shipped data files.
 */
/** Deterministic PRNG (mulberry32) so a seed always yields the same dataset. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
