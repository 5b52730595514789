/** Comparing model folders written by the two engines (or by one engine two ways). */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readSafetensors } from '../../daemon/model/safetensors.js';
import type { GrpoSample, GrpoTrainLoss } from '../../protocol/engine.js';

/**
 * GPT-2's key bias (the middle third of attn.c_attn.bias) has a zero gradient in exact arithmetic (it adds the same
 * q.b to every score of a query; softmax ignores that), so any computation's gradient there is its own rounding noise
 * (~1e-8 against ~0.1 for the query bias) and Adam, which divides by the root of its second moment, turns that noise
 * into lr-sized steps that differ between any two orders of summation. It changes no output; comparisons leave it out.
 */
function noiseOnly(name: string, d: number): ((i: number) => boolean) | null {
  return /attn\.c_attn\.bias$/.test(name) ? (i) => i >= d && i < 2 * d : null;
}

/** Max |a - b| over every tensor of two safetensors files, matched by name (`d`: the model width, for noiseOnly). */
export function compareFiles(a: string, b: string, d: number): { worst: number; name: string; count: number } {
  const x = readSafetensors(a).tensors,
    y = readSafetensors(b).tensors;
  assert.deepEqual([...x.keys()].sort(), [...y.keys()].sort(), `${a} and ${b} hold the same tensors`);
  let worst = 0,
    name = '';
  for (const [k, t] of x) {
    const u = y.get(k)!;
    assert.deepEqual(t.shape, u.shape, `${k}: shape`);
    const skip = noiseOnly(k.replace(/^[mv]\./, ''), d);
    const p = t.data as Float32Array,
      q = u.data as Float32Array;
    for (let i = 0; i < p.length; i++) {
      if (skip?.(i)) continue;
      const e = Math.abs(p[i] - q[i]);
      if (e > worst) {
        worst = e;
        name = `${k}[${i}]`;
      }
    }
  }
  return { worst, name, count: x.size };
}

/** Max |a - b| over the weights of two model folders. */
export function maxParamDiff(a: string, b: string, d: number): number {
  return compareFiles(join(a, 'model.safetensors'), join(b, 'model.safetensors'), d).worst;
}

/** A token-mean GRPO loss with DAPO's clip range over `samples` (the engine tests' usual update), with `over` on top. */
export function tokenMeanGrpo(samples: GrpoSample[], over: Partial<GrpoTrainLoss> = {}): GrpoTrainLoss {
  return {
    kind: 'grpo',
    epsilon: 0.2,
    epsilonHigh: 0.28,
    sequenceEpsilon: 3e-4,
    sequenceEpsilonHigh: 4e-4,
    beta: 0,
    lossAggregation: 'token-mean',
    lossNormTokens: null,
    importanceSampling: 'token',
    ratioBase: 'sampler',
    tisCap: null,
    samples,
    ...over,
  };
}
