/**
 * `agl runner --workers N [--agent file.ts#export]`: adds N workers to a daemon (local or --url): each
 * claims rollouts from the queue and runs them in a warm child process (TS/JS through tsx, Python through
 * agl_runner.py), with heartbeats and per-rollout timeouts. Ctrl-C stops claiming and lets running
 * rollouts finish (a second Ctrl-C kills them; their attempts fail and are requeued per config).
 */
import { RUNNER_COMMAND } from '../../protocol/cli-commands.js';
import { storedAgentId } from '../runner/agent-ref.js';
import { connect } from '../runner/connect.js';
import { Runner } from '../runner/runner.js';
import { parseCommand } from './flags.js';

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(RUNNER_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
  const { values } = parsed;
  const workers = Number(values.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 4096) {
    process.stderr.write(`agl runner: --workers must be an integer from 1 to 4096, got '${values.workers}'\n`);
    return 2;
  }
  const timeout = values.timeout === undefined ? null : Number(values.timeout);
  if (timeout !== null && !(timeout > 0)) {
    process.stderr.write(`agl runner: --timeout must be a positive number of seconds\n`);
    return 2;
  }
  const grace = Number(values.grace);
  const perProcess = Number(values['per-process']);
  if (!Number.isInteger(perProcess) || perProcess < 1) {
    process.stderr.write(`agl runner: --per-process must be a positive integer, got '${values['per-process']}'\n`);
    return 2;
  }
  // Claims match stored ids, which are stable ids (protocol/agent-id.ts): name the agent the same way.
  const agent = values.agent === undefined ? undefined : storedAgentId(values.agent);
  const conn = connect(values);
  await conn.client.health(); // fail fast, with the client's message, when the daemon is unreachable
  const runner = new Runner({
    client: conn.client,
    daemonUrl: conn.url,
    token: conn.token,
    workers,
    agent,
    defaultTimeoutSeconds: timeout,
    python: values.python,
    jobsPerProcess: perProcess,
  });
  runner.start();
  process.stderr.write(`agl runner: ${workers} worker(s) claiming rollouts from ${conn.url}${agent ? ` (agent ${agent})` : ''}; Ctrl-C to stop\n`);
  const report = setInterval(() => process.stderr.write(`agl runner: ${runner.completed} succeeded, ${runner.failed} failed\n`), 60_000);
  report.unref();
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (sig: string) => {
      if (stopping) {
        process.stderr.write(`agl runner: ${sig} again, killing running rollouts\n`);
        void runner.stop(0);
        return;
      }
      stopping = true;
      process.stderr.write(`agl runner: ${sig}: no new rollouts; waiting up to ${grace}s for running ones\n`);
      void runner.stop(grace * 1000).then(resolve);
    };
    process.on('SIGINT', () => onSignal('SIGINT'));
    process.on('SIGTERM', () => onSignal('SIGTERM'));
  });
  clearInterval(report);
  process.stderr.write(`agl runner: stopped; ${runner.completed} succeeded, ${runner.failed} failed\n`);
  return 0;
}
