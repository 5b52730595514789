/**
 * Extension entry point (bundled by esbuild to dist/extension.js, CommonJS, `vscode` external).
 * Activation builds the Ctx, registers the commands and the Test Explorer's eval datasets, starts the language server (`agl lsp`) and then
 * the daemon (attach to a running one, or start the bundled `agl serve`); deactivation undoes it.
 */
import * as vscode from 'vscode';
import { registerCommands } from './commands.js';
import { Ctx } from './ctx.js';
import { registerEvalCommands } from './eval-commands.js';
import { trackLastTextEditor } from './pickers.js';
import { EvalTestExplorer } from './test-explorer.js';
import { registerViews } from './views.js';

let ctx: Ctx | null = null;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  ctx = new Ctx(context);
  const current = ctx;
  context.subscriptions.push(...registerCommands(current), trackLastTextEditor());
  registerViews(current);
  // Eval datasets as tests (Test Explorer), and the commands around them.
  const explorer = new EvalTestExplorer(current);
  context.subscriptions.push(explorer, ...registerEvalCommands(current, explorer));
  current.log(`Agent Lightning ${context.extension.packageJSON.version} activating (node ${process.version}).`);
  try {
    await current.startLanguageClient();
  } catch (err) {
    current.log(`The language server did not start: ${(err as Error).message}`);
    void vscode.window.showErrorMessage(`Agent Lightning: the language server did not start (no CodeLens): ${(err as Error).message}`, 'Show Log').then((c) => {
      if (c) current.output.show();
    });
  }
  // Not awaited: activation finishes while the daemon starts (the status bar says "starting…").
  void current.start();
}

export async function deactivate(): Promise<void> {
  const current = ctx;
  ctx = null;
  await current?.dispose();
}
