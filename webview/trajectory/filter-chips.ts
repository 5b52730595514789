/**
 * The rollouts list's active filters as chips: one per filter (the reward range as one), each naming what
 * it keeps and with a button that removes it, and "Clear all" when there are several. A filter set from
 * elsewhere (the CodeLens opens the list for its agent) is visible here and can be cleared, even when no
 * rollout matches it.
 */
import type { RolloutFilter, RolloutPage } from '../../protocol/webview-trajectory.js';
import { h, icon } from '../shared/dom.js';

type FilterKey = keyof RolloutFilter;
interface Chip {
  id: string;
  label: string;
  keys: FilterKey[];
}

function chipsOf(f: RolloutFilter, page: Pick<RolloutPage, 'runs'>): Chip[] {
  const chips: Chip[] = [];
  if (f.search) chips.push({ id: 'search', label: `Search: "${f.search}"`, keys: ['search'] });
  if (f.status?.length) chips.push({ id: 'status', label: `Status: ${f.status.join(', ')}`, keys: ['status'] });
  if (f.mode) chips.push({ id: 'mode', label: `Mode: ${f.mode}`, keys: ['mode'] });
  if (f.agent) chips.push({ id: 'agent', label: `Agent: ${f.agent}`, keys: ['agent'] });
  if (f.runId) {
    const run = page.runs.find((r) => r.id === f.runId);
    chips.push({ id: 'runId', label: `Run: ${f.runId}${run ? '' : ' (not in this store)'}`, keys: ['runId'] });
  }
  if (f.step !== undefined) chips.push({ id: 'step', label: `Step: ${f.step}`, keys: ['step'] });
  // A prompt candidate's rollouts (the optimization view's "Rollouts"): its ordinal, as the view names it (ids end in it).
  if (f.candidate) chips.push({ id: 'candidate', label: `Prompt candidate: #${/-(\d+)$/.exec(f.candidate)?.[1] ?? f.candidate}`, keys: ['candidate'] });
  if (f.promptVersion) chips.push({ id: 'promptVersion', label: `Prompt version: ${f.promptVersion}`, keys: ['promptVersion'] });
  // Set from a rollout's Model: the rollouts whose latest attempt a model of that name answered, any of its versions.
  if (f.servedBy) chips.push({ id: 'servedBy', label: `Model: ${f.servedBy}`, keys: ['servedBy'] });
  if (f.rewardMin !== undefined || f.rewardMax !== undefined) {
    const label =
      f.rewardMin !== undefined && f.rewardMax !== undefined
        ? `Reward: ${f.rewardMin} – ${f.rewardMax}`
        : f.rewardMin !== undefined
          ? `Reward ≥ ${f.rewardMin}`
          : `Reward ≤ ${f.rewardMax}`;
    chips.push({ id: 'reward', label, keys: ['rewardMin', 'rewardMax'] });
  }
  if (f.hasError !== undefined) chips.push({ id: 'hasError', label: f.hasError ? 'With errors' : 'Without errors', keys: ['hasError'] });
  if (f.resourcesVersion !== undefined) chips.push({ id: 'resourcesVersion', label: `Resources #${f.resourcesVersion}`, keys: ['resourcesVersion'] });
  return chips;
}

/** How many filters are active, leaving out those on `except` (the search, which its box shows); the reward range counts once. */
export function activeFilterCount(filter: RolloutFilter, except: FilterKey[] = []): number {
  return chipsOf(filter, { runs: [] }).filter((c) => !c.keys.every((k) => except.includes(k))).length;
}

/** The chips of the active filters; `remove(keys)` clears those filter keys. */
export function activeFilterChips(filter: RolloutFilter, page: RolloutPage, remove: (keys: FilterKey[]) => void): HTMLElement[] {
  const chips = chipsOf(filter, page);
  const out = chips.map((c) => {
    const button = h('button', { class: 'chip-remove', title: `Remove the filter ${c.label}`, 'aria-label': `Remove the filter ${c.label}` }, icon('close'));
    button.addEventListener('click', () => remove(c.keys));
    return h('span', { class: 'filter-chip', 'data-chip': c.id }, h('span', { class: 'chip-label' }, c.label), button);
  });
  if (chips.length > 1) {
    const all = h('button', { class: 'clear-filters link-button' }, 'Clear all');
    all.addEventListener('click', () => remove(chips.flatMap((c) => c.keys)));
    out.push(all);
  }
  return out;
}
