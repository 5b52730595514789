/**
 * The quick picks of Optimize This Prompt that are its own (optimize-command.ts runs them in order; the task files are
 * Train's picks): the prompts to optimize together, the budget in rollouts, the optimizer's endpoint and the agent's
 * model. Each preselects what was chosen last for the agent; the optimizer's endpoint is the settings', asked for and
 * saved into them (user settings) when empty, so the next run asks nothing (pickEndpoint: Train This Agent's judge too).
 */
import * as vscode from 'vscode';
import type { AgentInfo } from '../protocol/lsp.js';
import type { Endpoint, EndpointSection } from './config.js';
import { endpointProblem, OPTIMIZE_BUDGETS, type AgentModel, type OptimizerEndpoint } from './optimize-choices.js';

/** Step 1: the prompts (the one asked for checked; the agent's others offered: several are optimized together). */
export async function pickPrompts(agent: AgentInfo, names: string[], first: string, last: string[] | undefined, steps: number): Promise<string[] | undefined> {
  if (names.length === 1) return names;
  const checked = new Set([first, ...(last ?? []).filter((n) => names.includes(n))]);
  const picked = await vscode.window.showQuickPick(
    names.map((name) => ({ label: name, picked: checked.has(name), description: name === first ? 'the prompt you asked for' : `also read by ${agent.name}` })),
    { title: `Optimize ${agent.name}: which prompts, optimized together (1/${steps})`, canPickMany: true, ignoreFocusOut: true },
  );
  if (!picked) return undefined;
  return picked.length ? picked.map((p) => p.label) : [first];
}

/** An integer of at least `least`, asked for in an input box. */
async function askRollouts(agent: AgentInfo, least: number, value: number): Promise<number | undefined> {
  const text = await vscode.window.showInputBox({
    title: `Optimize ${agent.name}: budget in rollouts`,
    value: String(Math.max(least, value)),
    prompt: `Every rollout counts: minibatches, val, test. These task files need at least ${least}.`,
    ignoreFocusOut: true,
    validateInput: (v) => (Number.isInteger(Number(v)) && Number(v) >= least ? null : `a whole number of at least ${least}`),
  });
  return text === undefined ? undefined : Number(text);
}

/** Step 5: the budget (presets below what the task files need say so), or a number of one's own. */
export async function pickBudget(agent: AgentInfo, least: number, last: number | undefined, steps: number): Promise<number | undefined> {
  type Item = vscode.QuickPickItem & { rollouts: number | 'custom' };
  const items: Item[] = OPTIMIZE_BUDGETS.map((b) => ({
    label: `${b.label}: ${b.rollouts} rollouts`,
    detail: b.rollouts < least ? `too small for these task files: they need at least ${least}` : b.detail,
    rollouts: b.rollouts,
  }));
  if (last !== undefined && !OPTIMIZE_BUDGETS.some((b) => b.rollouts === last)) items.unshift({ label: `${last} rollouts`, rollouts: last });
  items.push({ label: '$(edit) Another number of rollouts…', rollouts: 'custom' });
  for (const i of items) if (i.rollouts === last) i.description = 'last used';
  const preferred = last ?? OPTIMIZE_BUDGETS.find((b) => b.rollouts >= least)?.rollouts;
  items.sort((a, b) => Number(b.rollouts === preferred) - Number(a.rollouts === preferred));
  const picked = await vscode.window.showQuickPick(items, {
    title: `Optimize ${agent.name}: budget, every rollout counted (5/${steps})`,
    placeHolder: `minibatches, val and test all count; these task files need at least ${least}`,
    ignoreFocusOut: true,
  });
  if (!picked) return undefined;
  if (picked.rollouts === 'custom' || picked.rollouts < least) return askRollouts(agent, least, picked.rollouts === 'custom' ? (last ?? least) : least);
  return picked.rollouts;
}

/** An OpenAI-compatible endpoint asked for in input boxes: its URL, then its model. */
async function askEndpoint(title: string, url: string, model: string): Promise<{ url: string; model: string } | undefined> {
  const u = await vscode.window.showInputBox({
    title: `${title}: its OpenAI-compatible server`,
    value: url,
    placeHolder: 'https://api.openai.com/v1, http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM)',
    ignoreFocusOut: true,
    validateInput: (v) => endpointProblem(v.trim()),
  });
  if (u === undefined) return undefined;
  const m = await vscode.window.showInputBox({
    title: `${title}: the model to ask ${u.trim()} for`,
    value: model,
    placeHolder: 'gpt-4.1-mini, qwen2.5:32b, …',
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? null : 'the model name the server knows'),
  });
  return m === undefined ? undefined : { url: u.trim(), model: m.trim() };
}

const keyNote = (e: Endpoint) =>
  process.env[e.keyEnv] || /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])[:/]/.test(e.url) ? '' : ` · ${e.keyEnv} is not set in VS Code's environment`;

/**
 * An endpoint from the settings agentLightning.<section>.* (the optimizer's, the judge's): the settings' own when set
 * (or another), else asked for and saved into them (user settings), so the next run asks nothing.
 */
export async function pickEndpoint(section: EndpointSection, title: string, settings: Endpoint, placeHolder: string): Promise<Endpoint | undefined> {
  if (settings.url && settings.model) {
    const picked = await vscode.window.showQuickPick(
      [
        { label: `${settings.model} at ${settings.url}`, description: `settings agentLightning.${section}.*${keyNote(settings)}`, use: true },
        { label: '$(edit) Another endpoint…', description: 'saved into the settings', use: false },
      ],
      { title, placeHolder, ignoreFocusOut: true },
    );
    if (!picked) return undefined;
    if (picked.use) return settings;
  }
  const asked = await askEndpoint(title, settings.url, settings.model);
  if (!asked) return undefined;
  const config = vscode.workspace.getConfiguration('agentLightning');
  await config.update(`${section}.url`, asked.url, vscode.ConfigurationTarget.Global);
  await config.update(`${section}.model`, asked.model, vscode.ConfigurationTarget.Global);
  return { ...settings, ...asked };
}

/** Step 6: the optimizer's endpoint: the settings' (agentLightning.optimizer.*), else asked and saved into them. */
export function pickOptimizer(agent: AgentInfo, settings: OptimizerEndpoint, steps: number): Promise<OptimizerEndpoint | undefined> {
  const title = `Optimize ${agent.name}: the optimizer model (6/${steps})`;
  return pickEndpoint('optimizer', title, settings, 'The model that reads the rollouts and rewrites the prompts: a capable one');
}

/** Step 7: the agent's model: the optimizer's server (another model, or the same), another server, or what the daemon serves. */
export async function pickAgentModel(
  agent: AgentInfo,
  optimizer: OptimizerEndpoint,
  last: AgentModel | undefined,
  steps: number,
): Promise<AgentModel | undefined> {
  const title = `Optimize ${agent.name}: the agent's model (7/${steps})`;
  type Item = vscode.QuickPickItem & { pick: AgentModel | 'same-server' | 'other' };
  const items: Item[] = [];
  if (last) {
    const words = last.kind === 'upstream' ? `${last.model} at ${last.url}` : 'the model the daemon serves';
    items.push({ label: words, description: 'last used', pick: last });
  }
  items.push(
    { label: `A model at ${optimizer.url}`, description: 'the optimizer’s server, through the gateway (every call recorded)', pick: 'same-server' },
    { label: '$(edit) Another OpenAI-compatible server…', pick: 'other' },
    { label: 'The model the daemon serves', description: 'agl serve --model, or its --upstream', pick: { kind: 'served' } },
  );
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder: 'What the agent calls while its prompts are scored', ignoreFocusOut: true });
  if (!picked) return undefined;
  if (typeof picked.pick === 'object') return picked.pick;
  const remembered = last?.kind === 'upstream' ? last.model : optimizer.model;
  const asked =
    picked.pick === 'other'
      ? await askEndpoint(title, last?.kind === 'upstream' ? last.url : '', remembered)
      : await vscode.window
          .showInputBox({
            title: `${title}: the model to ask ${optimizer.url} for`,
            value: remembered,
            ignoreFocusOut: true,
            validateInput: (v) => (v.trim() ? null : 'a model name'),
          })
          .then((m) => (m === undefined ? undefined : { url: optimizer.url, model: m.trim() }));
  return asked && { kind: 'upstream', ...asked, keyEnv: optimizer.keyEnv };
}
