/**
 * `agl rollout <file.ts#export | module:function> --task '<json>'`: runs one rollout of an agent against
 * the running daemon (the current policy / published LLM resource), then prints its spans as a tree and
 * its reward. The same worker code as `agl runner`, with one worker (daemon/runner/run-one.ts).
 */
import { commandHelp } from '../../protocol/cli-options.js';
import { ROLLOUT_COMMAND } from '../../protocol/cli-commands.js';
import { ROLLOUT_MODES, type RolloutMode } from '../../protocol/store.js';
import { servedModelText, servedModels, servedNote } from '../../protocol/served-by.js';
import { storedAgentId } from '../runner/agent-ref.js';
import { connect } from '../runner/connect.js';
import { formatSpanTree } from '../runner/print.js';
import { runOneRollout } from '../runner/run-one.js';
import { parseCommand } from './flags.js';

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(ROLLOUT_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) {
    process.stderr.write(`agl rollout: give exactly one agent\n${commandHelp(ROLLOUT_COMMAND)}`);
    return 2;
  }
  if (!(ROLLOUT_MODES as readonly string[]).includes(values.mode)) {
    process.stderr.write(`agl rollout: --mode must be one of ${ROLLOUT_MODES.join(', ')}\n`);
    return 2;
  }
  let task: unknown = null;
  if (values.task !== undefined) {
    try {
      task = JSON.parse(values.task);
    } catch {
      task = values.task;
    }
  }
  const timeoutSeconds = values.timeout === undefined ? null : Number(values.timeout);
  if (timeoutSeconds !== null && !(timeoutSeconds > 0)) {
    process.stderr.write(`agl rollout: --timeout must be a positive number of seconds, got '${values.timeout}'\n`);
    return 2;
  }
  const agent = storedAgentId(positionals[0]); // the stable id, whatever the working directory (protocol/agent-id.ts)
  const { claim, result, attempts, spans } = await runOneRollout(connect(values), {
    agent,
    task,
    mode: values.mode as RolloutMode,
    timeoutSeconds,
    python: values.python,
    cwd: process.cwd(),
    log: (m) => process.stderr.write(`${m}\n`),
  });
  const status = result.rollout?.status ?? 'unknown';
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ rollout: result.rollout, attempts, spans, reward: result.outcome.reward, result: result.outcome.result ?? null })}\n`,
    );
  } else {
    process.stdout.write(`rollout ${claim.rollout.id}  attempt ${claim.attempt.id}  agent ${agent}\n\n`);
    process.stdout.write(`${formatSpanTree(spans)}\n\n`);
    if (result.outcome.error) process.stdout.write(`error: ${result.outcome.error.message}\n`);
    process.stdout.write(`status: ${status}   reward: ${result.outcome.reward ?? '-'}   spans: ${spans.length}\n`);
    const served = servedModels(spans);
    // Outside training: whether a trained checkpoint answered, or what the daemon serves (and how to change it).
    if (served.length) process.stdout.write(`model: ${served.map(servedModelText).join(', ')}\n${servedNote(served)}\n`);
  }
  return result.outcome.status === 'succeeded' ? 0 : 1;
}
