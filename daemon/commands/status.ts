/**
 * `agl status`: is the daemon of a data dir running, where, with which store, and what does it hold.
 * Reads daemon.json (no network) to find it, then asks /health and /v1/agl/statistics.
 * Exit code 0 when running, 1 when not (scripts can test it).
 */
import { STATUS_COMMAND } from '../../protocol/cli-commands.js';
import { AglClient } from '../../client/client.js';
import { readDaemonState, resolveDataDir } from '../../client/daemon-state.js';
import { parseCommand } from './flags.js';

function duration(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

const counts = (byStatus: Record<string, number>) => {
  const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
  const parts = Object.entries(byStatus)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`);
  return parts.length ? `${total} (${parts.join(', ')})` : '0';
};

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(STATUS_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
  const args = parsed.values;
  const dataDir = resolveDataDir(args['data-dir']);
  const { state, running, stale } = readDaemonState(dataDir);
  const out = (o: Record<string, unknown>, text: string) => {
    process.stdout.write(args.json ? JSON.stringify(o) + '\n' : text);
  };

  if (!state || !running || !state.url) {
    const why = !state
      ? 'no daemon has run with this data dir'
      : stale
        ? `its process (pid ${state.pid}) is gone: it was killed or crashed; its data is intact`
        : 'it was stopped';
    out(
      { running: false, dataDir, reason: why, stale },
      `Agent Lightning daemon: not running (${why})\n  data dir:  ${dataDir}\n  start it:  agl serve${args['data-dir'] ? ` --data-dir ${dataDir}` : ''}\n`,
    );
    return 1;
  }

  const client = new AglClient({ url: state.url, token: '', timeoutMs: 5_000 });
  let health;
  try {
    health = await client.health();
  } catch (err) {
    out(
      { running: false, dataDir, pid: state.pid, url: state.url, reason: (err as Error).message },
      `Agent Lightning daemon: pid ${state.pid} is alive but ${state.url} does not answer (${(err as Error).message})\n` +
        `  It may be starting or hung; if it is not agl, remove ${dataDir}/daemon.json.\n`,
    );
    return 1;
  }
  const authed = AglClient.fromDataDir(dataDir, { timeoutMs: 10_000 });
  const stats = await authed.statistics();
  const info = {
    running: true,
    dataDir,
    url: state.url,
    pid: health.pid,
    version: health.version,
    tokenPath: state.tokenPath,
    store: state.store,
    uptimeSeconds: health.uptimeSeconds,
    statistics: stats,
    agents: state.agents,
  };
  out(
    info,
    [
      'Agent Lightning daemon: running',
      `  url:            ${state.url}`,
      `  pid:            ${health.pid} (up ${duration(health.uptimeSeconds)}, version ${health.version})`,
      `  data dir:       ${dataDir}`,
      `  token file:     ${state.tokenPath}`,
      `  store:          ${state.store}`,
      `  rollouts:       ${counts(stats.rollouts)}`,
      `  attempts:       ${counts(stats.attempts)}`,
      `  spans:          ${stats.spans}`,
      `  resources:      ${stats.resources}   workers: ${stats.workers}   training runs: ${stats.trainingRuns}`,
      `  agents seen:    ${state.agents.length ? state.agents.map((a) => a.agent).join(', ') : 'none yet'}`,
      '',
    ].join('\n'),
  );
  return 0;
}
