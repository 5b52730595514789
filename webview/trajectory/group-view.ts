/**
 * The GRPO GROUP view: for one training step, each group (one task, shown whole with its expected answer)
 * with its n samples side by side as cards (group-card.ts): reward, the advantage GRPO stored, the calls
 * with their credit, tool steps, errors and the final answer; with an LLM judge, its ranking of the samples with each
 * reason. Identical answers merge into one card with a count; cards sort by reward or advantage; groups whose credits are all equal (zero variance: they teach
 * nothing) start folded. The advantage formula, with this group's own mean, std and the run's scaling, is
 * in the tooltip of the group's numbers. Cards flow in a responsive grid, so the view works in a half-width
 * editor split.
 */
import type { GroupAdvantage, GroupData, GroupPage } from '../../protocol/webview-trajectory.js';
import { STD_EPS } from '../../protocol/grpo-advantage.js';
import { fmtNumber, fmtSigned, h, icon, mount } from '../shared/dom.js';
import { EXPECTED_TASK_KEYS } from '../../protocol/span-reading.js';
import { expectedBlock, valueText } from './answer.js';
import { answerCard, answerCards, cardAdvantage, type AnswerCard, type CardActions } from './group-card.js';
import { judgeRankingBlock } from './judge-view.js';

export interface GroupViewActions extends CardActions {
  back(): void;
  /** What Back returns to, for its tooltip ("Back to rollouts", "Back to rollout …"). */
  backLabel?: string;
  selectStep(step: number): void;
  openDashboard(runId: string): void;
}

type SortKey = 'reward' | 'advantage';
/** What the user chose in the view, kept by its caller while the panel lives (a redraw or another step keeps them). */
export interface GroupPrefs {
  sort: SortKey;
  merge: boolean;
  /** Folded or not, by step and group, where the user toggled it. */
  folded: Map<string, boolean>;
}
export const defaultGroupPrefs = (): GroupPrefs => ({ sort: 'reward', merge: true, folded: new Map() });

/** The task whole, one line per field, wrapped; the expected answer marked. */
function taskBlock(input: unknown): HTMLElement {
  const entries = input && typeof input === 'object' && !Array.isArray(input) ? Object.entries(input) : [['task', input] as [string, unknown]];
  return h(
    'dl',
    { class: 'task-full' },
    ...entries.flatMap(([k, v]) => {
      const expected = EXPECTED_TASK_KEYS.test(k);
      return [
        h('dt', { class: expected ? 'expected' : '' }, expected ? `${k} (expected)` : k),
        h('dd', { class: `mono${expected ? ' expected' : ''}`, 'data-key': k }, valueText(v)),
      ];
    }),
  );
}

/** The advantage of one call as the run scaled it, with the numbers given (mean, std, batch std), ε for the small constant. */
function advantageTerm(scaleRewards: GroupAdvantage['scaleRewards'], m: string, s: string, b: string): string {
  return scaleRewards === 'group'
    ? `(credit − ${m}) / (${s} + ε)`
    : scaleRewards === 'batch'
      ? `(credit − ${m}) / (${b} + ε)`
      : scaleRewards === 'none'
        ? `credit − ${m}`
        : `mean ${m} · std ${s}`;
}

/** Whether the stored advantages follow from the numbers shown. */
function storedLine(matches: boolean | null): string {
  return matches === true
    ? 'The stored advantages follow from these numbers.'
    : matches === false
      ? 'The stored advantages do NOT follow from these numbers (e.g. dynamic sampling dropped this group: its advantages were set to 0).'
      : 'The advantages shown are the ones the trainer stored.';
}

/** The formula with each role's numbers, when the run grouped by task and role (training.groupBy task-role). */
function formulaByRole(adv: GroupAdvantage, roles: NonNullable<GroupAdvantage['byRole']>): { short: string; full: string } {
  const b = fmtNumber(adv.batchStd);
  const term = (r: (typeof roles)[number]) => advantageTerm(r.scaleRewards ?? adv.scaleRewards, fmtNumber(r.mean), fmtNumber(r.std), b);
  const name = (r: (typeof roles)[number]) => r.role ?? '(no role)';
  const short = roles.map((r) => `${name(r)}: A = ${term(r)}`).join(' · ');
  const full = [
    `GRPO advantage of each call in this group${adv.variant ? ` (variant ${adv.variant})` : ''}: the run grouped by task and role (training.groupBy: task-role), ` +
      `so each call is compared with the same role's calls of this task only.`,
    ...roles.map(
      (r) =>
        `  ${name(r)}: ${r.calls} call${r.calls === 1 ? '' : 's'}, mean ${fmtNumber(r.mean)}, std ${fmtNumber(r.std)}: A = ${term(r)}${r.zeroVariance ? ' (all equal: no signal)' : ''}`,
    ),
    storedLine(adv.matchesStored),
  ].join('\n');
  return { short, full };
}

/** The formula per policy, when the group's calls come from policies that scaled their advantages differently. */
function formulaByPolicy(adv: GroupAdvantage, policies: NonNullable<GroupAdvantage['byPolicy']>): { short: string; full: string } {
  const [m, s, b] = [adv.mean, adv.std, adv.batchStd].map(fmtNumber) as [string, string, string];
  const term = (p: (typeof policies)[number]) => advantageTerm(p.scaleRewards, m, s, b);
  const short = policies.map((p) => `${p.policy}: A = ${term(p)}`).join(' · ');
  const full = [
    `GRPO advantage of each call in this group: its credit minus the group mean (${m}, std ${s} over the ${adv.calls} calls), ` +
      `scaled by the settings of the policy that trained it:`,
    ...policies.map(
      (p) =>
        `  ${p.policy} (${p.roles ? `role${p.roles.length === 1 ? '' : 's'} ${p.roles.join(', ')}` : 'every call'}; variant ${p.variant}; ` +
        `${p.calls} call${p.calls === 1 ? '' : 's'} here): A = ${term(p)}`,
    ),
    storedLine(adv.matchesStored),
  ].join('\n');
  return { short, full };
}

/** The formula with this group's numbers, as a tooltip text, and its short visible form. */
export function formulaText(adv: GroupAdvantage, group: GroupData): { short: string; full: string } {
  if (adv.byRole?.length) return formulaByRole(adv, adv.byRole);
  if (adv.byPolicy?.length) return formulaByPolicy(adv, adv.byPolicy);
  const m = fmtNumber(adv.mean),
    s = fmtNumber(adv.std),
    b = fmtNumber(adv.batchStd);
  const rollouts = group.samples.length;
  const term = advantageTerm(adv.scaleRewards, m, s, b);
  const short = adv.scaleRewards ? `A = ${term}` : term;
  const scaling =
    adv.scaleRewards === 'group'
      ? "divided by the group's std (GRPO)"
      : adv.scaleRewards === 'batch'
        ? `divided by the std of the whole step's calls (${b})`
        : adv.scaleRewards === 'none'
          ? 'not divided by any std (Dr.GRPO)'
          : 'scaled as the run did; it did not record how (no training.grpo.scaleRewards in its config)';
  const seen = new Map<number, number>();
  for (const t of group.samples.flatMap((x) => x.transitions)) if (!seen.has(t.credit)) seen.set(t.credit, t.advantage);
  const examples = [...seen.entries()].sort((a, b2) => b2[0] - a[0]).map(([c, a]) => `  credit ${fmtNumber(c)} → stored A ${fmtSigned(a)}`);
  const full = [
    `GRPO advantage of each call in this group${adv.variant ? ` (variant ${adv.variant})` : ''}: its credit minus the group mean, ${scaling}.`,
    adv.scaleRewards === 'group'
      ? `A = (credit − mean) / (std + ε) = (credit − ${m}) / (${s} + ${STD_EPS})`
      : adv.scaleRewards === 'batch'
        ? `A = (credit − mean) / (batch std + ε) = (credit − ${m}) / (${b} + ${STD_EPS})`
        : adv.scaleRewards === 'none'
          ? `A = credit − mean = credit − ${m}`
          : `mean ${m}, std ${s}`,
    `mean ${m} and std ${s} (unbiased) are over the ${adv.calls} calls of the ${rollouts} rollouts, each call's credit: a rollout with more calls counts more, so they differ from the rollouts' reward mean and std.`,
    ...examples,
    storedLine(adv.matchesStored),
  ].join('\n');
  return { short, full };
}

/** How many different answers the samples gave (what the agent returned or emitted, never an LLM reply), and how the cards fold them. */
function distinctChip(group: GroupData, cards: number, merged: boolean): HTMLElement {
  const none = group.samples.filter((x) => x.answer.source === 'none').length;
  const n = group.distinctAnswers;
  const title =
    `${n} distinct answer${n === 1 ? '' : 's'} among the ${group.samples.length} samples` +
    (none ? ` (${none} recorded none)` : '') +
    (merged ? `; merged into ${cards} card${cards === 1 ? '' : 's'} by answer, reward and error` : '');
  return h('span', { class: 'chip distinct-answers', 'data-distinct': n, title }, `${n} distinct answer${n === 1 ? '' : 's'}`);
}

/**
 * The group's calls: those trained on (the group GRPO compares, each a transition) of every LLM call its samples made
 * ("8 trained calls of 19"); the cards show each sample's calls, trained or not.
 */
function callsChip(trained: number, group: GroupData): HTMLElement {
  const all = group.samples.reduce((n, s) => n + s.calls.length, 0);
  const title =
    `${trained} call${trained === 1 ? '' : 's'} trained on (the group GRPO compares) of the ${all} LLM calls the ${group.samples.length} samples made` +
    (all > trained ? `; the others were not trained (each card says why)` : '');
  return h('span', { class: 'chip calls', 'data-trained': trained, 'data-calls': all, title }, `${trained} trained call${trained === 1 ? '' : 's'} of ${all}`);
}

function groupSection(group: GroupData, step: number | null, actions: GroupViewActions, prefs: GroupPrefs, redraw: () => void): HTMLElement {
  const adv = group.advantage;
  const rewards = group.samples.map((s) => s.reward).filter((r): r is number => r !== null);
  const zeroVariance = adv ? adv.zeroVariance : rewards.length > 1 && rewards.every((r) => r === rewards[0]);
  const key = `${step}:${group.groupId}`;
  const folded = prefs.folded.get(key) ?? zeroVariance;
  const cards = answerCards(group.samples, prefs.merge);
  const by = (c: AnswerCard): number => (prefs.sort === 'advantage' ? cardAdvantage(c) : c.reward) ?? -Infinity;
  cards.sort((a, b) => by(b) - by(a));
  const maxAbs = Math.max(0, ...group.samples.flatMap((s) => s.transitions.map((t) => Math.abs(t.advantage))));
  const formula = adv ? formulaText(adv, group) : null;
  const toggle = h(
    'a',
    { href: '#', class: 'group-toggle', 'aria-expanded': String(!folded), title: folded ? 'Show the samples' : 'Fold the samples' },
    icon(folded ? 'chevron-right' : 'chevron-down'),
    h('h2', {}, `Task ${group.groupId}`),
  );
  toggle.addEventListener('click', (e) => {
    e.preventDefault();
    prefs.folded.set(key, !folded);
    redraw();
  });
  return h(
    'section',
    { class: `group${folded ? ' folded' : ''}`, 'data-group-id': group.groupId },
    h(
      'div',
      { class: 'group-head' },
      toggle,
      h('span', { class: 'chip samples-count', title: `${group.samples.length} samples (rollouts) of this task` }, `n = ${group.samples.length}`),
      adv ? callsChip(adv.calls, group) : null,
      formula ? h('span', { class: 'chip group-mean', title: formula.full }, `mean ${fmtNumber(adv!.mean)}`) : null,
      formula ? h('span', { class: 'chip group-std', title: formula.full }, `std ${fmtNumber(adv!.std)}`) : null,
      zeroVariance
        ? h('span', { class: 'chip warning', title: 'Every call got the same credit: GRPO advantages are zero, this group teaches nothing' }, 'zero variance')
        : null,
      adv?.matchesStored === false ? h('span', { class: 'chip negative', title: formula!.full }, 'advantages ≠ formula') : null,
      distinctChip(group, cards.length, prefs.merge),
      folded ? h('span', { class: 'muted folded-note' }, `${cards.length} answer${cards.length === 1 ? '' : 's'} folded`) : null,
    ),
    taskBlock(group.input),
    // What the agent scored the samples against, when it said (sql: the gold query and its rows).
    group.expected?.emitted ? expectedBlock(group.expected.emitted, group.expected.fields) : null,
    // An LLM judge's ranking of the samples, with each reason (when a judge scored them).
    folded ? null : judgeRankingBlock(group.samples, (id) => actions.openRollout(id)),
    formula && (adv!.scaleRewards || adv!.byPolicy) && !folded
      ? h('div', { class: 'formula mono', title: formula.full }, icon('info'), ` ${formula.short}`)
      : null,
    folded ? null : h('div', { class: 'samples' }, ...cards.map((c, i) => answerCard(c, i, maxAbs, actions))),
  );
}

function control<T extends HTMLElement>(el: T, event: string, fn: (el: T) => void): T {
  el.addEventListener(event, () => fn(el));
  return el;
}

/** The header: Back, the step and run, a link to the run's curves, and the step, sort and merge controls. */
function groupHeader(page: GroupPage, actions: GroupViewActions, prefs: GroupPrefs, redraw: () => void): HTMLElement {
  const backLabel = actions.backLabel ?? 'Back to rollouts';
  const back = h('vscode-toolbar-button', { icon: 'arrow-left', label: backLabel, title: `${backLabel} (Backspace, Alt+Left)`, class: 'back' });
  back.addEventListener('click', actions.back);
  const stepSelect = control(
    h(
      'vscode-single-select',
      { class: 'step-select', 'aria-label': 'Training step' },
      ...page.steps.map((s) => h('vscode-option', { value: String(s), selected: s === page.step }, `step ${s}`)),
    ),
    'change',
    (el) => actions.selectStep(Number((el as unknown as { value: string }).value)),
  );
  const sortSelect = control(
    h(
      'vscode-single-select',
      { class: 'sort-select', 'aria-label': 'Sort the answers by' },
      h('vscode-option', { value: 'reward', selected: prefs.sort === 'reward' }, 'by reward'),
      h('vscode-option', { value: 'advantage', selected: prefs.sort === 'advantage' }, 'by advantage'),
    ),
    'change',
    (el) => {
      prefs.sort = (el as unknown as { value: SortKey }).value;
      redraw();
    },
  );
  const merge = control(
    h('vscode-checkbox', {
      class: 'merge-toggle',
      checked: prefs.merge,
      label: 'Merge same answers',
      title: 'One card per distinct answer (what the agent returned or emitted) and reward, with a count',
    }),
    'change',
    (el) => {
      prefs.merge = (el as unknown as { checked: boolean }).checked;
      redraw();
    },
  );
  const curves = page.runId
    ? control(h('a', { href: '#', class: 'open-dashboard', title: 'Open this run in the training dashboard' }, icon('graph-line'), ' Curves'), 'click', () =>
        actions.openDashboard(page.runId!),
      )
    : null;
  curves?.addEventListener('click', (e) => e.preventDefault());
  return h(
    'header',
    { class: 'view-header group-header' },
    back,
    h('h1', {}, 'GRPO groups', page.step !== null ? h('span', { class: 'muted' }, ` · step ${page.step}`) : null),
    page.runId ? h('span', { class: 'muted mono run-id', title: page.runId }, page.runId) : null,
    h('div', { class: 'spacer' }),
    h('div', { class: 'header-controls' }, curves, page.steps.length > 1 ? stepSelect : null, sortSelect, merge),
  );
}

/** `prefs`: the user's sort, merge and folds, kept by the caller across redraws. */
export function renderGroupView(root: HTMLElement, page: GroupPage, actions: GroupViewActions, prefs: GroupPrefs): void {
  const redraw = (): void => {
    const y = window.scrollY;
    renderGroupView(root, page, actions, prefs);
    window.scrollTo(0, y);
  };
  const zero = page.groups.filter((g) => g.advantage?.zeroVariance).length;
  mount(
    root,
    groupHeader(page, actions, prefs, redraw),
    // Which roles the run trains and how: the rule every call's "trained or not" follows.
    page.roles
      ? h(
          'div',
          { class: 'muted roles-rule', title: `The selection rule of run ${page.roles.runId}, from its recorded config` },
          icon('organization'),
          ` Run ${page.roles.rule}.`,
        )
      : null,
    page.groups.length === 0
      ? h('div', { class: 'empty-state' }, icon('info'), h('p', {}, 'No GRPO groups here yet: the algorithm writes them when it trains on these rollouts.'))
      : h(
          'div',
          { class: 'groups' },
          h(
            'div',
            { class: 'muted groups-summary' },
            `${page.groups.length} group${page.groups.length === 1 ? '' : 's'}`,
            zero ? ` · ${zero} with zero variance (folded: every call got the same credit, so GRPO learns nothing from them)` : '',
          ),
          ...page.groups.map((g) => groupSection(g, page.step, actions, prefs, redraw)),
        ),
  );
}
