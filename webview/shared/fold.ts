/**
 * A long text folded to its first lines ("show all · 52 lines" unfolds it, "show less" folds it again): a query result
 * of 50 rows takes ten lines of a card, not seven hundred pixels. Whether it is long is measured as laid out, again
 * whenever its width changes (a narrow panel wraps more lines).
 */
import { h } from './dom.js';

/** Lines a long answer or result shows before "show all". */
export const FOLD_LINES = 10;

export function foldable(content: HTMLElement, lines = FOLD_LINES): HTMLElement {
  content.classList.add('fold-content');
  const toggle = h('button', { class: 'fold-toggle', type: 'button', hidden: true, 'aria-expanded': 'false' });
  const wrap = h('div', { class: 'foldable folded' }, content, toggle);
  wrap.style.setProperty('--fold-lines', String(lines));
  let open = false;
  const update = (): void => {
    const lineHeight = parseFloat(getComputedStyle(content).lineHeight) || 18;
    const total = Math.round(content.scrollHeight / lineHeight);
    toggle.hidden = total <= lines;
    wrap.classList.toggle('overflows', !toggle.hidden);
    toggle.textContent = open ? 'show less' : `show all · ${total} lines`;
  };
  toggle.addEventListener('click', (e) => {
    e.stopPropagation(); // the card or row around it opens something on a click
    open = !open;
    wrap.classList.toggle('folded', !open);
    toggle.setAttribute('aria-expanded', String(open));
    update();
  });
  const resized = new ResizeObserver(() => (wrap.isConnected ? update() : resized.disconnect()));
  resized.observe(content);
  return wrap;
}
