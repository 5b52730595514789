/**
 * The dashboard's run header: status and why the run stopped (completed the plan, stopped at maxSteps or
 * maxMinutes, cancelled, failed with its error), progress, the configuration that matters when comparing
 * runs (model, learning rate, batch, group size, GRPO variant), elapsed time, the best checkpoint (step and
 * held-out reward), and the latest rewards. Reads the TrainingRun record as `agl train` writes it
 * (config = the resolved TrainConfig, summary = protocol/metrics.ts TrainingRunSummary).
 */
import { METRICS, describeEngine, describePeakMemory, type TrainingRunSummary } from '../../protocol/metrics.js';
import type { TrainingRun } from '../../protocol/store.js';
import { runRoles, type RolesConfig } from '../../protocol/call-roles.js';
import { fmtTime, h, icon, mount } from '../shared/dom.js';
import { fmtElapsed, fmtExponent, fmtMetric } from './format.js';

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});

/** The run's TrainConfig sections, as far as the record has them. */
function configOf(run: TrainingRun): { model: Json; training: Json; grpo: Json } {
  const training = obj(run.config.training);
  return { model: obj(run.config.model), training, grpo: obj(training.grpo) };
}

/** A run as legends and pickers name it: the user's label when it has one, its agent's export and when it started. */
export function runLabel(run: TrainingRun): string {
  const label = (run.summary as TrainingRunSummary).label;
  return `${label ? `${label} · ` : ''}${run.agent.split('#').pop()!.split(/[\\/]/).pop()} · ${fmtTime(run.createdAt)}`;
}

/**
 * The role names an agentMatch selects when it is a list of names anchored at both ends (`^(writer|rewriter)$`,
 * `^writer$`, `^(?:a|b)$`); null for any other expression, which the header then quotes as one.
 */
export function matchedRoles(agentMatch: string): string[] | null {
  const m = /^\^(?:\((?:\?:)?([\w-]+(?:\|[\w-]+)*)\)|([\w-]+))\$$/.exec(agentMatch);
  return m ? (m[1] ?? m[2])!.split('|') : null;
}

/** Which roles the run trained and how (protocol/call-roles.ts's rule, from its recorded config), for the header. */
export function rolesLine(run: TrainingRun): HTMLElement | null {
  const roles = runRoles(run.id, run.config as RolesConfig); // the recorded config is the parsed TrainConfig (no zod in the webview);
  const trained = Object.entries(roles.policies);
  if (!trained.length && !roles.agentMatch) return null;
  return h(
    'span',
    { class: 'cfg roles', 'data-field': 'roles', title: `Run ${run.id} ${roles.rule}` },
    icon('organization'),
    trained.length
      ? [' policies ', ...trained.flatMap(([role, policy], i) => [i ? ', ' : '', h('b', {}, role), policy === role ? '' : ` (shares ${policy})`])]
      : trainsLine(roles.agentMatch!),
  );
}

/** "trains writer, rewriter" for a list of names; "trains the roles matching /writer/" for any other expression. */
function trainsLine(agentMatch: string): (HTMLElement | string)[] {
  const names = matchedRoles(agentMatch);
  if (names) return [' trains ', ...names.flatMap((n, i) => [i ? ', ' : '', h('b', {}, n)])];
  return [' trains the roles matching ', h('b', { class: 'mono' }, `/${agentMatch}/`)];
}

/**
 * A run still marked running whose record has not moved for this long probably lost its process (killed,
 * machine restarted): `agl train` updates it after every step.
 */
export const STALE_RUN_MS = 30 * 60_000;

const steps = (n: number): string => `${n} step${n === 1 ? '' : 's'}`;

/**
 * Why the run stopped, in one sentence, beside its status pill and "step n / total" (drawRunHeader): it says neither
 * again ('' when the pill says all: running, cancelled).
 */
export function describeStop(run: TrainingRun, now = Date.now()): string {
  const s = run.summary as TrainingRunSummary;
  const { training } = configOf(run);
  const reason = s.stopReason ?? (run.status === 'succeeded' ? (run.step >= run.totalSteps ? 'completed' : 'max-minutes') : run.status);
  switch (reason) {
    case 'running':
      return now - run.updatedAt > STALE_RUN_MS
        ? `no progress for ${Math.round((now - run.updatedAt) / 60_000)} min: if its agl train was stopped, continue with agl train --resume ${run.id}`
        : '';
    case 'completed':
      return `completed the plan${s.fewerSteps ? ` (${s.fewerSteps})` : ''}`;
    case 'max-steps': {
      const epochs = typeof training.epochs === 'number' ? training.epochs : null;
      const planned = s.epochSteps
        ? ` of the ${steps(s.epochSteps)} ${epochs === null ? 'its epochs' : `its ${epochs} epoch${epochs === 1 ? '' : 's'}`} would take`
        : '';
      return `stopped at maxSteps after ${steps(run.step)}${planned}`;
    }
    case 'max-minutes':
      return typeof training.maxMinutes === 'number' && training.maxMinutes > 0 ? `stopped at maxMinutes (${training.maxMinutes} min)` : 'stopped early';
    case 'judge-divergence':
      return `stopped after ${steps(run.step)}: the judge's reward rose while the trusted reward fell (--stop-on-divergence)`;
    case 'cancelled':
      return '';
    case 'failed':
      return s.error ?? 'no error recorded';
    default:
      return reason === run.status ? '' : reason;
  }
}

/** Each policy of a run with policies per role, with its own learning rate and GRPO settings as `agl train` recorded them; null otherwise. */
function ownSettings(run: TrainingRun): { name: string; lr: unknown; variant: unknown; beta: unknown }[] | null {
  const policies = (run.summary as TrainingRunSummary).policies;
  if (!policies || policies.length === 0 || policies.every((p) => p.roles === null)) return null;
  return policies.map((p) => ({ name: p.name, lr: p.learningRate, variant: p.variant, beta: p.beta }));
}

/** [field, label, value, config key] of the settings worth comparing across runs; each policy's own where they differ. */
export function configSummary(run: TrainingRun): [string, string, string, string][] {
  const { model, training, grpo } = configOf(run);
  const out: [string, string, string, string][] = [];
  const add = (field: string, label: string, value: unknown, key: string, fmt: (v: number) => string = String) => {
    if (typeof value === 'number') out.push([field, label, fmt(value), key]);
    else if (typeof value === 'string' && value) out.push([field, label, value, key]);
  };
  const lrFmt = (v: number) => (v < 1e-2 ? fmtExponent(v, 3) : String(v));
  const policies = ownSettings(run);
  /** A setting each policy has its own of: one value when they agree, else each policy's. */
  const perPolicy = (
    field: string,
    label: string,
    pick: (p: NonNullable<typeof policies>[number]) => unknown,
    key: string,
    fmt: (v: number) => string = String,
  ) => {
    const values = policies!.map(pick);
    if (values.every((v) => v === values[0])) return add(field, label, values[0], key, fmt);
    const each = policies!.map((p, i) => `${p.name} ${typeof values[i] === 'number' ? fmt(values[i] as number) : String(values[i])}`).join(' · ');
    out.push([field, label, each, `${key} (each policy its own: policies.<role>)`]);
  };
  add('model', 'model', model.init ?? model.name, model.init ? 'model.init' : 'model.name');
  if (policies) perPolicy('lr', 'lr', (p) => p.lr, 'training.learningRate', lrFmt);
  else add('lr', 'lr', training.learningRate, 'training.learningRate', lrFmt);
  add('batch', 'batch', training.batchSize, 'training.batchSize (tasks per step)');
  add('group', 'group size', training.groupSize, 'training.groupSize (rollouts per task)');
  if (policies) perPolicy('variant', 'algorithm', (p) => p.variant, 'training.grpo.variant');
  else add('variant', 'algorithm', grpo.variant, 'training.grpo.variant');
  const betas = policies ? policies.map((p) => p.beta) : [grpo.beta];
  if (betas.some((b) => typeof b === 'number' && b > 0)) {
    if (policies) perPolicy('beta', 'KL β', (p) => p.beta, 'training.grpo.beta');
    else add('beta', 'KL β', grpo.beta, 'training.grpo.beta');
  }
  return out;
}

function elapsedMs(run: TrainingRun): number {
  const s = run.summary as TrainingRunSummary;
  if (typeof s.elapsedMs === 'number' && run.status !== 'running') return s.elapsedMs;
  return (run.status === 'running' ? Date.now() : run.updatedAt) - run.createdAt;
}

/** Latest values of a metric of this run (from the charts). */
export type Latest = (metric: string) => number | undefined;

/** The best held-out reward: the kept checkpoint when the run recorded one, else the best validation point. */
function bestLine(run: TrainingRun, bestValidation: { step: number; reward: number } | null): HTMLElement | null {
  const best = (run.summary as TrainingRunSummary).best;
  if (best) {
    return h(
      'span',
      { class: 'kpi best', title: best.path ? `weights: ${best.path}` : 'weights not kept' },
      icon('star-full'),
      ' best checkpoint: step ',
      h('b', {}, String(best.step)),
      ' · held-out ',
      h('b', {}, fmtMetric(best.reward)),
    );
  }
  if (!bestValidation) return null;
  return h(
    'span',
    { class: 'kpi best', title: 'this run recorded no best checkpoint; the best validation point is shown' },
    icon('star-empty'),
    ' best held-out: ',
    h('b', {}, fmtMetric(bestValidation.reward)),
    ` at step ${bestValidation.step}`,
  );
}

/** What the run was measured on (engine, device, dtype, ranks) and its peak memory, as agl train recorded them. */
function measuredOn(run: TrainingRun, peakMiB: number | null): HTMLElement | null {
  const engine = (run.summary as TrainingRunSummary).engine;
  if (!engine && peakMiB === null) return null;
  return h(
    'span',
    {
      class: 'cfg engine',
      'data-field': 'engine',
      title: 'what this run was trained and measured on (summary.engine), and the most memory one of its updates took',
    },
    icon('server-environment'),
    engine ? [' ', h('b', {}, describeEngine(engine))] : null,
    peakMiB !== null ? [' · peak ', h('b', {}, describePeakMemory(peakMiB, engine?.memory))] : null,
  );
}

export function drawRunHeader(
  el: HTMLElement,
  run: TrainingRun,
  latest: Latest,
  bestValidation: { step: number; reward: number } | null,
  peakMiB: number | null = null,
): void {
  const summary = run.summary as TrainingRunSummary;
  const bar = h('vscode-progress-bar', { value: run.step, max: Math.max(1, run.totalSteps) });
  const last = latest(METRICS.rewardMean);
  const val = latest(METRICS.valReward);
  const valTasks = latest(METRICS.valTasks) ?? summary.tasks?.val;
  const stop = describeStop(run);
  mount(
    el,
    h(
      'div',
      { class: 'progress-line' },
      h('span', { class: `pill status-${run.status}` }, run.status),
      stop ? h('span', { class: 'stop-reason' }, stop) : null,
      h('span', { class: 'muted' }, `step ${run.step} / ${run.totalSteps}`),
      h('div', { class: 'spacer' }),
      last !== undefined ? h('span', { class: 'kpi', title: METRICS.rewardMean }, 'training reward ', h('b', {}, fmtMetric(last))) : null,
      val !== undefined
        ? h(
            'span',
            { class: 'kpi held-out', title: `${METRICS.valReward}: the mean reward of the last validation, over ${valTasks ?? 'its'} held-out tasks` },
            'held-out ',
            h('b', {}, fmtMetric(val)),
            valTasks ? ` of ${valTasks} task${valTasks === 1 ? '' : 's'}` : '',
          )
        : null,
      run.status === 'running' ? h('span', { class: 'live' }, h('span', { class: 'live-dot' }), 'live') : null,
    ),
    h(
      'div',
      { class: 'run-facts' },
      h('span', { class: 'muted', title: run.id }, run.agent),
      rolesLine(run),
      measuredOn(run, peakMiB),
      ...configSummary(run).map(([field, label, value, key]) => h('span', { class: 'cfg', 'data-field': field, title: key }, `${label} `, h('b', {}, value))),
      h(
        'span',
        { class: 'cfg', 'data-field': 'elapsed', title: `started ${fmtTime(run.createdAt)}` },
        icon('clock'),
        ' ',
        h('b', {}, fmtElapsed(elapsedMs(run))),
      ),
      bestLine(run, bestValidation),
    ),
    run.totalSteps > 0 && run.status === 'running' ? bar : null,
    run.checkpointDir ? h('div', { class: 'muted' }, icon('save'), ` checkpoint: ${run.checkpointDir}`) : null,
  );
}
