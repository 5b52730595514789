/**
 * The Python calc agent's learning run, as `npm run bench:learning -- --sample calc-py` runs it: the calc
 * sample's shipped SFT warm-up (same prompts, same demonstrations; --sft-steps N makes a new one), then GRPO with the calc
 * sample's config, the agent run by the runner's Python path; held-out accuracy on calc's val split.
 *   npx tsx samples/calc-py/learn.ts [--minutes M] [--sft-steps N] [--data-dir DIR]
 */
import { join } from 'node:path';
import { WARMUP_DIR, WARMUP_SFT_FLAGS } from '../calc/demo.js';
import { learnMain, type SampleLearning } from '../harness/learning.js';

export const CALC_PY_LEARNING: SampleLearning = {
  name: 'calc-py',
  agent: 'samples/calc-py/calc_agent.py:solve',
  train: join('samples', 'calc', 'data', 'train.jsonl'),
  val: join('samples', 'calc', 'data', 'val.jsonl'),
  demos: join('samples', 'calc', 'data', 'demos.jsonl'),
  config: join('samples', 'calc', 'train.yaml'),
  sftFlags: WARMUP_SFT_FLAGS,
  warmup: WARMUP_DIR, // the calc sample's shipped warm-up (same prompts, same demonstrations)
  // Scored by calc's TypeScript solver: the Python agent sends the same prompts (samples/calc-py/README.md).
  test: { file: join('samples', 'calc', 'data', 'test.jsonl'), score: async (c, f) => (await import('../calc/inspect.js')).calcScore(c, f) },
};

if (/calc-py[\\/]learn\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) learnMain(CALC_PY_LEARNING);
