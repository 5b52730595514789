/**
 * Part of bench:gateway: the local policy behind the gateway (built-in 0.8M model, in-process daemon),
 * sequential calls vs 16 concurrent ones. Dynamic batching should turn concurrency into larger generate()
 * batches and more completion tokens per second: reports both and the mean batch size.
 */
import type { GenerateOptions, Generation, PolicyModel } from '../daemon/model/policy-contract.js';
import { createPolicy } from '../daemon/model/policy.js';
import { attemptBaseUrl } from '../protocol/ids.js';
import { startDaemon } from '../test/helpers/daemon.js';

export async function benchLocalBatching(quick: boolean): Promise<Record<string, number>> {
  const real = await createPolicy({ size: '0.8m', contextLength: 256, seed: 1, name: 'bench-local' });
  const batches: number[] = [];
  const policy = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'generate')
        return async (p: number[][], o: GenerateOptions): Promise<Generation[]> => {
          batches.push(p.length);
          const t0 = performance.now();
          const g = await target.generate(p, o);
          if (process.env.AGL_BENCH_DEBUG) console.error(`generate B=${p.length} max=${o.maxTokens} ${(performance.now() - t0).toFixed(0)} ms`);
          return g;
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as PolicyModel;
  const daemon = await startDaemon({ getPolicy: () => policy });
  try {
    await daemon.client.addResources({
      resources: {
        llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'bench-local', backend: 'local', samplingParams: { temperature: 1, maxTokens: 32 } },
      },
    });
    const claim = await daemon.client.startRollout({ input: {} }, 'bench');
    const url = `${attemptBaseUrl(`${daemon.url}/v1`, claim.rollout.id, claim.attempt.id)}/chat/completions`;
    const call = async (i: number) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bench-local', messages: [{ role: 'user', content: `What is ${i}+${i}?` }], max_tokens: 32, seed: 1 }),
      });
      const body = (await res.json()) as { usage: { completion_tokens: number } };
      return body.usage.completion_tokens;
    };
    const n = quick ? 32 : 128;
    await call(0);
    let t0 = performance.now();
    let tokens = 0;
    for (let i = 0; i < n / 4; i++) tokens += await call(i);
    const seqTokS = tokens / ((performance.now() - t0) / 1000);
    batches.length = 0;
    t0 = performance.now();
    tokens = 0;
    let next = 0;
    // (not `tokens += await ...`: that reads `tokens` before the await and loses concurrent updates)
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < n) {
          const got = await call(next++);
          tokens += got;
        }
      }),
    );
    const concTokS = tokens / ((performance.now() - t0) / 1000);
    const meanBatch = batches.reduce((a, b) => a + b, 0) / Math.max(1, batches.length);
    return {
      'local.c1_completion_tok_s': Math.round(seqTokS),
      'local.c16_completion_tok_s': Math.round(concTokS),
      'local.batching_speedup': Math.round((concTokS / seqTokS) * 100) / 100,
      'local.c16_mean_batch_size': Math.round(meanBatch * 10) / 10,
    };
  } finally {
    await daemon.close();
    real.dispose();
  }
}
