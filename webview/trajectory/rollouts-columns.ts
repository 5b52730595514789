/**
 * The rollouts list's columns (rollouts-view.ts draws them): what each row's cells say and their tooltips, and the
 * second line a narrow view gives a row instead of the columns it hides. The Model column names what answered the
 * latest attempt's LLM calls (the store keeps it beside each rollout: protocol/served-by.ts), never the resources
 * version, which counts publications of resources.
 */
import { agentShortName } from '../../protocol/agent-id.js';
import type { RolloutSort } from '../../protocol/store.js';
import type { RolloutRow } from '../../protocol/webview-trajectory.js';
import { statusWords } from '../../protocol/runner-presence.js';
import { servedRowText, servedRowTip } from '../../protocol/served-by.js';
import { fmtDuration, fmtNumber, fmtTime, h, icon, shortId, signClass } from '../shared/dom.js';
import { resourcesText, resourcesTip, runStatusPill } from './outcome.js';
import { taskSummary } from './task-summary.js';

/** Columns: a CSS class (widths and which hide when narrow live in trajectory.css) and, when sortable, the sort key. */
export interface Column {
  title: string;
  key: string;
  /** The header's tooltip, when the title alone does not say what the column counts. */
  tip?: string;
  sort?: RolloutSort;
  num?: boolean;
  cell: (item: RolloutRow) => HTMLElement;
}
const cell = (cls: string, title: string | null, ...children: (Node | string)[]) => h('div', { class: `cell ${cls}`, role: 'gridcell', title }, ...children);

function durationTitle(item: RolloutRow): string | null {
  const r = item.rollout;
  if (item.startedAt === null) return 'not started yet';
  const queued = `queued ${fmtDuration(item.startedAt - r.createdAt)} before it`;
  return item.durationMs === null ? `attempt ${r.attemptCount} running; ${queued}` : `attempt ${r.attemptCount} ran ${fmtDuration(item.durationMs)}; ${queued}`;
}
/** Whether the row waits in the queue with no runner connected to claim it. */
export const waitsForNoRunner = (item: RolloutRow): boolean => statusWords(item.rollout.status, item.runnerConnected) !== item.rollout.status;

/** A queued row no runner can claim: a mark beside its status (the note above the rows says it in words). */
function noRunnerMark(item: RolloutRow): HTMLElement | null {
  if (!waitsForNoRunner(item)) return null;
  const text = statusWords(item.rollout.status, false);
  return h('span', { class: 'no-runner-mark', title: `${text}: start one (agl runner), or a training run`, 'aria-label': text }, icon('debug-disconnect'));
}

function errorMark(item: RolloutRow): HTMLElement | null {
  if (!item.error && item.errorSpans === 0) return null;
  const text = [item.error, item.errorSpans ? `${item.errorSpans} span${item.errorSpans > 1 ? 's' : ''} with an error` : null].filter(Boolean).join('; ');
  return h('span', { class: 'error-mark', title: text, 'aria-label': text }, icon('error'));
}

export const COLUMNS: Column[] = [
  { title: 'Rollout', key: 'id', cell: ({ rollout: r }) => cell('col-id mono', r.id, shortId(r.id)) },
  {
    title: 'Status',
    key: 'status',
    sort: 'status',
    cell: (i) => cell('col-status', null, runStatusPill(i.rollout.status), noRunnerMark(i) ?? '', errorMark(i) ?? ''),
  },
  { title: 'Mode', key: 'mode', cell: ({ rollout: r }) => cell('col-mode', null, r.mode) },
  { title: 'Agent', key: 'agent', cell: ({ rollout: r }) => cell('col-agent', r.agent ?? '', r.agent ? agentShortName(r.agent) : '—') },
  {
    title: 'Resources',
    key: 'res',
    cell: (i) => cell('col-res mono', resourcesTip(i.resourcesVersion), i.resourcesVersion === null ? '—' : `#${i.resourcesVersion}`),
  },
  {
    title: 'Model',
    key: 'model',
    tip: "What answered the latest attempt's LLM calls: a local policy and its training updates then, or the upstream model",
    cell: (i) => cell('col-model served-model', servedRowTip(i.served), servedRowText(i.served)),
  },
  { title: 'Reward', key: 'reward', sort: 'reward', num: true, cell: (i) => cell(`col-reward num reward ${signClass(i.reward)}`, null, fmtNumber(i.reward)) },
  { title: 'Att.', key: 'attempts', num: true, cell: ({ rollout: r }) => cell('col-attempts num', null, String(r.attemptCount)) },
  { title: 'Duration', key: 'duration', sort: 'duration', num: true, cell: (i) => cell('col-duration num', durationTitle(i), fmtDuration(i.durationMs)) },
  {
    title: 'Input',
    key: 'input',
    cell: ({ rollout: r }) => {
      const s = taskSummary(r.input);
      return cell('col-input', s.full, s.text);
    },
  },
  { title: 'Created', key: 'created', sort: 'createdAt', cell: ({ rollout: r }) => cell('col-created muted', null, fmtTime(r.createdAt)) },
];

/**
 * The second line of a row in a narrow view: what the hidden columns say, in their order, and all of it
 * spelled out in the tooltip.
 */
export function metaCell(item: RolloutRow): HTMLElement {
  const { rollout: r, resourcesVersion, durationMs } = item;
  const agent = r.agent ? agentShortName(r.agent) : '—';
  const attempts = `${r.attemptCount} attempt${r.attemptCount === 1 ? '' : 's'}`;
  const res = resourcesText(resourcesVersion);
  const title = [
    `rollout ${r.id}`,
    `mode ${r.mode}`,
    `agent ${r.agent ?? 'default'}`,
    resourcesTip(resourcesVersion),
    servedRowTip(item.served),
    durationTitle(item) ?? attempts,
    `created ${fmtTime(r.createdAt)}`,
  ].join('\n');
  return cell(
    'col-meta muted',
    title,
    [shortId(r.id), r.mode, agent, res, servedRowText(item.served), attempts, fmtDuration(durationMs), fmtTime(r.createdAt)].join(' · '),
  );
}
