/**
 * `agl rollouts list [--status --mode --agent --limit --cursor --json]` and `agl rollouts show <id> [--json]`:
 * read rollouts back from the running daemon (through the typed client), as a table or as JSON.
 * `show` prints the rollout, its attempts and a summary of its spans (counts by name, LLM calls, and the latest
 * attempt's rewards with its final one, read as every reader reads them: protocol/span-reading.ts).
 */
import { commandHelp } from '../../protocol/cli-options.js';
import { ROLLOUTS_LIST_COMMAND, ROLLOUTS_SHOW_COMMAND } from '../../protocol/cli-commands.js';
import { ROLLOUT_MODES, ROLLOUT_STATUSES, type Attempt, type Rollout, type RolloutMode, type RolloutStatus, type Span } from '../../protocol/store.js';
import { isLlmCallSpan, pickFinalReward, rewardsInOrder } from '../../protocol/span-reading.js';
import { connectedWorkers, statusWords } from '../../protocol/runner-presence.js';
import { AglClient } from '../../client/client.js';
import { resolveDataDir } from '../../client/daemon-state.js';
import { parseCommand } from './flags.js';

/** Both subcommands' flags (protocol/cli-commands.ts), as `agl rollouts --help` prints them. */
const HELP = [ROLLOUTS_LIST_COMMAND, ROLLOUTS_SHOW_COMMAND].map(commandHelp).join('\n');

const SHOW_SPAN_LIMIT = 10_000;

const ago = (t: number | null) => {
  if (t == null) return '-';
  const s = Math.max(0, (Date.now() - t) / 1000);
  return s < 60
    ? `${s.toFixed(0)}s ago`
    : s < 3600
      ? `${(s / 60).toFixed(0)}m ago`
      : s < 86400
        ? `${(s / 3600).toFixed(1)}h ago`
        : `${(s / 86400).toFixed(1)}d ago`;
};
const clip = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

async function list(argv: string[]): Promise<number> {
  const parsed = parseCommand(ROLLOUTS_LIST_COMMAND, argv, HELP);
  if ('exit' in parsed) return parsed.exit;
  const { values } = parsed;
  const client = AglClient.fromDataDir(resolveDataDir(values['data-dir']));
  const status = values.status?.split(',').filter(Boolean);
  const badStatus = status?.find((s) => !(ROLLOUT_STATUSES as readonly string[]).includes(s));
  if (badStatus) {
    process.stderr.write(`agl rollouts list: unknown --status '${badStatus}' (one of ${ROLLOUT_STATUSES.join(', ')})\n`);
    return 2;
  }
  if (values.mode && !(ROLLOUT_MODES as readonly string[]).includes(values.mode)) {
    process.stderr.write(`agl rollouts list: unknown --mode '${values.mode}' (one of ${ROLLOUT_MODES.join(', ')})\n`);
    return 2;
  }
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) {
    process.stderr.write(`agl rollouts list: --limit must be a positive integer, got '${values.limit}'\n`);
    return 2;
  }
  const page = await client.queryRollouts({
    status: status as RolloutStatus[] | undefined,
    mode: values.mode as RolloutMode | undefined,
    agent: values.agent,
    limit,
    cursor: values.cursor,
  });
  if (values.json) {
    process.stdout.write(JSON.stringify(page) + '\n');
    return 0;
  }
  if (page.items.length === 0) {
    process.stdout.write('no rollouts match\n');
    return 0;
  }
  const queued = page.items.some((r) => r.status === 'queuing' || r.status === 'requeuing');
  const runnerConnected = !queued || connectedWorkers(await client.listWorkers()).length > 0;
  const rows = [['ID', 'STATUS', 'MODE', 'AGENT', 'ATTEMPTS', 'CREATED', 'INPUT']];
  for (const r of page.items) {
    rows.push([
      r.id,
      statusWords(r.status, runnerConnected),
      r.mode,
      clip(r.agent ?? '-', 40),
      String(r.attemptCount),
      ago(r.createdAt),
      clip(JSON.stringify(r.input) ?? '', 50),
    ]);
  }
  process.stdout.write(table(rows));
  const limitFlag = values.limit === ROLLOUTS_LIST_COMMAND.options.limit.default ? '' : ` --limit ${limit}`;
  if (page.nextCursor) process.stdout.write(`more: agl rollouts list --cursor ${page.nextCursor}${limitFlag}\n`);
  return 0;
}

function showText(rollout: Rollout, attempts: Attempt[], spans: Span[]): string {
  const lines = [
    `rollout ${rollout.id}`,
    `  status:     ${rollout.status}${rollout.endedAt ? ` (ended ${ago(rollout.endedAt)})` : ''}`,
    `  mode:       ${rollout.mode}    agent: ${rollout.agent ?? '-'}    resources: ${rollout.resourcesId ?? 'latest'}`,
    `  created:    ${new Date(rollout.createdAt).toISOString()} (${ago(rollout.createdAt)})`,
    `  config:     ${JSON.stringify(rollout.config)}`,
    `  input:      ${clip(JSON.stringify(rollout.input) ?? 'null', 200)}`,
  ];
  if (Object.keys(rollout.metadata).length) lines.push(`  metadata:   ${clip(JSON.stringify(rollout.metadata), 200)}`);
  lines.push('', `attempts (${attempts.length})`);
  for (const a of attempts) {
    const n = spans.filter((s) => s.attemptId === a.id).length;
    const took = a.endedAt ? `${((a.endedAt - a.startedAt) / 1000).toFixed(2)}s` : `running ${ago(a.startedAt)}`;
    lines.push(
      `  #${a.sequence} ${a.id}  ${a.status.padEnd(12)} worker ${a.workerId ?? '-'}  ${took}  ${n} spans${a.error ? `  error: ${clip(a.error.message, 120)}` : ''}`,
    );
  }
  const byName = new Map<string, number>();
  for (const s of spans) byName.set(s.name, (byName.get(s.name) ?? 0) + 1);
  const latest = attempts.reduce<Attempt | null>((a, b) => (a === null || b.sequence > a.sequence ? b : a), null)?.id;
  const rewards = rewardsInOrder(spans.filter((s) => s.attemptId === latest));
  const final = pickFinalReward(rewards);
  const llmCalls = spans.filter(isLlmCallSpan);
  lines.push('', `spans (${spans.length === SHOW_SPAN_LIMIT ? `first ${SHOW_SPAN_LIMIT}` : spans.length})`);
  for (const [name, n] of [...byName].sort((a, b) => b[1] - a[1])) lines.push(`  ${String(n).padStart(5)}  ${name}`);
  if (llmCalls.length) lines.push(`  LLM calls: ${llmCalls.length}`);
  if (final) lines.push(`  rewards: ${rewards.map((r) => r.value.toFixed(3)).join(', ')}  (latest attempt; final ${final.value.toFixed(3)})`);
  return lines.join('\n') + '\n';
}

async function show(argv: string[]): Promise<number> {
  const parsed = parseCommand(ROLLOUTS_SHOW_COMMAND, argv, HELP);
  if ('exit' in parsed) return parsed.exit;
  const { values, positionals } = parsed;
  const id = positionals[0];
  if (!id) {
    process.stderr.write('agl rollouts show: give a rollout id (agl rollouts list shows them)\n');
    return 2;
  }
  const client = AglClient.fromDataDir(resolveDataDir(values['data-dir']));
  const rollout = await client.getRollout(id);
  if (!rollout) {
    process.stderr.write(`agl rollouts show: no rollout '${id}' (agl rollouts list shows the ids)\n`);
    return 1;
  }
  const [attempts, spans] = await Promise.all([client.getAttempts(id), client.querySpans({ rolloutId: id, limit: SHOW_SPAN_LIMIT })]);
  if (values.json) {
    process.stdout.write(JSON.stringify({ rollout, attempts, spans }) + '\n');
    return 0;
  }
  process.stdout.write(showText(rollout, attempts, spans));
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h') {
    process.stdout.write(HELP);
    return sub ? 0 : 2;
  }
  if (sub !== 'list' && sub !== 'show') {
    process.stderr.write(`agl rollouts: unknown subcommand '${sub}' (list or show)\n\n${HELP}`);
    return 2;
  }
  return sub === 'list' ? list(rest) : show(rest);
}
