/**
 * The HTML shell of a webview: a strict Content-Security-Policy (no inline script or style without the
 * page's nonce, no eval, nothing remote), the bundle's stylesheet (also the codicon font stylesheet the
 * vscode-elements icons look up by id) and its script. Free of the vscode API so the webview tests load
 * the very same page.
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

export function webviewHtml(o: WebviewHtmlOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttr(contentSecurityPolicy(o.cspSource, o.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" id="vscode-codicon-stylesheet" href="${escapeAttr(o.styleUri)}" nonce="${escapeAttr(o.nonce)}">
<title>${escapeAttr(o.title)}</title>
</head>
<body>
<div id="app"></div>
<script nonce="${escapeAttr(o.nonce)}" src="${escapeAttr(o.scriptUri)}"></script>
</body>
</html>`;
}
