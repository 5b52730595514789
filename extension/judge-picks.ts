/**
 * Train This Agent's reward pick, shown for an agent that emits no reward (judge-choices.ts judgeOfferReason says
 * when, and the pick says why): "Use an LLM judge" writes the rubric file next to the agent from the shipped template
 * (or keeps the one there), opens it beside the code, and picks the judge's endpoint from the settings
 * agentLightning.judge.* (asked and saved when empty: optimize-picks.ts pickEndpoint); "Train on its own reward" goes
 * on without one.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import * as vscode from 'vscode';
import { agentStats, type AgentInfo, type AgentStats } from '../protocol/lsp.js';
import { readSettings } from './config.js';
import type { Ctx } from './ctx.js';
import { rubricFileOf, rubricText, type JudgeChoice } from './judge-choices.js';
import { pickEndpoint } from './optimize-picks.js';

/** The agent's stats from the language server (its reward source among them); undefined when it cannot say. */
export async function statsOf(ctx: Ctx, agent: AgentInfo): Promise<AgentStats | undefined> {
  try {
    return (await ctx.lsp?.sendRequest(agentStats, { agents: [agent.id] }))?.stats[0];
  } catch (err) {
    ctx.log(`Train ${agent.name}: its reward could not be read from the language server: ${(err as Error).message}`);
    return undefined;
  }
}

/** The agent's source text, or null when it has no file here. */
export async function agentSource(agentFile: string): Promise<string | null> {
  if (!agentFile || !existsSync(agentFile)) return null;
  return Buffer.from(await vscode.workspace.fs.readFile(vscode.Uri.file(agentFile))).toString('utf8');
}

/** The reward pick: a judge (preselected: the agent emits none) or its own; undefined when cancelled. */
async function pickReward(agent: AgentInfo, reason: string, step: string): Promise<'judge' | 'own' | undefined> {
  const picked = await vscode.window.showQuickPick(
    [
      {
        label: '$(law) Use an LLM judge',
        description: 'recommended',
        detail: `${reason}: a judge model scores each task's rollouts against a rubric (rubric.md next to the agent, written from a template if missing)`,
        reward: 'judge' as const,
      },
      { label: 'Train on its own reward', detail: 'whatever reward its rollouts carry; none means nothing to learn from', reward: 'own' as const },
    ],
    { title: `Train ${agent.name}: reward (${step})`, placeHolder: `${reason}: how should its rollouts be scored?`, ignoreFocusOut: true },
  );
  return picked?.reward;
}

/**
 * The judge for a run, or null for the agent's own reward; undefined when cancelled. The rubric is written from the
 * template when the agent's folder has none, and shown beside the code: the judge reads it whole, so the user edits it.
 */
export async function chooseJudge(ctx: Ctx, agent: AgentInfo, agentFile: string, reason: string, step: string): Promise<JudgeChoice | null | undefined> {
  const reward = await pickReward(agent, reason, step);
  if (reward !== 'judge') return reward === 'own' ? null : undefined;
  const endpoint = await pickEndpoint(
    'judge',
    `Train ${agent.name}: the judge model (${step})`,
    readSettings().judge,
    'The model that scores the rollouts: a capable one, never the model being trained',
  );
  if (!endpoint) return undefined;
  const rubric = rubricFileOf(agentFile);
  if (!existsSync(rubric)) {
    await writeFile(rubric, rubricText(ctx.extensionPath, agent.name));
    ctx.log(`Train ${agent.name}: wrote the judge's rubric ${rubric} from the template; edit it to say what a good trajectory is`);
  }
  await vscode.window.showTextDocument(vscode.Uri.file(rubric), { viewColumn: vscode.ViewColumn.Beside, preview: false, preserveFocus: true });
  return { ...endpoint, rubric };
}
