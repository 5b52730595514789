/**
 * A tiny element builder for the webviews. Text always goes in through textContent (never innerHTML),
 * so prompts and model outputs cannot inject markup, and nothing needs 'unsafe-inline' under the CSP.
 */
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>;

export function h<K extends string>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(key.replace(/^on/, '').toLowerCase(), value);
    else if (key === 'class') el.className = String(value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el: HTMLElement, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'string' || typeof child === 'number' ? String(child) : child);
  }
}

/** Replace an element's children. */
export function mount(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  append(el as HTMLElement, children);
}

/** A codicon (font loaded by the page's <link id="vscode-codicon-stylesheet">). */
export function icon(name: string, extra = ''): HTMLElement {
  return h('span', { class: `codicon codicon-${name} ${extra}`.trim(), 'aria-hidden': 'true' });
}

export function fmtNumber(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(digits);
}

export function fmtSigned(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined) return '—';
  return (value > 0 ? '+' : '') + value.toFixed(digits);
}

export function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

export function fmtTime(epochMs: number): string {
  const d = new Date(epochMs);
  return `${d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${d.toLocaleTimeString(undefined, { hour12: false })}`;
}

/**
 * A long id shortened for a table cell: its kind and its last digits (store ids start with their creation
 * time, so ids made in the same session share their first digits and differ at the end).
 */
export function shortId(id: string): string {
  if (id.length <= 12) return id;
  const dash = id.indexOf('-');
  return `${dash > 0 && dash <= 4 ? id.slice(0, dash + 1) : ''}…${id.slice(-7)}`;
}

/** Compact one-line preview of any JSON value. */
export function preview(value: unknown, max = 80): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? flat.slice(0, max - 1) + '…' : flat;
}

/** A value's sign as a CSS class: positive / negative / zero. */
export function signClass(value: number | null | undefined): string {
  if (value === null || value === undefined || value === 0) return 'zero';
  return value > 0 ? 'positive' : 'negative';
}

/**
 * Makes an element that does something on a click a keyboard control too: a Tab stop, read as a button, Enter or Space
 * does the same as the click. `action` gets the event (a click inside a link of the element is the link's, not this).
 */
export function activatable<E extends HTMLElement>(el: E, action: (e: Event) => void): E {
  el.tabIndex = 0;
  el.setAttribute('role', 'button');
  el.addEventListener('click', (e) => {
    if (!(e.target as HTMLElement).closest('a, button')) action(e);
  });
  el.addEventListener('keydown', (e) => {
    if (e.target !== el || (e.key !== 'Enter' && e.key !== ' ')) return;
    e.preventDefault();
    action(e);
  });
  return el;
}
