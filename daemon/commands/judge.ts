/**
 * `agl judge check RUN [--val FILE] [--step K] [--config train.yaml] [--judge-* ...] [--json]`: how well an LLM judge
 * agrees with the agent's own reward on a run's validation rollouts (daemon/judge/check.ts), before anyone trains on
 * it. The judge's settings: the run's recorded `judge:`, under the --config file's, under the flags. Parses, checks,
 * calls, prints; writes nothing to the store.
 * `agl judge check RUN --labels`: the same judge against people's labels of the run's rollouts (daemon/judge/check-labels.ts).
 */
import { resolveDataDir } from '../../client/daemon-state.js';
import { JUDGE_CHECK_COMMAND } from '../../protocol/cli-commands.js';
import { RELIABILITY_SAID_BELOW } from '../../protocol/metrics.js';
import type { JudgeSettings } from '../../protocol/judge-settings.js';
import { recordedTrainConfig } from '../../protocol/train-config.js';
import { configOverrides } from '../../protocol/train-options.js';
import { judgeSettingsFrom } from '../algorithm/config.js';
import { loadTasks } from '../algorithm/run-plan.js';
import { checkJudge, type CheckReport, type CheckedRollout } from '../judge/check.js';
import { checkAgainstLabels, JUDGED_GOOD_AT, type LabelsReport } from '../judge/check-labels.js';
import { openJudge } from '../judge/open-judge.js';
import { openStore } from '../store/index.js';
import { parseCommand } from './flags.js';

type Flags = Parameters<typeof configOverrides>[1];

/** The judge to check: the run's recorded one, under --config's, under the flags; a rubric file found from where it was named. */
function judgeSettings(recorded: JudgeSettings | null, configFile: string | undefined, flags: Flags): JudgeSettings {
  const given = configOverrides(JUDGE_CHECK_COMMAND.options, flags).judge as Record<string, unknown> | undefined;
  const settings = judgeSettingsFrom(recorded, configFile, given);
  if (!settings)
    throw new Error('the run has no judge: section; name one with --config train.yaml (its judge:) or --judge-url, --judge-model and --judge-rubric');
  return settings;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(JUDGE_CHECK_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
  const { values: f, positionals } = parsed;
  const say = (line: string) => process.stderr.write(`agl judge check: ${line}\n`);
  const [sub, runId] = positionals;
  const step = f.step === undefined ? null : Number(f.step);
  const limit = Number(f.limit);
  if (sub !== 'check' || !runId || (step !== null && !(Number.isInteger(step) && step >= 0)) || !(Number.isInteger(limit) && limit > 0)) {
    process.stderr.write(
      `${sub !== 'check' ? `agl judge: unknown subcommand '${sub ?? ''}' (check)` : !runId ? 'agl judge check: give the run id (agl train prints it; the dashboard shows it)' : '--step and --limit take whole numbers (--limit above 0)'}\n\n`,
    );
    return 2;
  }
  const store = await openStore(f.store ?? process.env.AGL_STORE ?? { dataDir: resolveDataDir(f['data-dir']) });
  try {
    const trainingRun = await store.getTrainingRun(runId);
    if (!trainingRun) {
      say(`no run '${runId}' in this store (--data-dir, --store)`);
      return 1;
    }
    const settings = judgeSettings(recordedTrainConfig(trainingRun.config)?.judge ?? null, f.config, f);
    const judge = openJudge(settings, { seed: 1, log: (m) => say(m) });
    if (f.labels) {
      const labels = await checkAgainstLabels(store, judge, { runId, limit });
      const judged = { ...labels, judge: { url: settings.url, model: settings.model, rubricSha: judge.rubricSha } };
      process.stdout.write(f.json ? `${JSON.stringify(judged, null, 1)}\n` : describeLabels(labels, settings, judge.rubricSha).join('\n') + '\n');
      const compared = labels.binary.good + labels.binary.bad + labels.scores.n > 0;
      if (!compared)
        say(
          labels.rollouts.length
            ? 'the judge scored none of the labelled rollouts'
            : `no rollout of run ${runId} has a label: mark some good or bad in the trajectory viewer`,
        );
      return compared ? 0 : 1;
    }
    const taskIds = f.val ? new Set(loadTasks(f.val, 'val').map((t) => t.id)) : null;
    const report = await checkJudge(store, judge, { runId, step, taskIds, limit });
    if (f.json)
      process.stdout.write(`${JSON.stringify({ ...report, judge: { url: settings.url, model: settings.model, rubricSha: judge.rubricSha } }, null, 1)}\n`);
    else process.stdout.write(describeReport(report, settings, judge.rubricSha).join('\n') + '\n');
    if (report.agreement.pairs === 0) say(nothingCompared(report));
    return report.agreement.pairs > 0 ? 0 : 1;
  } finally {
    await store.close();
  }
}

/** Why nothing was compared, and what to do. */
function nothingCompared(r: CheckReport): string {
  if (!r.rollouts.length) return `run ${r.runId} has no succeeded validation rollouts here (the --step or --val given?)`;
  if (!r.rollouts.some((c) => c.agent !== null)) return 'the agent gave none of these rollouts a reward of its own: there is nothing to agree with';
  return r.mode === 'group'
    ? "no task has two rollouts with different rewards of their own: in group mode the judge compares a task's rollouts; check over every validation (no --step), or with --judge-mode single"
    : 'every rollout the judge scored has the same reward of its own: nothing to order';
}

const fmt = (x: number | null, digits = 2) => (x === null ? '-' : x.toFixed(digits));
const quote = (c: CheckedRollout) => `agent ${fmt(c.agent)}, judge ${fmt(c.judge)}${c.explanation ? `: "${c.explanation}"` : ''}`;

/** The report as lines: what was judged and what it took, the agreement, the groups it could not score, the worst disagreements. */
function describeReport(r: CheckReport, s: JudgeSettings, rubricSha: string): string[] {
  const tasks = new Set(r.rollouts.map((c) => c.taskId)).size;
  const steps = [...new Set(r.rollouts.map((c) => c.step).filter((x) => x !== null))].sort((a, b) => a! - b!);
  const judged = r.rollouts.filter((c) => c.judge !== null).length;
  const own = r.rollouts.filter((c) => c.agent !== null).length;
  const tokens = r.tokens >= 1000 ? `${(r.tokens / 1000).toFixed(1)}k` : String(r.tokens);
  const a = r.agreement;
  return [
    `run ${r.runId}: ${r.rollouts.length} validation rollouts of ${tasks} task${tasks === 1 ? '' : 's'}${steps.length ? ` (step${steps.length === 1 ? '' : 's'} ${steps.join(', ')})` : ''}; judge ${s.model} at ${s.url}, ${r.mode} mode, rubric ${rubricSha}`,
    `  judged ${judged} in ${r.calls} call${r.calls === 1 ? '' : 's'}, ${tokens} tokens${r.cost === null ? '' : `, $${r.cost.toFixed(4)}`}; ${own} have a reward of the agent's own`,
    `  pairwise accuracy ${fmt(a.pairwiseAccuracy)} over ${a.pairs} pair${a.pairs === 1 ? '' : 's'} whose own rewards differ${r.mode === 'group' ? ' (within a task: what GRPO compares)' : ''}`,
    `  Spearman ${fmt(a.spearman)}${r.mode === 'group' ? ` (within ${a.spearmanGroups} task group${a.spearmanGroups === 1 ? '' : 's'} of 3 or more)` : ''}`,
    ...selfAgreementLines(r),
    ...r.failed.map((x) => `  could not score task ${x.taskId}: ${x.reason}`),
    ...(r.disagreements.length ? ['where they disagree most (the judge prefers the rollout the agent scored lower):'] : []),
    ...r.disagreements.map(
      (d) => `  task ${d.better.taskId} ${d.better.rolloutId} (${quote(d.better)}) over task ${d.worse.taskId} ${d.worse.rolloutId} (${quote(d.worse)})`,
    ),
  ];
}

/** The check against people's labels as lines: what was judged, the good/bad rates and kappa, Spearman, the position test. */
function describeLabels(r: LabelsReport, s: JudgeSettings, rubricSha: string): string[] {
  const b = r.binary;
  const p = r.position;
  return [
    `run ${r.runId}: ${r.rollouts.length} labelled rollouts (${b.good} good, ${b.bad} bad, ${r.scores.n} scored); judge ${s.model} at ${s.url}, ${r.mode} mode, rubric ${rubricSha}, ${r.calls} calls`,
    `  good/bad (judged good at ${JUDGED_GOOD_AT} or more): true-positive rate ${fmt(b.tpr)} (${b.truePositives} of ${b.good}), ` +
      `true-negative rate ${fmt(b.tnr)} (${b.trueNegatives} of ${b.bad}), Cohen's kappa ${fmt(b.kappa)}`,
    `  scores: Spearman ${fmt(r.scores.spearman)} over ${r.scores.n}`,
    `  position: ${p.pairs} pair${p.pairs === 1 ? '' : 's'} of a task shown in both orders, the verdict flipped in ${p.flipped} (rate ${fmt(p.flipRate)})` +
      (p.flipRate !== null && p.flipRate > 0 ? ': the place a trajectory is shown at sways this judge' : ''),
    ...r.failed.map((x) => `  could not score task ${x.taskId}: ${x.reason}`),
  ];
}

/** How informative the judge is (judge.retest), as training would read it: its reliability between calls, and the weight. */
function selfAgreementLines(r: CheckReport): string[] {
  const s = r.selfAgreement;
  if (!s) return [];
  if (!s.pairs) return ['  self-agreement: no trajectory was scored by two separate calls (no group the judge could score whose scores spread)'];
  const verdict =
    s.weight >= RELIABILITY_SAID_BELOW
      ? 'it agrees with itself'
      : s.weight > 0
        ? `training would scale its groups' advantages by ${fmt(s.weight)}`
        : `training would leave its groups out: ${s.df <= 2 ? 'too few pairs to bound its reliability (3 degrees of freedom or more)' : 'its scores are not shown to reproduce at 95%'}`;
  return [
    `  self-agreement: ${s.pairs} trajector${s.pairs === 1 ? 'y' : 'ies'} scored by two separate calls (mean |difference| ${fmt(s.meanAbsDiff, 3)} over every pair); ` +
      `reliability ${fmt(s.r)} (at least ${fmt(s.low)} at 95%, ${fmt(s.df, 1)} degrees of freedom): ` +
      `informativeness ${fmt(s.informativeness)}, weight ${fmt(s.weight)} (${verdict})`,
  ];
}
