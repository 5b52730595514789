/**
 * The HTML shell of a webview: a strict Content-Security-Policy (no inline script or style without the
 * page's nonce, no eval, nothing remote), the bundle's stylesheet (also the codicon font stylesheet the
 * vscode-elements icons look up by id) and its script. Free of the vscode API so the webview tests load
 * the very same page.
 *
 * The stylesheet and the script are added by a small loader (the page's nonce on it and on them) that asks again when
 * one fails to load: VS Code in a browser (code-server, vscode.dev) serves a webview's files through a service worker,
 * and when a window reload restores several panels at once, a panel's first requests can go out before that worker
 * answers them (net::ERR_NAME_NOT_RESOLVED on the resource host): with plain tags that panel stayed blank for good.
 */
import { randomBytes } from 'node:crypto';

export interface WebviewHtmlOptions {
  title: string;
  /** The webview's `cspSource` (where local resources are served from). */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function makeNonce(): string {
  return randomBytes(18).toString('base64url');
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
}

function escapeAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

/** A value as a JavaScript literal safe inside a <script> element. */
const jsLiteral = (value: string): string => JSON.stringify(value).replace(/</g, '\\u003c');

/** How often, and how long apart (ms, growing), the loader asks again for a file that failed. */
export const LOAD_TRIES = 12;
const LOAD_BACKOFF_MS = 150;

/**
 * The loader: the stylesheet, and once it has loaded the script (the views measure what the styles lay out), each
 * added again (a fresh element) after a failed load; after the last try the page says what to do.
 */
function loader(o: WebviewHtmlOptions): string {
  return `(function () {
  var nonce = ${jsLiteral(o.nonce)};
  function add(make, loaded, tries) {
    var el = make();
    el.nonce = nonce;
    el.onload = loaded;
    el.onerror = function () {
      el.remove();
      if (tries + 1 < ${LOAD_TRIES}) setTimeout(function () { add(make, loaded, tries + 1); }, ${LOAD_BACKOFF_MS} * (tries + 1));
      else document.getElementById('app').textContent = 'This view could not load its files: reload the window (Developer: Reload Window).';
    };
    (el.tagName === 'LINK' ? document.head : document.body).appendChild(el);
  }
  function script() {
    var s = document.createElement('script');
    s.src = ${jsLiteral(o.scriptUri)};
    return s;
  }
  add(function () {
    var link = document.createElement('link');
    link.rel = 'stylesheet';
    link.id = 'vscode-codicon-stylesheet';
    link.href = ${jsLiteral(o.styleUri)};
    return link;
  }, function () { add(script, null, 0); }, 0);
})();`;
}

export function webviewHtml(o: WebviewHtmlOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttr(contentSecurityPolicy(o.cspSource, o.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeAttr(o.title)}</title>
</head>
<body>
<div id="app"></div>
<script nonce="${escapeAttr(o.nonce)}">
${loader(o)}
</script>
</body>
</html>`;
}
