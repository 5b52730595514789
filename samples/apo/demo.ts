/**
 * `npm run demo:apo`: prompt optimization end to end, headless, on this machine, with no model and no network: the
 * order desk agent (agent.ts) on the scripted OpenAI-compatible server (scripted-llm.ts), through `agl optimize`'s
 * real gateway, runner and store. Prints the command it runs (the same one a user points at a real endpoint: see
 * README.md), the progress, and the seed against the best on val and on the held-out test set, with the prompt's diff.
 * Options: --budget N (default 300), --seed S (default 0), --algorithm gepa|beam, --data-dir DIR (default: a fresh
 * temp dir), --blind (the optimizer ignores the feedback: the control that must not improve).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { run as agl } from '../../daemon/commands/optimize.js';
import { commandLine } from '../../protocol/cli-options.js';
import { OPTIMIZE_COMMAND, type OptimizeFlags } from '../../protocol/optimize-options.js';
import { DATA_DIR } from './make-data.js';
import { AGENT_MODEL, BLIND_OPTIMIZER_MODEL, OPTIMIZER_MODEL, startScriptedLlm } from './scripted-llm.js';

export const DESK_AGENT = 'samples/apo/agent.ts#deskAgent';

/** `agl optimize`'s flags for the desk agent against an agent model and an optimizer (the scripted server, or yours). */
export function deskFlags(o: {
  upstream: string;
  upstreamModel: string;
  optimizer: string;
  optimizerModel: string;
  budget: string;
  seed: string;
}): OptimizeFlags {
  return {
    prompt: ['desk'],
    train: join(DATA_DIR, 'train.jsonl'),
    val: join(DATA_DIR, 'val.jsonl'),
    test: join(DATA_DIR, 'test.jsonl'),
    budget: o.budget,
    seed: o.seed,
    upstream: o.upstream,
    'upstream-model': o.upstreamModel,
    'optimizer-url': o.optimizer,
    'optimizer-model': o.optimizerModel,
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      budget: { type: 'string', default: '300' },
      seed: { type: 'string', default: '0' },
      algorithm: { type: 'string', default: 'gepa' },
      'data-dir': { type: 'string' },
      blind: { type: 'boolean' },
    },
  });
  const llm = await startScriptedLlm({ seed: Number(values.seed) });
  try {
    const flags: OptimizeFlags = {
      ...deskFlags({
        upstream: llm.url,
        upstreamModel: AGENT_MODEL,
        optimizer: llm.url,
        optimizerModel: values.blind ? BLIND_OPTIMIZER_MODEL : OPTIMIZER_MODEL,
        budget: values.budget!,
        seed: values.seed!,
      }),
      algorithm: values.algorithm,
      'data-dir': values['data-dir'] ?? mkdtempSync(join(tmpdir(), 'agl-apo-demo-')),
    };
    const args = commandLine(OPTIMIZE_COMMAND, flags, [DESK_AGENT]);
    process.stderr.write(`apo demo: the scripted server (samples/apo/scripted-llm.ts) at ${llm.url} plays both models\napo demo: agl ${args.join(' ')}\n`);
    return await agl(args.slice(1));
  } finally {
    await llm.close();
  }
}

if (process.argv[1] && /demo\.ts$/.test(process.argv[1])) {
  void main().then((code) => process.exit(code));
}
