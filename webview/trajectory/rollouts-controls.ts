/**
 * The rollouts list's filter controls (status, mode, agent, run, step, reward range, errors, resources version)
 * drawn from the choices the store's last page offered, and the text fields and selects they are made of: a
 * select reports its value on change, a text field its trimmed text after the user stops typing or at once on
 * Enter. Every control carries `data-filter` (its filter key), so a redraw can give the focus back to it.
 */
import { agentShortName } from '../../protocol/agent-id.js';
import type { RolloutStatus } from '../../protocol/store.js';
import type { RolloutFilter, RolloutPage } from '../../protocol/webview-trajectory.js';
import { h } from '../shared/dom.js';

/** The filters' choices a page offers (the values present in the store). */
export type Choices = Pick<RolloutPage, 'statuses' | 'modes' | 'agents' | 'resourcesVersions' | 'runs'>;
export const choicesOf = (p: RolloutPage): Choices => ({
  statuses: p.statuses,
  modes: p.modes,
  agents: p.agents,
  resourcesVersions: p.resourcesVersions,
  runs: p.runs,
});

/** Changes some keys of the filter (undefined or '' removes one) and hands the result to the view's owner. */
export type FilterSetter = (patch: Partial<RolloutFilter>) => void;
export function filterSetter(filter: RolloutFilter, setFilter: (filter: RolloutFilter) => void): FilterSetter {
  return (patch) => {
    const next: Record<string, unknown> = { ...filter, ...patch };
    for (const k of Object.keys(next)) if (next[k] === undefined || next[k] === '') delete next[k];
    setFilter(next as RolloutFilter);
  };
}

function select(label: string, name: string, current: string, options: [string, string][], onChange: (v: string) => void): HTMLElement {
  const sel = h(
    'vscode-single-select',
    { 'data-filter': name, 'aria-label': label },
    ...options.map(([value, text]) => h('vscode-option', { value, selected: value === current }, text)),
  );
  sel.addEventListener('change', () => onChange((sel as unknown as { value: string }).value));
  return h('label', { class: 'filter' }, h('span', { class: 'filter-label' }, label), sel);
}

/**
 * Other keys of a text input: `value` is its trimmed text, `commit` reports it now (not after the debounce).
 */
export type TextKeys = (e: KeyboardEvent, value: string, commit: () => void) => void;

/** A text input that reports its trimmed value `debounceMs` after typing stops, or at once on Enter. */
function textInput(
  label: string,
  name: string,
  current: string,
  attrs: Record<string, string>,
  onChange: (v: string) => void,
  debounceMs = 0,
  keys?: TextKeys,
): HTMLElement {
  const field = h('vscode-textfield', { 'data-filter': name, 'aria-label': label, value: current, ...attrs });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const value = (): string => (field as unknown as { value: string }).value.trim();
  const fire = () => {
    clearTimeout(timer);
    onChange(value());
  };
  field.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(fire, debounceMs);
  });
  field.addEventListener('keydown', (e) => {
    if ((e as KeyboardEvent).key === 'Enter') fire();
    else keys?.(e as KeyboardEvent, value(), fire);
  });
  return field;
}

/** A labelled text input (textInput's arguments). */
export function textField(...args: Parameters<typeof textInput>): HTMLElement {
  const [label, name] = args;
  return h('label', { class: `filter filter-${name}` }, h('span', { class: 'filter-label' }, label), textInput(...args));
}

/** Focuses a filter control once it has rendered (vscode-elements draw their inner input asynchronously). */
export function focusControl(container: HTMLElement, name: string): void {
  const el = container.querySelector<HTMLElement>(`[data-filter="${name}"]`);
  if (el) void Promise.resolve((el as unknown as { updateComplete?: Promise<unknown> }).updateComplete).then(() => el.focus());
}

const num = (v: string): number | undefined => (v === '' || !Number.isFinite(Number(v)) ? undefined : Number(v));
const all = (values: readonly string[]): [string, string][] => [['', 'All'], ...values.map((v): [string, string] => [v, v])];

/** The reward range: two number fields under one label. */
function rewardRange(filter: RolloutFilter, set: FilterSetter): HTMLElement {
  return h(
    'div',
    { class: 'filter filter-reward' },
    h('span', { class: 'filter-label' }, 'Reward'),
    textInput(
      'Reward at least',
      'rewardMin',
      filter.rewardMin === undefined ? '' : String(filter.rewardMin),
      { type: 'number', step: '0.1', placeholder: 'min' },
      (v) => set({ rewardMin: num(v) }),
    ),
    h('span', { class: 'filter-label' }, 'to'),
    textInput(
      'Reward at most',
      'rewardMax',
      filter.rewardMax === undefined ? '' : String(filter.rewardMax),
      { type: 'number', step: '0.1', placeholder: 'max' },
      (v) => set({ rewardMax: num(v) }),
    ),
  );
}

/** The filter controls for `filter`, offering the choices of `page`; a change goes through `set`. */
export function filterControls(filter: RolloutFilter, page: Choices, set: FilterSetter): HTMLElement[] {
  const run = page.runs.find((r) => r.id === filter.runId);
  return [
    select('Status', 'status', filter.status?.[0] ?? '', all(page.statuses), (v) => set({ status: v ? [v as RolloutStatus] : undefined })),
    select('Mode', 'mode', filter.mode ?? '', all(page.modes), (v) => set({ mode: (v || undefined) as RolloutFilter['mode'] })),
    select('Agent', 'agent', filter.agent ?? '', all(page.agents), (v) => set({ agent: v || undefined })),
    select(
      'Run',
      'runId',
      filter.runId ?? '',
      [
        ['', 'All'],
        ...(run || !filter.runId ? [] : [[filter.runId, filter.runId] as [string, string]]),
        ...page.runs.map((r): [string, string] => [r.id, `${r.id} · ${agentShortName(r.agent)}`]),
      ],
      (v) => set({ runId: v || undefined }),
    ),
    textField('Step', 'step', filter.step === undefined ? '' : String(filter.step), { type: 'number', min: '0', placeholder: 'any' }, (v) =>
      set({ step: num(v) }),
    ),
    rewardRange(filter, set),
    select(
      'Errors',
      'hasError',
      filter.hasError === undefined ? '' : String(filter.hasError),
      [
        ['', 'All'],
        ['true', 'With errors'],
        ['false', 'Without errors'],
      ],
      (v) => set({ hasError: v === '' ? undefined : v === 'true' }),
    ),
    select(
      'Resources',
      'resourcesVersion',
      filter.resourcesVersion === undefined ? '' : String(filter.resourcesVersion),
      [['', 'All'], ...page.resourcesVersions.map((v): [string, string] => [String(v), `#${v}`])],
      (v) => set({ resourcesVersion: num(v) }),
    ),
  ];
}
