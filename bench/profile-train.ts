/**
 * Where a wasm training step spends its time, per TF.js kernel (tf.profile), for the bench:model setup.
 *   npx tsx bench/profile-train.ts [--size 0.8m] [--backend wasm]
 */
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import type { LossInputs } from '../daemon/model/loss.js';
import type { SequencePair } from '../daemon/model/policy-contract.js';
import { createPolicy } from '../daemon/model/policy.js';

const { values } = parseArgs({ options: { size: { type: 'string', default: '0.8m' }, backend: { type: 'string', default: 'wasm' } } });
const BATCH = 16,
  SEQ = 128;
void (async () => {
  const model = await createPolicy({ backend: values.backend, size: values.size as '0.8m', contextLength: SEQ, seed: 1, optimizer: { microBatchSize: 16 } });
  let seed = 7;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % 256;
  };
  const pairs: SequencePair[] = Array.from({ length: BATCH }, () => ({ promptIds: [rnd()], completionIds: Array.from({ length: SEQ - 1 }, rnd) }));
  const loss = ({ logprobs, mask }: LossInputs) =>
    logprobs
      .mul(mask)
      .sum()
      .neg()
      .div(BATCH * (SEQ - 1)) as never;
  await model.trainStepWith(pairs, loss, { lr: 3e-4 });
  const t0 = performance.now();
  const info = await tf.profile(async () => {
    await model.trainStepWith(pairs, loss, { lr: 3e-4 });
  });
  const wall = performance.now() - t0;
  const by = new Map<string, { ms: number; n: number }>();
  for (const k of info.kernels) {
    const key = `${k.name} ${JSON.stringify(k.inputShapes)}`;
    const e = by.get(key) ?? { ms: 0, n: 0 };
    e.ms += Number(k.kernelTimeMs) || 0;
    e.n++;
    by.set(key, e);
  }
  const byName = new Map<string, number>();
  for (const k of info.kernels) byName.set(k.name, (byName.get(k.name) ?? 0) + (Number(k.kernelTimeMs) || 0));
  const total = [...byName.values()].reduce((a, b) => a + b, 0);
  console.log(`wall ${wall.toFixed(0)} ms (profiled), kernel time ${total.toFixed(0)} ms, ${info.kernels.length} kernels`);
  for (const [n, ms] of [...byName].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`${n.padEnd(28)} ${ms.toFixed(1).padStart(8)} ms ${((100 * ms) / total).toFixed(1).padStart(5)}%`);
  console.log('--- top kernel+shape');
  for (const [n, e] of [...by].sort((a, b) => b[1].ms - a[1].ms).slice(0, 30)) console.log(`${e.ms.toFixed(1).padStart(8)} ms x${e.n} ${n}`);
})();
