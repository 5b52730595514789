/**
 * The dialogs of the trajectory viewer's "Add to dataset" (dataset-add.ts does the rest): for a selection or a filter, a
 * confirmation naming how many rollouts' recorded answers go in; then which dataset: a quick pick of the workspace's
 * `*.eval.jsonl` files (Test Explorer's datasets) and "New file...", a save dialog. A correction whose task the file
 * holds with another answer asks whether to replace that row's. Once added, a message says what was added and offers
 * to open the file.
 */
import * as vscode from 'vscode';
import { type DatasetAdded, datasetAddedText } from '../../protocol/webview-trajectory.js';
import type { DatasetChooser } from './dataset-add.js';

/** The datasets a quick pick offers at most. */
const MAX_FILES = 200;

const countWords = (n: number) => `${n.toLocaleString('en-US')} rollout${n === 1 ? '' : 's'}`;

/** Asks for the file in a save dialog, in the first workspace folder by default. */
async function newFile(): Promise<vscode.Uri | undefined> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  return vscode.window.showSaveDialog({
    title: 'Agent Lightning: new dataset (*.eval.jsonl)',
    saveLabel: 'Create Dataset',
    filters: { 'Eval datasets': ['jsonl'] },
    ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, 'dataset.eval.jsonl') } : {}),
  });
}

export const vscodeDatasetChooser: DatasetChooser = {
  async chooseFile({ kind, count }) {
    if (kind !== 'rollout') {
      const what = kind === 'selection' ? `the ${countWords(count)} selected` : `every rollout the filter shows (${countWords(count)})`;
      const go = await vscode.window.showInformationMessage(
        `Add ${what} to a dataset?`,
        {
          modal: true,
          detail: 'Each becomes a row: its task input, and its recorded answer as the expected one. A task the dataset holds already is left out.',
        },
        'Add',
      );
      if (go !== 'Add') return null;
    }
    type Item = vscode.QuickPickItem & { uri: vscode.Uri | null };
    const files = await vscode.workspace.findFiles('**/*.eval.jsonl', '**/node_modules/**', MAX_FILES);
    const items: Item[] = [
      ...files
        .map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri }))
        .sort((a, b) => a.label.localeCompare(b.label))
        .map((f) => ({ ...f, iconPath: new vscode.ThemeIcon('beaker') })),
      { label: 'New file...', description: 'a new *.eval.jsonl', uri: null, iconPath: new vscode.ThemeIcon('new-file') },
    ];
    const picked = await vscode.window.showQuickPick(items, {
      title: `Add ${countWords(count)} to which dataset?`,
      placeHolder: 'Rows are appended; a task the file holds already is left out',
      ignoreFocusOut: true,
    });
    if (!picked) return null;
    const uri = picked.uri ?? (await newFile());
    return uri ? { path: uri.fsPath, label: vscode.workspace.asRelativePath(uri) } : null;
  },
  async replace({ file, line, expected, corrected }) {
    const shown = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
    const go = await vscode.window.showWarningMessage(
      `${file} holds this task already (line ${line}), expecting ${shown(expected)}. Expect ${shown(corrected)} instead?`,
      { modal: true, detail: "Replace changes that row's expected answer to your correction and keeps the rest of it. Cancel leaves the file as it is." },
      'Replace',
    );
    return go === 'Replace';
  },
  added: reportAdded,
};

/** Says what Add to dataset did, with Open (not awaited: the webview shows it too). */
function reportAdded(result: DatasetAdded, path: string): void {
  void vscode.window.showInformationMessage(`Agent Lightning: ${datasetAddedText(result)}`, 'Open').then(async (open) => {
    if (open) await vscode.window.showTextDocument(vscode.Uri.file(path));
  });
}
