/**
 * The rag sample's learning run (SFT warm-up, then GRPO; held-out token F1 on the val split before and
 * after), as `npm run bench:learning -- --sample rag` runs it. The procedure is the sql sample's.
 *   npx tsx samples/rag/learn.ts [--minutes M] [--sft-steps N] [--data-dir DIR]
 */
import { join } from 'node:path';
import { readJsonl } from '../../daemon/algorithm/sft-trainer.js';
import { learnMain, type SampleLearning } from '../harness/learning.js';
import type { RagTask } from './corpus.js';

export const RAG_LEARNING: SampleLearning = {
  name: 'rag',
  agent: 'samples/rag/agent.ts#ragAgent',
  train: join('samples', 'rag', 'data', 'train.jsonl'),
  val: join('samples', 'rag', 'data', 'val.jsonl'),
  demos: join('samples', 'rag', 'data', 'demos.jsonl'),
  config: join('samples', 'rag', 'train.yaml'),
  // The shipped warm-up was extended stage by stage, inspecting after each (samples/rag/README.md).
  sftFlags: { model: 'builtin:0.8m', steps: '900', 'batch-size': '32', lr: '1e-3', context: '256', seed: '1' },
  sftThen: [
    { steps: '600', 'batch-size': '32', lr: '1e-3', seed: '2' },
    ...(
      [
        ['copy', 3],
        ['copy', 4],
        ['copy', 5],
        ['copy', 6],
        ['doc', 7],
        ['copy', 8],
        ['copy', 9],
      ] as const
    ).map(([drills, seed]) => ({
      data: join('samples', 'rag', 'data', `demos-${drills}.jsonl`),
      steps: '600',
      'batch-size': '32',
      lr: '1e-3',
      seed: String(seed),
    })),
  ],
  warmup: join('samples', 'rag', 'warmup'),
  test: {
    file: join('samples', 'rag', 'data', 'test.jsonl'),
    async score(checkpoint, file) {
      const { inspectRag } = await import('./inspect.js');
      const eps = await inspectRag(checkpoint, readJsonl<RagTask>(file));
      return eps.reduce((a, e) => a + e.f1, 0) / eps.length;
    },
  },
};

if (/rag[\\/]learn\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) learnMain(RAG_LEARNING);
