/**
 * The optimization view's Apply (and its "Apply Best" after Optimize This Prompt): nothing replaces the user's prompt
 * without their say. It shows each changed prompt in VS Code's diff editor first (a file seed: the file against the
 * candidate's text; a string seed: the seed's text against it), then asks in a modal dialog what it will do
 * (apply-plan.ts), and only on "Apply" writes a file seed's new text into the file (one undoable edit, saved) and
 * promotes a string seed's through the store API (by 'editor', as `agl optimize promote` does by its name).
 */
import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import type { AglClient } from '../client/client.js';
import { applyPlan, describePlan, type ApplyPlan, type ApplyStep } from './apply-plan.js';
import type { Ctx } from './ctx.js';

/** Texts the diff editor shows that are no file (a candidate's, a seed's), by URI. */
const SCHEME = 'agl-prompt';
const texts = new Map<string, string>();

/** Serves the candidates' and seeds' texts to the diff editor (registered once, at activation). */
export function registerPromptTexts(): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(SCHEME, { provideTextDocumentContent: (uri) => texts.get(uri.toString()) ?? '' });
}

/** A read-only document holding `text`, named so the diff editor's tab says what it is. */
function textUri(runId: string, what: string, name: string, text: string): vscode.Uri {
  const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${runId}/${what}/${name}.md` });
  texts.set(uri.toString(), text);
  return uri;
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** Opens the diff of one step: what the agent reads now (left) against the candidate's text (right). */
async function showDiff(runId: string, plan: ApplyPlan, step: Exclude<ApplyStep, { kind: 'same' }>): Promise<void> {
  const label = `#${plan.candidate.ordinal}`;
  const right = textUri(runId, `candidate-${plan.candidate.ordinal}`, step.name, step.text);
  const left = step.kind === 'file' ? vscode.Uri.file(step.file) : textUri(runId, 'seed', step.name, step.seed);
  const title =
    step.kind === 'file'
      ? `${vscode.workspace.asRelativePath(step.file)} ↔ candidate ${label} (${runId})`
      : `"${step.name}" seed ↔ candidate ${label} (${runId})`;
  await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: false });
}

/** Writes a file seed's new text as one edit of its document (undoable), then saves it. */
async function writeFile(step: Extract<ApplyStep, { kind: 'file' }>): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(step.file));
  const edit = new vscode.WorkspaceEdit();
  edit.replace(doc.uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), step.text);
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`VS Code did not apply the edit to ${step.file}`);
  await doc.save();
}

async function carryOut(client: AglClient, runId: string, plan: ApplyPlan): Promise<string[]> {
  const done: string[] = [];
  for (const step of plan.steps) {
    if (step.kind === 'file') {
      await writeFile(step);
      if (step.clearPromoted) await client.clearPromotedPrompt({ agent: plan.agent, name: step.name, by: 'editor' });
      done.push(`${vscode.workspace.asRelativePath(step.file)} now holds "${step.name}"`);
    } else if (step.kind === 'promote') {
      await client.promotePrompt({ agent: plan.agent, name: step.name, text: step.text, candidateId: plan.candidate.id, runId, by: 'editor' });
      done.push(`"${step.name}" promoted for ${plan.agent}`);
    }
  }
  return done;
}

/** Apply a candidate of an optimization: diffs, the question, then the writes and promotions. */
export async function applyCandidate(ctx: Ctx, target: { runId: string; candidateId: string }): Promise<void> {
  const client = await ctx.requireDaemon('apply a prompt candidate');
  if (!client) return;
  const run = await client.getTrainingRun(target.runId);
  if (!run) throw new Error(`optimization ${target.runId} is not in this daemon's store`);
  const [candidates, promoted] = await Promise.all([client.listPromptCandidates(run.id), client.listPromotedPrompts(run.agent)]);
  const plan = applyPlan(run, candidates, target.candidateId, promoted, readText);
  const label = `#${plan.candidate.ordinal}`;
  const todo = plan.steps.filter((s): s is Exclude<ApplyStep, { kind: 'same' }> => s.kind !== 'same');
  if (!todo.length) {
    void vscode.window.showInformationMessage(`Agent Lightning: candidate ${label} is what ${run.agent} reads already.`);
    return;
  }
  for (const step of todo) await showDiff(run.id, plan, step);
  const { message, detail } = describePlan(plan, (f) => vscode.workspace.asRelativePath(f));
  const answer = await vscode.window.showInformationMessage(message, { modal: true, detail }, 'Apply');
  if (answer !== 'Apply') return;
  ctx.log(`Apply candidate ${plan.candidate.id} of ${run.id}: ${plan.steps.map((s) => `${s.name}: ${s.kind}`).join(', ')}`);
  const done = await carryOut(client, run.id, plan);
  ctx.refreshLenses(run.agent);
  void vscode.window.showInformationMessage(`Agent Lightning: applied candidate ${label}: ${done.join('; ')}.`);
}
