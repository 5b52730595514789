/**
 * The error state every webview shows when the host could not answer (the daemon is down, restarting, or
 * answered with an error): what failed, then "Start Daemon" (the extension's command, through the typed
 * protocol: DaemonMessages.startDaemon) and "Retry", plus any view-specific way out. When the daemon comes
 * back the host says so (DaemonMessages.state) and the view reloads by itself when `shouldReload`.
 */
import { h, icon } from './dom.js';

export interface RecoveryActions {
  retry(): void;
  startDaemon(): void;
  /** More buttons after Start Daemon and Retry (e.g. "Back to rollouts"). */
  more?: Array<{ label: string; run(): void }>;
}

function button(label: string, action: string, run: () => void, secondary: boolean): HTMLElement {
  const b = h('vscode-button', { 'data-action': action, secondary }, label);
  b.addEventListener('click', run);
  return b;
}

export function errorState(message: string, actions: RecoveryActions): HTMLElement {
  return h(
    'div',
    { class: 'empty-state error error-state', role: 'alert' },
    icon('error'),
    h('p', {}, message),
    h(
      'div',
      { class: 'error-actions' },
      button('Start Daemon', 'start-daemon', actions.startDaemon, false),
      button('Retry', 'retry', actions.retry, true),
      ...(actions.more ?? []).map((m) => button(m.label, m.label.toLowerCase().replace(/\W+/g, '-'), m.run, true)),
    ),
  );
}

/**
 * Should a view reload now that the daemon is back? When it shows an error, or when a request is still out:
 * sent before the daemon was up, its error answer may arrive just after this news (the host flushes what it
 * held back the moment the webview is ready, as a restored panel's first requests are being answered).
 */
export function shouldReload(root: Element, requestsWaiting: number): boolean {
  return requestsWaiting > 0 || root.querySelector('.error-state') !== null;
}
