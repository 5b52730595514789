/**
 * `agl train ... --nodes N --node-rank R` on a machine other than node 0: it runs no daemon, runner or loop, only its
 * engine ranks, which meet node 0's at the rendezvous (--rdzv HOST:PORT, torchrun's static rendezvous) and follow
 * node 0's rank 0 until node 0's run ends. Every node runs the same command line with its own --node-rank, and reads
 * the same model folder at the same path.
 */
import { configOverrides, TRAIN_OPTIONS, type TrainFlags } from '../../protocol/train-options.js';
import { engineOptions, resolveTrainConfig } from './config.js';
import { joinTorchEngine } from '../model/torch-engine.js';
import { resolveDataDir } from '../../client/daemon-state.js';

/** The exit code when this machine lends ranks to node 0's run (its ranks' exit code); null on node 0 or one machine. */
export async function lendRanks(f: TrainFlags, out: (line: string) => void): Promise<number | null> {
  const config = resolveTrainConfig(f.config ?? null, configOverrides(TRAIN_OPTIONS, f));
  const e = config.engine;
  if (e.nodes <= 1 || e.nodeRank === 0) return null;
  if (f.resume) throw new Error(`--node-rank ${e.nodeRank}: --resume is node 0's (its store); here give --model <the checkpoint folder node 0 resumes from>`);
  const model = config.model.init ?? config.model.name;
  if (model.startsWith('builtin:'))
    throw new Error(`--nodes ${e.nodes}: several machines train a model folder (--model DIR); the built-in models fit one machine`);
  const { torch } = engineOptions(e, { dataDir: resolveDataDir(f['data-dir']) });
  out(
    `agl train: node ${e.nodeRank} of ${e.nodes}: this machine's ${e.procs} rank${e.procs === 1 ? '' : 's'} of ${model} join node 0 at ${e.rdzv}` +
      `${e.shard === 'fsdp' ? ' (FSDP: each rank holds its share of the weights and moments)' : ''}; the run is node 0's, and this ends when it does`,
  );
  const code = await joinTorchEngine(model, { ...torch, log: (line) => out(`  [node ${e.nodeRank}] ${line}`) });
  out(`agl train: node ${e.nodeRank}: its ranks exited with code ${code}`);
  return code;
}
