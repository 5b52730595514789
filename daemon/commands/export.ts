/**
 * `agl export --format jsonl [--run ID] [--out FILE]`: every transition a training run used, one JSON
 * line each, with its credit and GRPO advantage joined to the LLM call's span (prompt and completion
 * token ids and text, log-probs), for people who train larger models elsewhere (TRL, verl). The lines are
 * daemon/algorithm/export.ts's.
 */
import { createWriteStream } from 'node:fs';
import { exportTransitions } from '../algorithm/export.js';
import { openStore } from '../store/index.js';
import { resolveDataDir } from '../../client/daemon-state.js';
import { EXPORT_COMMAND } from '../../protocol/cli-commands.js';
import { parseCommand } from './flags.js';

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(EXPORT_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
  const a = parsed.values;
  if (a.format !== 'jsonl') {
    process.stderr.write(`agl export: --format ${a.format} is not supported; use --format jsonl\n`);
    return 2;
  }
  const store = await openStore(a.store ?? process.env.AGL_STORE ?? { dataDir: resolveDataDir(a['data-dir']) });
  try {
    let runId = a.run;
    if (!runId) {
      const runs = await store.listTrainingRuns(undefined, 'train');
      const latest = runs.sort((x, y) => y.createdAt - x.createdAt)[0];
      if (!latest) {
        process.stderr.write('agl export: this store has no training runs yet (run `agl train` first)\n');
        return 1;
      }
      runId = latest.id;
    } else if (!(await store.getTrainingRun(runId))) {
      process.stderr.write(`agl export: no training run '${runId}' in this store\n`);
      return 1;
    }
    const out = a.out ? createWriteStream(a.out) : process.stdout;
    const n = await exportTransitions(store, runId, (line) => out.write(line));
    if (a.out) await new Promise<void>((res, rej) => (out as ReturnType<typeof createWriteStream>).end((e?: Error | null) => (e ? rej(e) : res())));
    process.stderr.write(`agl export: ${n} transitions of run ${runId}${a.out ? ` -> ${a.out}` : ''}\n`);
    return 0;
  } finally {
    await store.close();
  }
}
