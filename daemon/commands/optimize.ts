/**
 * `agl optimize <agent> --prompt NAME --train F --val F [--test F] --budget N ...`: prompt optimization (GEPA or beam)
 * of the prompts the agent reads with llm.prompt, and `agl optimize promote RUN [CANDIDATE] [--apply]`. This command
 * parses its flags, checks what it can before anything starts (daemon/optimize/run-plan.ts), and calls the run's
 * lifecycle (daemon/optimize/optimize-run.ts) with a progress bar (rollouts of the budget, best val so far) and Ctrl-C;
 * at the end it prints seed against best and each prompt's diff, or with --json one object. Its store is the data
 * dir's (or --store), with a gateway and runner workers of its own; with --url/--token it runs against that daemon.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AglClient } from '../../client/client.js';
import { resolveDataDir } from '../../client/daemon-state.js';
import { commandHelp } from '../../protocol/cli-options.js';
import { TOKEN_FILE } from '../../protocol/daemon-state.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { OPTIMIZE_COMMAND, OPTIMIZE_PROMOTE_COMMAND, type OptimizeFlags } from '../../protocol/optimize-options.js';
import { runOptimization, type OptimizeConnection } from '../optimize/optimize-run.js';
import { clearPromoted, promote } from '../optimize/promote.js';
import { outcomeJson, outcomeLines } from '../optimize/report.js';
import { planFromFlags, planResume } from '../optimize/run-plan.js';
import { ensureWritableDataDir } from '../state.js';
import { openStore } from '../store/index.js';
import { parseCommand } from './flags.js';
import { Progress } from './progress.js';

const HELP = [OPTIMIZE_COMMAND, OPTIMIZE_PROMOTE_COMMAND].map(commandHelp).join('\n');
const say = (line: string) => process.stderr.write(`${line}\n`);

export async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'promote') return promoteCommand(argv.slice(1));
  const a = parseCommand(OPTIMIZE_COMMAND, argv, HELP);
  if ('exit' in a) return a.exit;
  const f = a.values;
  const agent = a.positionals[0];
  if (!agent && !f.resume) {
    process.stderr.write(`agl optimize: the agent is required (file.ts#export or module:function), or --resume RUN\n\n${HELP}`);
    return 2;
  }
  const conn = await connect(f);
  try {
    let plan;
    try {
      plan = f.resume ? await planResume(conn.store, f.resume, f) : planFromFlags(agent!, f);
    } catch (e) {
      say(`agl optimize: ${(e as Error).message}`);
      return 2;
    }
    return await optimize(plan, conn, f);
  } finally {
    await conn.store.close();
  }
}

/** The store and where rollouts run: a daemon (--url/--token), else the data dir's store (or --store) hosted here (agl eval's too). */
export async function connect(f: Pick<OptimizeFlags, 'url' | 'token' | 'data-dir' | 'store'>): Promise<OptimizeConnection> {
  const dataDir = resolveDataDir(f['data-dir']);
  const url = f.url ?? process.env.AGL_URL;
  if (url) {
    const token = f.token ?? process.env.AGL_TOKEN ?? readFileSync(join(dataDir, TOKEN_FILE), 'utf8').trim();
    const clean = url.replace(/\/+$/, '');
    return { store: new AglClient({ url: clean, token }), dataDir, daemon: { url: clean, token } };
  }
  ensureWritableDataDir(dataDir);
  const store: LightningStore = await openStore(f.store ?? process.env.AGL_STORE ?? { dataDir });
  return { store, dataDir, daemon: null };
}

/** Runs the plan with a progress bar on stderr and Ctrl-C stopping it; prints the end. 130 when stopped. */
async function optimize(plan: Parameters<typeof runOptimization>[0], conn: OptimizeConnection, f: OptimizeFlags): Promise<number> {
  const controller = new AbortController();
  const onSignal = () => {
    say('\nagl optimize: stopping (everything scored is kept; continue with --resume)');
    controller.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let bar: Progress | null = null;
  const log = (m: string) => (bar ? bar.log(m) : say(m));
  try {
    const report = {
      log,
      planned: (budget: number) => {
        bar = f.quiet || f.json ? null : new Progress('optimize', budget);
      },
      progress: (spent: number, note: string) => bar?.update(spent, note),
    };
    const outcome = await runOptimization(plan, conn, { signal: controller.signal, report });
    (bar as Progress | null)?.done();
    if (!outcome) return 130;
    if (f.json) process.stdout.write(`${JSON.stringify(outcomeJson(outcome))}\n`);
    else
      process.stdout.write(
        outcomeLines(outcome)
          .map((l) => `${l}\n`)
          .join(''),
      );
    return outcome.stopReason === 'failed' ? 1 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function promoteCommand(argv: string[]): Promise<number> {
  const a = parseCommand(OPTIMIZE_PROMOTE_COMMAND, argv, HELP);
  if ('exit' in a) return a.exit;
  const [runId, candidate] = a.positionals;
  if (!runId) {
    process.stderr.write(`agl optimize promote: the run id is required (agl optimize printed it)\n\n${HELP}`);
    return 2;
  }
  const conn = await connect(a.values);
  try {
    if (a.values.clear) {
      const undone = await clearPromoted(conn.store, runId);
      if (a.values.json) process.stdout.write(`${JSON.stringify(undone)}\n`);
      else
        say(
          undone.cleared.length
            ? `agl optimize promote: ${undone.agent} reads its seed again for ${undone.cleared.join(', ')}`
            : `agl optimize promote: nothing was promoted for ${undone.agent} of run ${runId}'s prompts`,
        );
      return 0;
    }
    const done = await promote(conn.store, runId, candidate, { apply: a.values.apply === true });
    if (a.values.json) process.stdout.write(`${JSON.stringify(done)}\n`);
    else {
      for (const p of done.prompts)
        say(`agl optimize promote: ${done.agent} now gets candidate ${done.candidate}'s ${p.name}${p.file ? `; its text is in ${p.file}` : ''}`);
    }
    return 0;
  } catch (e) {
    say(`agl optimize promote: ${(e as Error).message}`);
    return 1;
  } finally {
    await conn.store.close();
  }
}
