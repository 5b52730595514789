/**
 * `agl train <file>#<export> --train train.jsonl --val val.jsonl`: LightningRL training of the agent's LLM with GRPO.
 * This command parses its flags, checks what it can before anything starts (the agent file, the task files named by
 * the flags or the config), and calls the run's lifecycle (daemon/algorithm/training-run.ts) with a progress bar and
 * Ctrl-C: the run hosts the policy (gateway + store API) and runner workers, records the run in the store (the
 * dashboard plots it live), checkpoints, resumes a killed run with `--resume <run id | checkpoint dir>`, and writes a
 * report. On a machine other than node 0 of several (--node-rank), it lends its engine ranks instead.
 */
import { existsSync } from 'node:fs';
import { TRAIN_COMMAND, trainHelp } from '../../protocol/train-options.js';
import { resolveAgentFile } from '../../client/agent-id.js';
import { resolveDataDir } from '../../client/daemon-state.js';
import { configData } from '../algorithm/config.js';
import { lendRanks } from '../algorithm/lend-ranks.js';
import { runTraining, type TrainFlags, type TrainOutcome } from '../algorithm/training-run.js';
import { ensureWritableDataDir } from '../state.js';
import { openStore } from '../store/index.js';
import { parseCommand } from './flags.js';
import { Progress } from './progress.js';

export type { TrainFlags, TrainOutcome } from '../algorithm/training-run.js';

export async function run(argv: string[]): Promise<number> {
  const a = parseCommand(TRAIN_COMMAND, argv);
  if ('exit' in a) return a.exit;
  const f = a.values;
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const lent = await lendRanks(f, say).catch((e: Error) => {
    say(`agl train: ${e.message}`);
    return 2;
  });
  if (lent !== null) return lent;
  const agent = a.positionals[0];
  // The task files: the flags, else the config's data: section (the agent's own train.yaml naming its data).
  let named: { train?: string; val?: string } = {};
  if (f.config && (!f.train || !f.val)) {
    try {
      named = configData(f.config);
    } catch (e) {
      say(`agl train: ${(e as Error).message}`);
      return 2;
    }
  }
  const train = f.train ?? named.train,
    val = f.val ?? named.val;
  if (!agent || !train || !val) {
    process.stderr.write(`agl train: the agent, --train and --val are required (or a --config whose data: names train and val)\n\n${trainHelp()}`);
    return 2;
  }
  const agentFile = agent.split('#')[0];
  if (/\.(ts|mts|js|mjs|py)$/.test(agentFile) && !existsSync(resolveAgentFile(agentFile))) {
    say(`agl train: agent file ${agentFile} not found`);
    return 2;
  }
  const outcome = await trainAgent({ ...f, agent, train, val });
  return outcome ? 0 : 130;
}

/**
 * Trains per the flags in this process, with a progress bar on stderr (none with --quiet) and Ctrl-C (SIGINT/SIGTERM)
 * stopping the run (null: the last checkpoint is kept); prints the result. The store is the flags' (or the data dir's).
 */
export async function trainAgent(f: TrainFlags): Promise<TrainOutcome | null> {
  const dataDir = resolveDataDir(f['data-dir']);
  ensureWritableDataDir(dataDir);
  const store = await openStore(f.store ?? process.env.AGL_STORE ?? { dataDir });
  const controller = new AbortController();
  const onSignal = () => {
    process.stderr.write('\nagl train: stopping (the last checkpoint is kept; continue with --resume)\n');
    controller.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let bar: Progress | null = null;
  const log = (m: string) => (bar ? bar.log(m) : process.stderr.write(`${m}\n`));
  try {
    const report = {
      log,
      planned: (steps: number) => {
        bar = f.quiet ? null : new Progress('train', steps);
      },
      progress: (step: number, note: string) => bar?.update(step, note),
    };
    const outcome = await runTraining(f, store, dataDir, { signal: controller.signal, report });
    (bar as Progress | null)?.done();
    if (outcome) process.stdout.write(outcome.lines.map((l) => `${l}\n`).join(''));
    return outcome;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await store.close();
  }
}
