/**
 * The sql sample's learning run, as `npm run bench:learning -- --sample sql` runs it: an SFT warm-up
 * of the built-in model on the shipped demonstrations (`agl sft`, the start a tiny model needs before
 * RL has reward to learn from), then GRPO with `agl train` (writer and rewriter only), held-out
 * execution accuracy on the val split before and after.
 *   npx tsx samples/sql/learn.ts [--minutes M] [--sft-steps N] [--data-dir DIR]
 */
import { join } from 'node:path';
import { learnMain, type SampleLearning } from '../harness/learning.js';
import { readJsonl } from '../../daemon/algorithm/sft-trainer.js';
import type { SqlTask } from './task.js';

export const SQL_LEARNING: SampleLearning = {
  name: 'sql',
  agent: 'samples/sql/agent.ts#sqlAgent',
  train: join('samples', 'sql', 'data', 'train.jsonl'),
  val: join('samples', 'sql', 'data', 'val.jsonl'),
  demos: join('samples', 'sql', 'data', 'demos.jsonl'),
  config: join('samples', 'sql', 'train.yaml'),
  // The shipped warm-up was extended stage by stage, inspecting after each (samples/sql/README.md): 2,700 steps on
  // the demonstrations, then 1,200 on the copy drills (names of random letters), 3,900 in all.
  sftFlags: { model: 'builtin:0.8m', steps: '300', 'batch-size': '32', lr: '1e-3', context: '256', seed: '1' },
  sftThen: [
    { steps: '600', 'batch-size': '32', lr: '1e-3', seed: '2' },
    { steps: '900', 'batch-size': '32', lr: '1e-3', seed: '3' },
    { steps: '900', 'batch-size': '32', lr: '1e-3', seed: '4' },
    { data: join('samples', 'sql', 'data', 'demos-copy.jsonl'), steps: '600', 'batch-size': '32', lr: '1e-3', seed: '5' },
    { data: join('samples', 'sql', 'data', 'demos-copy.jsonl'), steps: '600', 'batch-size': '32', lr: '5e-4', seed: '6' },
  ],
  warmup: join('samples', 'sql', 'warmup'),
  test: {
    file: join('samples', 'sql', 'data', 'test.jsonl'),
    async score(checkpoint, file) {
      const { inspectSql } = await import('./inspect.js');
      const eps = await inspectSql(checkpoint, readJsonl<SqlTask>(file));
      return eps.reduce((a, e) => a + e.reward, 0) / eps.length;
    },
  },
};

if (/sql[\\/]learn\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) learnMain(SQL_LEARNING);
